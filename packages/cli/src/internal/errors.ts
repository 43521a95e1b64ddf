/**
 * The CLI's failures and the one place that turns any of them into what the process prints
 * and its exit code: usage errors (exit 2; the `--json` line of `usage.ts`), engine rejections (exit 1, the
 * `--json` error body or `error[code] (stage name)` text), history command refusals and failed
 * runs. It also maps the lower layers' errors (`StoreError`, `ViewError`, `IngestError`,
 * `GitExportError`) onto those, keeping each one as the `cause`, and remembers what the startup
 * repair announced so a failure's `--json` line carries it too (`noteRepairs`).
 *
 * It does not own the command programs nor the writing of output (`output.ts`).
 *
 * @since 0.1.0
 */
import type { AutonomyError } from "@forkjoin/autonomy/AutonomyError"
import type { RepairOutcome } from "@forkjoin/engine/Engine"
import { fromStoreError } from "@forkjoin/engine/HistoryFailure"
import type { GitExportError } from "@forkjoin/history/GitExport"
import type { StoreError } from "@forkjoin/history/HistoryStore"
import type { IngestError } from "@forkjoin/history/ProviderAggregates"
import type { ViewError } from "@forkjoin/history/ViewError"
import type { OrchestratorError } from "@forkjoin/orchestrator/OrchestratorError"
import { type EngineError, type EngineErrorBody, stageNameOf, toBody } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Cause from "effect/Cause"
import { CliError } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as Colour from "./colour.ts"
import { CommandExit, EXIT_REJECTED, EXIT_USAGE, writeStderr, writeStdout } from "./output.ts"
import { usageErrorLine } from "./usage.ts"

// -------------------------------------------------------------------------------------
// errors
// -------------------------------------------------------------------------------------

/**
 * An invocation problem (unreadable patch, plan or event file, missing workspace): the CLI
 * exits 2 and the request was never made.
 *
 * @category errors
 * @since 0.1.0
 */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/**
 * A history command that could not answer: a stable snake_case `code` and a message that
 * says what to do. The CLI exits 1.
 *
 * @category errors
 * @since 0.1.0
 */
