/**
 * The `forkjoin repair` command: its flags and help text, wired to the program in
 * `Repair.ts`. Exit 0 repaired (or nothing to do), 1 failed (or an unknown `--ack` id), 2
 * usage error.
 *
 * @since 0.1.0
 */
import { Command } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { command } from "./internal/command.ts"
import { jsonLineFlag, optionalText, switchFlag, workspaceFlags, workspaceInput } from "./internal/flags.ts"
import { writeStdout } from "./internal/output.ts"

/**
 * `forkjoin repair --workspace DIR [--db FILE] [--ack ID] [--reset-history] [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const repair = command(
  "repair",
  {
    ...workspaceFlags(),
    ack: optionalText("ack", "ID",
      "Acknowledge an uncertain outcome (its record or transaction id, as listed) once its files were checked; " +
        "it is then no longer listed"
    ),
    resetHistory: switchFlag("reset-history",
      "Start a new history deliberately when the workspace's history database is missing, emptied or another " +
        "one (which forkjoin otherwise refuses with history_missing); the reset is recorded and shown by status"
    ),
    json: jsonLineFlag(
      "{\"ok\":true,\"outcomes\":[...]} plus \"uncertain\":[...], \"reset\" and \"acknowledged\" " +
        "when there are any, or {\"ok\":false,\"error\":{...}}"
    )
  },
  function*(input) {
    const Repair = yield* Effect.promise(() => import("./Repair.ts"))
    const result = yield* Repair.repair({
      ...workspaceInput(input),
      ack: Option.getOrUndefined(input.ack),
      resetHistory: input.resetHistory
    })
    yield* writeStdout(input.json ? Repair.renderJson(result) : Repair.renderText(result))
  }
).pipe(
  Command.withDescription(
    "Finish, undo or flag every change a crashed forkjoin process left half-done: all files at their new " +
      "content → the record is completed; all at their old content → the intent is closed; a mix → the old " +
      "content is restored from the history's blobs; some files edited since the crash → every other file is " +
      "restored to its old content, the edited ones are left alone and named in a commit_state_uncertain record. " +
      "Uncertain outcomes stay listed (here and by 'forkjoin status') until acknowledged with --ack. Runs under " +
      "the workspace lock. Every other command runs the same repair when it opens the workspace and says what it " +
      "did on stderr. Exit 0 repaired (or nothing to do), 1 failed."
  ),
  Command.withShortDescription("Repair changes left half-done by a crash"),
  Command.withExamples([
    { command: "forkjoin repair --workspace .", description: "Repair, then list uncertain outcomes still to check" },
    {
      command: "forkjoin repair --workspace . --ack rec-1234",
      description: "Acknowledge an uncertain outcome after checking the files it names"
    },
    {
      command: "forkjoin repair --workspace . --reset-history",
      description: "Start a new history after history.db was lost (when it cannot be restored from a backup)"
    }
  ])
)
