/**
 * What every command shares for output: raw stdout/stderr writes (`--json` must be exactly
 * one line, never decorated) and the exit-code error a handler raises after printing. What a
 * failure prints is decided in `errors.ts`.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"

/**
 * Exit code of a rejected request (workspace untouched).
 *
 * @category models
 * @since 0.1.0
 */
export const EXIT_REJECTED = 1

/**
 * Exit code of a usage error (the request was never made).
 *
 * @category models
 * @since 0.1.0
 */
export const EXIT_USAGE = 2

/**
 * A handler already printed its outcome; only the process exit code is left to set.
 *
 * @category errors
 * @since 0.1.0
 */
export class CommandExit extends Schema.TaggedError<CommandExit>()("CommandExit", {
  exitCode: Schema.Number
}) {
  override readonly [Runtime.errorExitCode] = this.exitCode
  override readonly [Runtime.errorReported] = false
}

/**
 * Writes to stdout as is.
 *
 * @category constructors
 * @since 0.1.0
 */
export const writeStdout = (text: string) => Effect.sync(() => process.stdout.write(text))

/**
 * Writes to stderr as is.
 *
 * @category constructors
 * @since 0.1.0
 */
export const writeStderr = (text: string) => Effect.sync(() => process.stderr.write(text))
