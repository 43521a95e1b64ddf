/**
 * The `forkjoin run` command: its argument, flags and help text, wired to the program in
 * `Run.ts` (loaded on demand). Exit 0 the run finished, 1 otherwise, 2 usage or plan error.
 *
 * @since 0.1.0
 */
import { ThreadId } from "@forkjoin/schema/Ids"
import { Argument, Command } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { command } from "./internal/command.ts"
import { jsonLineFlag, optionalText, switchFlag, threadFlag, workspaceFlags, workspaceInput } from "./internal/flags.ts"
import { CommandExit, writeStderr, writeStdout } from "./internal/output.ts"

/**
 * `forkjoin run PLAN.json --workspace DIR [--db FILE] [--thread ID] [--export-only | --cluster URL [--secret-file F] [--objects-host H]] [--json]`,
 * `forkjoin run --resume RUN_ID --workspace DIR [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const run = command(
  "run",
  {
    planFile: Argument.String("PLAN.json").pipe(
      Argument.withDescription("Plan file (schemaVersion 1): the tasks to run as children, and how to join them"),
      Argument.optional
    ),
    ...workspaceFlags(),
    resume: optionalText("resume", "RUN_ID", "Finish the join of a run a crash interrupted ('forkjoin status' lists them; the id whole or shortened); every child is applied at most once"),
    thread: threadFlag("ID", "The caller's thread; the run's thread is registered below it (default 'cli')"),
    json: jsonLineFlag(
      "{\"ok\",\"runId\",\"mergePlan\",\"results\",\"mergeExecution\":{\"status\",\"outcomes\"},\"conflicts\",\"finish\"} " +
        "(with --export-only: {\"ok\",\"runId\",\"results\"}), plus \"gate\" (the promotion gate's decision) when the plan has mutating tasks; both end with \"repairs\":[...] when a crash repair ran first"
    ),
    exportOnly: switchFlag("export-only", "Run the children and print their changesets without joining them; the workspace is not written"),
    cluster: optionalText("cluster", "URL", "Run the children on the runners of this cluster ('forkjoin runner --cluster URL'): postgres://... or sqlite:PATH; the join stays here (default: \"cluster\" in forkjoin.config.json; 'none' runs them here)"),
    secretFile: optionalText("secret-file", "FILE", "With --cluster: the cluster secret the runners share (default $FORKJOIN_CLUSTER_SECRET; none needed when every runner is on this machine)"),
    objectsHost: optionalText("objects-host", "H", "With --cluster: the address runners fetch the run's files from (default 127.0.0.1; another address needs a cluster secret)")
  },
  function*(input) {
    // Loaded on demand, like every command but apply/repair: start-up only pays for what runs.
    const Run = yield* Effect.promise(() => import("./Run.ts"))
    const result = yield* Run.run({
      planFile: Option.getOrUndefined(input.planFile),
      resume: Option.getOrUndefined(input.resume),
      ...workspaceInput(input),
      exportOnly: input.exportOnly,
      cluster: Option.match(input.cluster, {
        onNone: () => undefined,
        onSome: (url) => ({ url, secretFile: Option.getOrUndefined(input.secretFile), objectsHost: Option.getOrUndefined(input.objectsHost) })
      }),
      threadId: Option.getOrElse(input.thread, () => ThreadId.make("cli")),
      // Live progress only for a person at a terminal; --json and pipes stay quiet.
      progress: !input.json && process.stderr.isTTY === true ? (line: string) => writeStderr(`  ${line}\n`) : undefined,
      shortIds: !input.json
    }).pipe(
      // Ctrl-C: running children are interrupted and write nothing; a join stops between
      // children's transactions, like a crash, and stays resumable.
      Effect.onInterrupt(() =>
        writeStderr(
          "forkjoin run was interrupted: nothing more is written. If the join had started, 'forkjoin status' lists the " +
            "run and 'forkjoin run --resume RUN_ID' finishes it.\n"
        )
      )
    )
    yield* writeStdout(input.json ? Run.renderJson(result) : Run.renderText(result))
    const code = Run.exitCodeOf(result)
    if (code !== 0) return yield* new CommandExit({ exitCode: code })
  }
).pipe(
  Command.withDescription(
    "Run a plan's children and join them into the workspace. Mutating tasks stage their edits in an overlay " +
      "confined to their write scope and export a changeset; then each child is checked against the live files and " +
      "applied as its own transaction, in task order. Edits to different places of one file merge; overlapping edits " +
      "are held back as conflicts ('forkjoin conflicts', 'forkjoin resolve'). Artifacts go to " +
      "<workspace>/.forkjoin/runs/<run-id>/subagents/<task-id>/. Mutating tasks start only when the autonomy " +
      "level allows them: at safe when 'forkjoin gate' passes, at bold without evidence (a warning, kept with the " +
      "run); off and supervised allow read-only tasks only ('forkjoin config explain' shows the level and why). " +
      "With --cluster URL (or \"cluster\" in forkjoin.config.json) the children run on the runners of a cluster " +
      "('forkjoin runner') and the join stays here, as a durable workflow that 'forkjoin run --resume' finishes after a crash. " +
      "Exit 0 the run finished, 1 it did not (partial, failed, blocked by open conflicts, or refused by the gate), " +
      "2 usage, plan or configuration error.\n\n" +
      "Example plan (every key: 'forkjoin schema plan'): " +
      "{\"schemaVersion\":1,\"tasks\":[{\"id\":\"docs\",\"mode\":\"transactional_write\",\"writeScope\":[\"docs\"]," +
      "\"actions\":[{\"apply_patch\":{\"patch\":\"*** Begin Patch\\n*** Add File: docs/a.md\\n+hi\\n*** End Patch\"}},{\"finish\":{}}]}]}"
  ),
  Command.withShortDescription("Run a plan's children and join their changesets into the workspace")
)
