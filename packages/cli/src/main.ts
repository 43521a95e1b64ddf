/**
 * The `forkjoin` command line (SPEC §9): flag parsing with `effect/cli`, Node services, and
 * the process exit code. Exit 0 applied, 1 rejected (workspace untouched), 2 usage error.
 * Command logic lives in its own module (`Apply.ts`); this file only wires it to argv.
 *
 * @since 0.1.0
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Cause from "effect/Cause"
import { Argument, CliConfig, CliError, CliOutput, Command, Flag, GlobalFlag } from "effect/cli"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import { EngineError, toBody } from "@forkjoin/schema/EngineError"
import * as Apply from "./Apply.ts"
import { dbFlag, workspaceFlag } from "./internal/flags.ts"
import { CommandExit, EXIT_REJECTED, EXIT_USAGE, usageFailure, writeStderr, writeStdout } from "./internal/output.ts"
import { history } from "./HistoryCommand.ts"

// Inlined by scripts/build.mjs from the root package.json "version".
declare const __FORKJOIN_VERSION__: string
const VERSION = typeof __FORKJOIN_VERSION__ === "string" ? __FORKJOIN_VERSION__ : "0.0.0-dev"


// -------------------------------------------------------------------------------------
// apply
// -------------------------------------------------------------------------------------

const apply = Command.make(
  "apply",
  {
    patchFile: Argument.String("PATCH_FILE").pipe(
      Argument.withDescription("File holding the apply_patch text; '-' or omitted reads it from stdin"),
      Argument.optional
    ),
    workspace: workspaceFlag("Workspace root the patch's relative paths are resolved against (required)"),
    db: dbFlag,
    profile: Flag.Literals("profile", ["native", "codex"]).pipe(
      Flag.withMetavar("native|codex"),
      Flag.withDescription(
        "native (default): rejects ambiguous context, never replaces an existing file, keeps line endings, " +
          "BOM and final newline. codex: the same final state as Codex apply_patch (still all-or-nothing)"
      ),
      Flag.withDefault("native" as const)
    ),
    thread: Flag.String("thread").pipe(
      Flag.withMetavar("ID"),
      Flag.withDescription("Thread id recorded with the change (default 'cli')"),
      Flag.optional
    ),
    turn: Flag.String("turn").pipe(
      Flag.withMetavar("ID"),
      Flag.withDescription("Turn id recorded with the change (default 'cli')"),
      Flag.optional
    ),
    json: Flag.Boolean("json").pipe(
      Flag.withDescription(
        "Print exactly one JSON line on stdout: {\"ok\":true,\"record\":{...}} or {\"ok\":false,\"error\":{...}}"
      ),
      Flag.withDefault(false)
    ),
    preserveLineEndings: Flag.Boolean("preserve-line-endings").pipe(
      Flag.withDescription(
        "With --profile codex, keep CRLF files CRLF (Codex's opt-in mode). native always preserves line endings"
      ),
      Flag.withDefault(false)
    )
  },
  Effect.fn("forkjoin.apply")(function*(input) {
    const outcome = yield* Apply.readPatchText(Option.getOrUndefined(input.patchFile)).pipe(
      Effect.flatMap(Apply.decodePatch),
      Effect.flatMap((patchText) =>
        Apply.apply({
          patchText,
          workspace: input.workspace,
          db: Option.getOrUndefined(input.db),
          profile: input.profile,
          preserveLineEndings: input.preserveLineEndings,
          threadId: Option.getOrUndefined(input.thread),
          turnId: Option.getOrUndefined(input.turn)
        })
      ),
      Effect.catchTag("EngineError", (error) => Effect.succeed(error))
    )
    if (outcome instanceof EngineError) {
      yield* input.json ? writeStdout(Apply.renderJson(outcome)) : writeStderr(Apply.renderError(outcome))
      return yield* new CommandExit({ exitCode: EXIT_REJECTED })
    }
    yield* writeStdout(input.json ? Apply.renderJson(outcome) : Apply.renderSuccess(Apply.summaryOf(outcome)))
  }, Effect.catchTag("UsageError", usageFailure("apply")))
).pipe(
  Command.withDescription(
    "Apply one Codex apply_patch patch to a workspace through the native engine, all or nothing. The patch is " +
      "parsed, every target is resolved inside the workspace (symlinks leading outside it, .git/ and .forkjoin/ " +
      "are refused), the full result is planned in memory, the files are locked against other writers, the " +
      "intent is journaled, the files are replaced through fsynced temp files and renames, and one record is " +
      "written to the patch history. Grant: write + create directories, no overwrite. Exit 0 applied, 1 " +
      "rejected (workspace untouched), 2 usage error."
  ),
  Command.withShortDescription("Apply an apply_patch patch to a workspace, all or nothing"),
  Command.withExamples([
    { command: "forkjoin apply fix.patch --workspace .", description: "Apply fix.patch to the current directory" },
    {
      command: "cat fix.patch | forkjoin apply - --workspace repo --json",
      description: "Read the patch from stdin and print one JSON result line"
    }
  ])
)

// -------------------------------------------------------------------------------------
// repair
// -------------------------------------------------------------------------------------

const repair = Command.make(
  "repair",
  {
    workspace: workspaceFlag(),
    db: dbFlag,
    json: Flag.Boolean("json").pipe(
      Flag.withDescription("Print one JSON line: {\"ok\":true,\"outcomes\":[...]} or {\"ok\":false,\"error\":{...}}"),
      Flag.withDefault(false)
    )
  },
  Effect.fn("forkjoin.repair")(function*(input) {
    const outcome = yield* Apply.repair({ workspace: input.workspace, db: Option.getOrUndefined(input.db) }).pipe(
      Effect.catchTag("EngineError", (error) => Effect.succeed(error))
    )
    if (outcome instanceof EngineError) {
      yield* input.json
        ? writeStdout(JSON.stringify({ ok: false, error: toBody(outcome) }) + "\n")
        : writeStderr(Apply.renderError(outcome))
      return yield* new CommandExit({ exitCode: EXIT_REJECTED })
    }
    if (input.json) yield* writeStdout(JSON.stringify({ ok: true, outcomes: outcome.outcomes }) + "\n")
    else {
      yield* writeStdout(
        outcome.outcomes.length === 0
          ? "Nothing to repair: no open intents.\n"
          : outcome.outcomes.map((o) => `${o.action} ${o.transactionId}: ${o.message}\n`).join("")
      )
    }
  }, Effect.catchTag("UsageError", usageFailure("repair")))
).pipe(
  Command.withDescription(
    "Finish, undo or flag every change a crashed forkjoin process left half-done (SPEC §4.5): all files at " +
      "their new content → the record is completed; all at their old content → the intent is closed; a mix → " +
      "the old content is restored from the history's blobs; anything else → recorded as commit_state_uncertain " +
      "and left alone. Runs under the workspace lock. Exit 0 repaired (or nothing to do), 1 failed."
  ),
  Command.withShortDescription("Repair changes left half-done by a crash")
)

// -------------------------------------------------------------------------------------
// run
// -------------------------------------------------------------------------------------

const run = Command.make(
  "run",
  {
    planFile: Argument.String("PLAN.json").pipe(Argument.withDescription("Plan file (schemaVersion 1): the tasks to run as children")),
    workspace: workspaceFlag(),
    db: dbFlag,
    json: Flag.Boolean("json").pipe(
      Flag.withDescription("Print one JSON line: {\"runId\",\"results\":[{\"id\",\"status\",\"observations\",\"changeset\"?}]}"),
      Flag.withDefault(false)
    ),
    exportOnly: Flag.Boolean("export-only").pipe(
      Flag.withDescription("Run the children and print their changesets without joining them (required until the orchestrator issue)"),
      Flag.withDefault(false)
    )
  },
  Effect.fn("forkjoin.run")(function*(input) {
    // Loaded on demand, like every command but apply/repair: start-up only pays for what runs.
    const Run = yield* Effect.promise(() => import("./Run.ts"))
    const result = yield* Run.run({
      planFile: input.planFile,
      workspace: input.workspace,
      db: Option.getOrUndefined(input.db),
      exportOnly: input.exportOnly
    }).pipe(Effect.catchTag("RunFailed", (error) =>
      Effect.flatMap(writeStderr(`error: ${error.message}\n`), () => Effect.fail(new CommandExit({ exitCode: EXIT_REJECTED })))))
    yield* writeStdout(input.json ? Run.renderJson(result) : Run.renderText(result))
    const code = Run.exitCodeOf(result)
    if (code !== 0) return yield* new CommandExit({ exitCode: code })
  }, Effect.catchTag("UsageError", usageFailure("run")))
).pipe(
  Command.withDescription(
    "Run a plan's children (SPEC §5, §6.1-6.3): mutating tasks stage their edits in an overlay confined to their " +
      "write scope and export a changeset; read-only tasks only read. The shared workspace is never written. Each " +
      "child's trace and changeset go to <workspace>/.forkjoin/runs/<run-id>/subagents/<task-id>/. --export-only is " +
      "required until the join arrives. Exit 0 every child finished, 1 otherwise, 2 usage or plan error."
  ),
  Command.withShortDescription("Run a plan's children and export their changesets (--export-only)")
)

// -------------------------------------------------------------------------------------
// demo
// -------------------------------------------------------------------------------------

const demo = Command.make(
  "demo",
  {},
  () =>
    Console.log(
      "forkjoin demo is not available in this build yet.\n" +
        "It arrives with the orchestrator issue (\"Orchestrator & the transactional join\"): parallel children " +
        "staging changesets on an embedded sample workspace, joined transactionally by the native engine.\n" +
        "Today you can try 'forkjoin apply --help'."
    )
).pipe(
  Command.withDescription(
    "Run the main job on an embedded sample workspace. Not available yet: it arrives with the orchestrator " +
      "issue (\"Orchestrator & the transactional join\"); today it only prints that and exits 0."
  ),
  Command.withShortDescription("Sample fork/join run (arrives with the orchestrator issue)")
)

// -------------------------------------------------------------------------------------
// root
// -------------------------------------------------------------------------------------

const forkjoin = Command.make("forkjoin").pipe(
  Command.withDescription(
    "Parallel AI coding agents that edit one workspace safely: one native patch engine applies every change " +
      "all or nothing."
  ),
  Command.withSubcommands([apply, repair, history, run, demo])
)

// Usage errors go to stderr, so `--json` consumers never see help text on stdout.
const presenter = CliOutput.layerPresenter({
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? Effect.gen(function*() {
        const formatter = yield* CliOutput.Formatter
        const lines = event.errors.map((e) => `error: ${formatter.formatCliError(e)}`)
        yield* writeStderr(`${lines.join("\n")}\nRun '${event.commandPath.join(" ")} --help' for usage.\n`)
      })
      : CliOutput.defaultPresenter.present(event)
})

// Built-ins kept: --help, --version, --completions. Dropped: --log-level (forkjoin logs nothing
// yet) and --wizard (interactive prompts do not fit a tool driven by agents and scripts).
const cliConfig = CliConfig.layer({ builtIns: [GlobalFlag.Help, GlobalFlag.Version, GlobalFlag.Completions] })

// effect/cli fails with `ShowHelp` (exit code 1 by default) on every parse error; SPEC §9
// reserves 1 for rejected patches, so invocation errors become 2.
const exitCodeOf = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit)) return 0
  if (Cause.hasInterruptsOnly(exit.cause)) return 130
  const error = Cause.squash(exit.cause)
  if (CliError.isCliError(error) && error._tag !== "UserError") {
    return error._tag === "ShowHelp" && error.errors.length === 0 ? 0 : EXIT_USAGE
  }
  return Runtime.getErrorExitCode(error)
}

Command.run(forkjoin, { version: VERSION }).pipe(
  Effect.provide([presenter, cliConfig]),
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain({
    // Set `process.exitCode` instead of letting runMain call `process.exit`, which can cut off
    // stdout still draining into a pipe.
    teardown: (exit, onExit) => {
      process.exitCode = exitCodeOf(exit)
      onExit(0)
    }
  })
)
