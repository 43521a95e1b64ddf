/**
 * A child's own check (its task's `childVerify`): after an attempt exported its changeset, the
 * command runs in a throwaway view of the workspace with that child's changes (`CheckView`),
 * never in the workspace; the view is removed whatever the ending. The outcome and the
 * command's last lines go to the child's `childVerify.log` and to its result; anything but
 * `passed` fails the attempt (the caller exports nothing of it).
 *
 * Owns running the check and saying how it ended. Does not own the attempts (`Children`).
 *
 * @since 0.1.0
 */
import type { Changeset, ChildVerifyResult, VerifyCommand } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"
import { BlobStore } from "./BlobStore.ts"
import * as CheckView from "./CheckView.ts"
import * as Command from "./Command.ts"

/**
 * Where a child's check log goes: `<namespace>/childVerify.log` (the last attempt's).
 *
 * @category constructors
 * @since 0.1.0
 */
export const logFile = (namespace: string): string => path.join(namespace, "childVerify.log")

/** How a command's end reads in a child's result. */
const resultOf = (check: VerifyCommand, attempt: number, r: Command.CommandResult): ChildVerifyResult => {
  const output = [...r.tail]
  switch (r._tag) {
    case "passed":
      return { status: "passed", summary: "the child's check passed", attempt, output }
    case "failed":
      return { status: "failed", summary: `the child's check failed (${Command.describeEnd(r)}); its changes were not exported`, attempt, output }
    case "timed_out":
      return {
        status: "timed_out",
        summary: `the child's check timed out after ${r.timeoutMs} ms and was ended; raise childVerify.timeoutMs or make the check faster`,
        attempt,
        output
      }
    case "not_started":
      return {
        status: "not_started",
        summary: `the child's check '${check.command[0]}' could not start (${r.error.message}); install it or fix the task's childVerify.command`,
        attempt,
        output
      }
  }
}

/**
 * Writes the check's log into the child's `namespace` (best effort: the outcome does not depend
 * on it); a check that ran elsewhere (a cluster runner) is logged with this too.
 *
 * @category constructors
 * @since 0.1.0
 */
export const writeLog = (namespace: string, check: VerifyCommand, result: ChildVerifyResult) =>
  Effect.sync(() => {
    try {
      fs.mkdirSync(namespace, { recursive: true })
      fs.writeFileSync(logFile(namespace), [`$ ${check.command.join(" ")}`, ...result.output, `# ${result.summary}`].join("\n") + "\n")
    } catch {
      // A convenience; the result carries the same lines.
    }
  })

/**
 * Runs `check` against `root` with `changeset` applied, in a copy removed afterwards, after
 * attempt `attempt`; logs to the child's `namespace`. Never fails: a view that cannot be made
 * is a check that did not pass.
 *
 * @category constructors
 * @since 0.1.0
 */
export const run = (
  check: VerifyCommand,
  options: { readonly root: string; readonly changeset: Changeset; readonly namespace: string; readonly attempt: number }
): Effect.Effect<ChildVerifyResult, never, BlobStore> =>
  Effect.gen(function*() {
    const blobs = yield* BlobStore
    const result = yield* Effect.acquireUseRelease(
      CheckView.make(options.root, options.changeset, blobs).pipe(Effect.result),
      (view) =>
        Result.isSuccess(view)
          ? Effect.map(Command.run({ argv: check.command, cwd: view.success, timeoutMs: check.timeoutMs }), (r) => resultOf(check, options.attempt, r))
          : Effect.succeed<ChildVerifyResult>({
            status: view.failure.reason === "baseline_changed" ? "baseline_changed" : "not_started",
            summary: view.failure.reason === "baseline_changed"
              ? view.failure.detail
              : `the child's check did not run: ${view.failure.detail}`,
            attempt: options.attempt,
            output: []
          }),
      // Removed whatever the ending: passed, failed, or interrupted mid-run.
      (view) => (Result.isSuccess(view) ? CheckView.remove(view.success) : Effect.void)
    )
    yield* writeLog(options.namespace, check, result)
    return result
  })
