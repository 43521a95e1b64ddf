/**
 * The `forkjoin probe` command: flags and help, wired to `Probe.ts`.
 *
 * @since 0.1.0
 */
import { Command } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Colour from "./internal/colour.ts"
import { command } from "./internal/command.ts"
import { jsonLineFlag, optionalText, workspaceFlagOrCurrent } from "./internal/flags.ts"
import { CommandExit, EXIT_REJECTED, writeStderr, writeStdout } from "./internal/output.ts"

/**
 * `forkjoin probe [--workspace DIR] [--out FILE] [--sign KEYFILE] [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const probe = command(
  "probe",
  {
    workspace: workspaceFlagOrCurrent("The workspace whose filesystem is probed; its files are never touched"),
    out: optionalText("out", "FILE", "Where to write the evidence (default <workspace>/.forkjoin/evidence/merge-probe.json, where 'forkjoin gate' looks)"),
    sign: optionalText("sign", "KEYFILE", "Sign the evidence (every field, createdAt included) with this Ed25519 private key (from 'forkjoin keygen')"),
    json: jsonLineFlag("{\"ok\",\"file\",\"evidence\"}")
  },
  function*(input) {
    const Probe = yield* Effect.promise(() => import("./Probe.ts"))
    const live = !input.json && process.stderr.isTTY === true
    const palette = input.json ? Colour.plain : Colour.forStdout()
    let done = 0
    const report = yield* Probe.probe({
      workspace: input.workspace,
      out: Option.getOrUndefined(input.out),
      sign: Option.getOrUndefined(input.sign),
      // The crash scenarios start this same CLI in child processes.
      forkjoin: [process.execPath, process.argv[1] ?? "forkjoin"],
      onScenario: live
        ? (s) => writeStderr(`  [${++done}] ${s.id}: ${s.status}\n`)
        : undefined
    })
    yield* writeStdout(input.json ? Probe.renderJson(report) : Probe.renderText(report, palette))
    if (report.evidence.status !== "passed") return yield* new CommandExit({ exitCode: EXIT_REJECTED })
  }
).pipe(
  Command.withDescription(
    "Run the deterministic merge probe: scripted parent and children (no model) through the real orchestrator, " +
      "engine and history, in temporary workspaces under <workspace>/.forkjoin/probe/ on the workspace's own " +
      "filesystem (removed afterwards; your files are never touched, whatever the autonomy level). It checks " +
      "disjoint and same-file merges, held conflicts, baseline drift, tampered changesets, mid-apply failure, " +
      "rollback, a crash after each engine stage and completion order, and records the filesystem's behaviour. " +
      "The evidence (same digest on every run of one build on one kind of filesystem) is what 'forkjoin gate' " +
      "reads. Exit 0 every scenario passed, 1 one failed (the report names the failed check), 2 usage error."
  ),
  Command.withShortDescription("Prove the merge machinery on this machine and write evidence for the gate")
)
