/**
 * What every command shares for output: raw stdout/stderr writes (`--json` must be exactly
 * one line, never decorated) and the exit-code error a handler raises after printing.
 */
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"

/** Exit code of a rejected request (workspace untouched). */
export const EXIT_REJECTED = 1
/** Exit code of a usage error (the request was never made). */
export const EXIT_USAGE = 2

/** A handler already printed its outcome; only the process exit code is left to set. */
export class CommandExit extends Schema.TaggedError<CommandExit>()("CommandExit", {
  exitCode: Schema.Number
}) {
  override readonly [Runtime.errorExitCode] = this.exitCode
  override readonly [Runtime.errorReported] = false
}

/** Writes to stdout as is. */
export const writeStdout = (text: string) => Effect.sync(() => process.stdout.write(text))
/** Writes to stderr as is. */
export const writeStderr = (text: string) => Effect.sync(() => process.stderr.write(text))

/**
 * The handler for a `UsageError`: message and help hint on stderr (never JSON: like a flag
 * error, it means the request was never made), exit 2.
 */
export const usageFailure = (command: string) => (error: { readonly message: string }) =>
  Effect.flatMap(
    writeStderr(`error: ${error.message}\nRun 'forkjoin ${command} --help' for usage.\n`),
    () => Effect.fail(new CommandExit({ exitCode: EXIT_USAGE }))
  )
