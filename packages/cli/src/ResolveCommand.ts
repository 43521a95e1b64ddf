/**
 * The `forkjoin resolve` command: flags and help, wired to `Conflicts.ts`.
 *
 * @since 0.1.0
 */
import { Argument, Command } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { command } from "./internal/command.ts"
import { jsonLineFlag, optionalText, switchFlag, workspaceFlags, workspaceInput } from "./internal/flags.ts"
import { writeStdout } from "./internal/output.ts"

/**
 * `forkjoin resolve CONFLICT_ID --apply|--discard|--content FILE --workspace DIR [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolve = command(
  "resolve",
  {
    conflictId: Argument.String("CONFLICT_ID").pipe(Argument.withDescription("The conflict, as 'forkjoin conflicts' lists it (<run-id>/<task-id>:<path>, or a held rollback's rollback:<transaction-id>:<path>; ids whole or shortened)")),
    apply: switchFlag("apply", "Take the child's side of the conflicting lines onto the file as it is now (a binary, deleted, added or moved file: the child's whole version, only if the file is still what the join saw)"),
    discard: switchFlag("discard", "Keep the live file; drop the child's change to this path"),
    content: optionalText("content", "FILE", "Write FILE's bytes as the merged result, over the file as it is now"),
    ...workspaceFlags(),
    json: jsonLineFlag("{\"ok\":true,\"transactionId\"?,\"outcome\"?,\"rollbackOf\"?,\"openConflicts\"?,\"repairs\"?} (rollbackOf and openConflicts for a rollback's conflict; repairs when a crash repair ran first) or {\"ok\":false,\"error\":{...}}")
  },
  function*(input) {
    const Conflicts = yield* Effect.promise(() => import("./Conflicts.ts"))
    const r = yield* Conflicts.resolve({
      conflictId: input.conflictId,
      ...workspaceInput(input),
      apply: input.apply,
      discard: input.discard,
      content: Option.getOrUndefined(input.content)
    })
    yield* writeStdout(input.json ? Conflicts.renderResolveJson(r) : Conflicts.renderResolveText(r))
  }
).pipe(
  Command.withDescription(
    "Close one conflict through the engine (transaction conflict_resolution:<conflict-id>): --apply takes the " +
      "child's side of the conflicting lines (other changes to the file stay), --discard keeps the live file, --content FILE writes your merged text. " +
      "A conflict at a moved file's destination resolves as the move (the source goes away). When a child's last " +
      "conflict closes, the rest of its changes are applied (or, if every conflict was discarded, the child is " +
      "dropped). Of two resolutions of one conflict at once, the loser writes nothing (conflict_already_resolved); " +
      "a resolve killed part-way is finished by 'forkjoin run --resume RUN_ID'. A held rollback's conflict writes nothing until its last one is resolved (--apply then takes the " +
      "earlier side of the conflicting lines); the last applies the whole rollback as rollback:<transaction-id>. " +
      "Exit 0 resolved, 1 refused, 2 usage error."
  ),
  Command.withShortDescription("Resolve a conflict: --apply, --discard or --content FILE")
)
