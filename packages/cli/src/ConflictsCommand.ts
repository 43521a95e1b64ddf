/**
 * The `forkjoin conflicts` command: flags and help, wired to `Conflicts.ts`.
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
 * `forkjoin conflicts [--open] [--run ID] --workspace DIR [--db FILE] [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const conflicts = command(
  "conflicts",
  {
    open: switchFlag("open", "Only the open conflicts, the ones still to resolve (default: open and resolved)"),
    run: optionalText("run", "RUN_ID", "Only the conflicts of this run (its id whole or shortened, as 'forkjoin runs' shows it)"),
    ...workspaceFlags(),
    json: jsonLineFlag(
      "{\"ok\":true,\"conflicts\":[{\"conflictId\",\"runId\",\"childId\",\"path\",\"status\",\"reason\",\"text\"}]} " +
        "(plus \"repairs\":[...] when a crash repair ran first)"
    )
  },
  function*(input) {
    const Conflicts = yield* Effect.promise(() => import("./Conflicts.ts"))
    const result = yield* Conflicts.list({
      ...workspaceInput(input),
      run: Option.getOrUndefined(input.run),
      open: input.open
    })
    yield* writeStdout(input.json ? Conflicts.renderListJson(result) : Conflicts.renderListText(result))
  }
).pipe(
  Command.withDescription(
    "List the conflicts joins held back, open and resolved (--open: only the open ones): each child's change that " +
      "overlaps an earlier sibling's, with the rendered conflict text of the open ones and the command that resolves " +
      "them. Exit 0, 1 on a failure, 2 usage error."
  ),
  Command.withShortDescription("List the conflicts joins held back")
)
