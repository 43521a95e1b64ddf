/**
 * The `forkjoin repair` command: its flags and help text, wired to the program in
 * `Repair.ts`. Exit 0 repaired (or nothing to do), 1 failed, 2 usage error.
 *
 * @since 0.1.0
 */
import { Command, Flag } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { reportFailure } from "./internal/errors.ts"
import { dbFlag, workspaceFlag } from "./internal/flags.ts"
import { writeStdout } from "./internal/output.ts"
import * as Repair from "./Repair.ts"

/**
 * `forkjoin repair --workspace DIR [--db FILE] [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const repair = Command.make(
  "repair",
  {
    workspace: workspaceFlag(),
    db: dbFlag,
    json: Flag.Boolean("json").pipe(
      Flag.withDescription("Print one JSON line: {\"ok\":true,\"outcomes\":[...]} or {\"ok\":false,\"error\":{...}}"),
      Flag.withDefault(false)
    )
  },
  Effect.fn("forkjoin.repair")(
    function*(input) {
      const report = yield* Repair.repair({ workspace: input.workspace, db: Option.getOrUndefined(input.db) })
      yield* writeStdout(input.json ? Repair.renderJson(report) : Repair.renderText(report))
    },
    (effect, input) => Effect.catch(effect, reportFailure("repair", input.json))
  )
).pipe(
  Command.withDescription(
    "Finish, undo or flag every change a crashed forkjoin process left half-done (SPEC §4.5): all files at " +
      "their new content → the record is completed; all at their old content → the intent is closed; a mix → " +
      "the old content is restored from the history's blobs; anything else → recorded as commit_state_uncertain " +
      "and left alone. Runs under the workspace lock. Exit 0 repaired (or nothing to do), 1 failed."
  ),
  Command.withShortDescription("Repair changes left half-done by a crash")
)
