/**
 * The `forkjoin rollback` command: its argument, flags and help text, wired to `Rollback.ts`.
 *
 * @since 0.1.0
 */
import { ThreadId } from "@forkjoin/schema/Ids"
import { Argument, Command } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { command } from "./internal/command.ts"
import { jsonLineFlag, switchFlag, threadFlag, workspaceFlags, workspaceInput } from "./internal/flags.ts"
import { writeStdout } from "./internal/output.ts"

/**
 * `forkjoin rollback TARGET --workspace DIR [--db FILE] [--thread ID] [--strict] [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const rollback = command(
  "rollback",
  {
    transactionId: Argument.String("TARGET").pipe(
      Argument.withDescription(
        "What to undo: a transaction id (subagent_merge:<run-id>/<task-id>, patch:<uuid>, ...), a record id (its " +
          "transaction) or #N (the record 'forkjoin history timeline' numbers N); ids whole or shortened as text output shows them"
      )
    ),
    ...workspaceFlags(),
    thread: threadFlag("ID", "Thread recorded with the rollback (default 'cli')"),
    strict: switchFlag("strict", "Refuse with rollback_drift, nothing written, when a path changed after the transaction, instead of merging"),
    json: jsonLineFlag("{\"ok\":true,\"record\":{...},\"mergedPaths\":[...]} (plus \"repairs\":[...] when a crash repair ran first) or {\"ok\":false,\"error\":{\"code\",\"paths\",\"message\"}}")
  },
  function*(input) {
    const Rollback = yield* Effect.promise(() => import("./Rollback.ts"))
    const result = yield* Rollback.rollback({
      transactionId: input.transactionId,
      ...workspaceInput(input),
      threadId: Option.getOrElse(input.thread, () => ThreadId.make("cli")),
      strict: input.strict
    })
    yield* writeStdout(input.json ? Rollback.renderJson(result) : Rollback.renderText(result))
  }
).pipe(
  Command.withDescription(
    "Undo exactly one transaction as a new one (rollback:<id>), restoring each path's earlier content through " +
      "the engine. Name it by transaction id, by record id or by #N, the commit ordinal 'forkjoin history timeline' shows; " +
      "an id may be shortened to a unique prefix of its hex part (an ambiguous one is refused with ambiguous_id, listing " +
      "the candidates). A path changed after the transaction is merged with the later changes; where that merge is not " +
      "clean nothing is written and each such path is held as a conflict rollback:<transaction-id>:<path> (rollback_conflicted): " +
      "resolve each with 'forkjoin resolve', and the whole rollback is applied when the last is resolved. With --strict " +
      "any changed path refuses with rollback_drift instead, naming the paths and the later transaction. Exit 0 rolled " +
      "back, 1 refused or held, 2 usage error."
  ),
  Command.withShortDescription("Undo one transaction (a child's merge, a patch, a resolution)")
)