export class HistoryCommandError extends Schema.TaggedError<HistoryCommandError>()("HistoryCommandError", {
  code: Schema.String,
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/**
 * A run that could not complete (engine start, artifact or blob I/O): exit 1.
 *
 * @category errors
 * @since 0.1.0
 */
export class RunFailed extends Schema.TaggedError<RunFailed>()("RunFailed", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/**
 * Every failure a command reports.
 *
 * @category models
 * @since 0.1.0
 */
export type CommandFailure = UsageError | EngineError | HistoryCommandError | RunFailed | OrchestratorError | AutonomyError

// A bad configuration, environment variable or key stops a command before it starts, like a
// usage error (exit 2); the others (evidence that cannot be written, ...) are failures (exit 1).
const STARTUP_CODES: ReadonlySet<AutonomyError["code"]> = new Set(["config_invalid", "env_invalid", "key_invalid", "key_exists"])

// -------------------------------------------------------------------------------------
// mapping lower-layer errors
// -------------------------------------------------------------------------------------

/**
 * A failure to open the history database `db`: busy or corrupt is `history_unavailable`,
 * anything else `commit_failed`, both at the persist stage, the store error kept as cause.
 *
 * @category error handling
 * @since 0.1.0
 */
export const fromHistoryOpen = (e: StoreError, db: string): EngineError =>
  fromStoreError(e, Stage.persist, [], `cannot open the history database ${db}`)

const VIEW_CODES: Record<ViewError["reason"], string> = {
  NotVisible: "not_visible",
  NotFound: "not_found",
  PathRefused: "path_refused",
  InvalidCursor: "invalid_cursor",
  InvalidRequest: "invalid_request"
}

const INGEST_CODES: Record<IngestError["reason"], string> = {
  Malformed: "malformed_event",
  PathRefused: "path_refused",
  PathDenied: "path_denied_by_policy",
  Conflict: "event_id_conflict",
  NotFound: "not_found",
  NotAggregate: "not_an_aggregate"
}

/**
 * Maps what a history command met to its `HistoryCommandError`: view and ingestion refusals
 * by reason, git failures as `git_export_failed`, a busy or corrupt database as
 * `history_unavailable` and any other store failure as `store_failed` (`what` says whether
 * the database was being read or used).
 *
 * @category error handling
 * @since 0.1.0
 */
export const toHistoryCommandError = (what: "read" | "used") =>
(
  e: ViewError | IngestError | GitExportError | StoreError | HistoryCommandError
): HistoryCommandError => {
  switch (e._tag) {
    case "HistoryCommandError":
      return e
    case "ViewError":
      return new HistoryCommandError({ code: VIEW_CODES[e.reason], message: e.detail, cause: e })
    case "IngestError":
      return new HistoryCommandError({ code: INGEST_CODES[e.reason], message: e.detail, cause: e })
    case "GitExportError":
      return new HistoryCommandError({ code: "git_export_failed", message: e.message, cause: e })
    case "StoreError": {
      const prefix = `the history database could not be ${what}`
      // The engine's mapping decides which store failures mean "unavailable"; the history
      // commands have no stages, so only its code and message are used.
      const engine = fromStoreError(e, Stage.persist, [], prefix)
      return engine.code === "history_unavailable"
        ? new HistoryCommandError({ code: engine.code, message: engine.message, cause: e })
        : new HistoryCommandError({ code: "store_failed", message: `${prefix}: ${e.message}`, cause: e })
    }
  }
}

// -------------------------------------------------------------------------------------
// repairs announced before a failure
// -------------------------------------------------------------------------------------

// What this process's startup repair announced on stderr. A command fails outside the scope of
// the engine that ran the repair, so the failure handler cannot ask the engine; one CLI process
// runs one command, so a module value is enough. `reportFailure` takes it (once).
let announced: ReadonlyArray<RepairOutcome> = []

/**
 * Remembers the outcomes the startup repair just announced (none replaces any earlier ones), for
 * the `--json` line of a failure that follows. `announceRepairs` calls it.
 *
 * @category error handling
 * @since 0.1.0
 */
export const noteRepairs = (outcomes: ReadonlyArray<RepairOutcome>): Effect.Effect<void> =>
  Effect.sync(() => {
    announced = outcomes
  })

/** The announced outcomes, forgotten once taken so a later failure in the same process has none. */
const takeRepairs: Effect.Effect<ReadonlyArray<RepairOutcome>> = Effect.sync(() => {
  const outcomes = announced
  announced = []
  return outcomes
})

/**
 * The `repairs` member of a `--json` line: present only when a repair ran, so the line of an
 * ordinary call stays as it was.
 *
 * @category combinators
 * @since 0.1.0
 */
export const repairsMember = (
  repairs: ReadonlyArray<RepairOutcome> | undefined
): { readonly repairs?: ReadonlyArray<RepairOutcome> } => repairs === undefined || repairs.length === 0 ? {} : { repairs }

// -------------------------------------------------------------------------------------
// rendering
// -------------------------------------------------------------------------------------

/**
 * Human rejection text for stderr: `error[<code>] (stage <name>): <message>` (the stage's
 * name, `resolve`, not its number) then the paths and any details a model can act on;
 * `error[<code>]` in red with a colour `palette`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderEngineError = (error: EngineErrorBody, palette: Colour.Palette = Colour.plain): string => {
  const lines = [
    `${palette.red(`error[${error.code}]`)} (stage ${error.stageName ?? stageNameOf(error.stage)}): ${error.message}`
  ]
  for (const p of error.paths) lines.push(`  path: ${p}`)
  if (error.line !== undefined) lines.push(`  patch line: ${error.line}`)
  if (error.candidates !== undefined && error.candidates.length > 0) {
    lines.push(`  candidate lines: ${error.candidates.join(", ")}`)
  }
  return lines.join("\n") + "\n"
}

/**
 * What the process does with a failure: its exit code, the text for stdout (only ever the
 * one `--json` line) and for stderr.
 *
 * @category models
 * @since 0.1.0
 */
export interface FailureOutput {
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
}

/**
 * The output of `error` raised by `forkjoin <command>`. With `--json` a usage error is the
 * `usage_invalid` line a flag error also gets (exit 2); a failed run prints nothing on stdout,
 * its `--json` line is the run result only. A `--json` line carries `repairs` when
 * any are given (the startup repair ran first). `palette` colours the stderr text's `error`
 * label (default none).
 *
 * @category combinators
 * @since 0.1.0
 */
export const failureOutput = (
  error: CommandFailure,
  options: {
    readonly command: string
    readonly json: boolean
    readonly palette?: Colour.Palette
    readonly repairs?: ReadonlyArray<RepairOutcome>
  }
): FailureOutput => {
  const red = (options.palette ?? Colour.plain).red
  const line = (errorBody: unknown): string =>
    JSON.stringify({ ok: false, error: errorBody, ...repairsMember(options.repairs) }) + "\n"
  switch (error._tag) {
    case "UsageError":
      return options.json
        ? { exitCode: EXIT_USAGE, stdout: usageErrorLine({ command: `forkjoin ${options.command}`, messages: [error.message] }), stderr: "" }
        : {
          exitCode: EXIT_USAGE,
          stdout: "",
          stderr: `${red("error")}: ${error.message}\nRun 'forkjoin ${options.command} --help' for usage.\n`
        }
    case "EngineError":
      return options.json
        ? { exitCode: EXIT_REJECTED, stdout: line(toBody(error)), stderr: "" }
        : { exitCode: EXIT_REJECTED, stdout: "", stderr: renderEngineError(error, options.palette) }
    case "HistoryCommandError":
      return options.json
        ? { exitCode: EXIT_REJECTED, stdout: line({ code: error.code, message: error.message }), stderr: "" }
        : { exitCode: EXIT_REJECTED, stdout: "", stderr: `${red(`error[${error.code}]`)}: ${error.message}\n` }
    case "RunFailed":
      return { exitCode: EXIT_REJECTED, stdout: "", stderr: `${red("error")}: ${error.message}\n` }
    case "AutonomyError": {
      const exitCode = STARTUP_CODES.has(error.code) ? EXIT_USAGE : EXIT_REJECTED
      return options.json
        ? { exitCode, stdout: line({ code: error.code, paths: error.paths, message: error.message }), stderr: "" }
        : {
          exitCode,
          stdout: "",
          stderr: [`${red(`error[${error.code}]`)}: ${error.message}`, ...error.paths.map((p) => `  path: ${p}`)].join("\n") + "\n"
        }
    }
    case "OrchestratorError": {
      const body = {
        code: error.code,
        paths: error.paths,
        message: error.message,
        ...(error.laterTransactionId === undefined ? {} : { laterTransactionId: error.laterTransactionId }),
        ...(error.conflictIds === undefined ? {} : { conflictIds: error.conflictIds })
      }
      return options.json
        ? { exitCode: EXIT_REJECTED, stdout: line(body), stderr: "" }
        : {
          exitCode: EXIT_REJECTED,
          stdout: "",
          stderr: [`${red(`error[${error.code}]`)}: ${error.message}`, ...error.paths.map((p) => `  path: ${p}`)].join("\n") + "\n"
        }
    }
  }
}

/**
 * Prints a command's failure, with what the startup repair announced first (`noteRepairs`) in
 * its `--json` line, and ends it with the failure's exit code.
 *
 * @category error handling
 * @since 0.1.0
 */
export const reportFailure = (command: string, json: boolean) => (error: CommandFailure): Effect.Effect<never, CommandExit> =>
  Effect.gen(function*() {
    // Colour only for a person reading stderr at a terminal, never with --json.
    const repairs = yield* takeRepairs
    const output = failureOutput(error, { command, json, palette: json ? Colour.plain : Colour.forStderr(), repairs })
    if (output.stdout !== "") yield* writeStdout(output.stdout)
    if (output.stderr !== "") yield* writeStderr(output.stderr)
    return yield* new CommandExit({ exitCode: output.exitCode })
  })

// -------------------------------------------------------------------------------------
// flag errors and the process exit code
// -------------------------------------------------------------------------------------

/**
 * The process exit code of a finished CLI run. effect/cli fails with `ShowHelp` (exit code 1
 * by default) on every parse error; SPEC §9 reserves 1 for rejected requests, so invocation
 * errors become 2. An interrupted run is 130.
 *
 * @category error handling
 * @since 0.1.0
 */
export const processExitCode = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit)) return 0
  if (Cause.hasInterruptsOnly(exit.cause)) return 130
  const error = Cause.squash(exit.cause)
  if (CliError.isCliError(error) && error._tag !== "UserError") {
    return error._tag === "ShowHelp" && error.errors.length === 0 ? 0 : EXIT_USAGE
  }
  return Runtime.getErrorExitCode(error)
}
