/**
 * Which threads, transactions and conflicts a caller may act on: its own thread and the threads
 * registered below it (`HistoryStore.registerThread`), nothing else. The rule is the history
 * views' own, asked of them, never a second copy of it. Every untrusted caller (a gateway
 * token, an MCP client, the parent model of `forkjoin agent`) is scoped by it before a rollback
 * or a resolution, and treats what it does not see exactly as what does not exist, so a refusal
 * never tells another thread's ids apart from unknown ones.
 *
 * Owns the scoping questions. Does not own the views (`@forkjoin/history/Views`) nor what a
 * rollback or resolution does (`Rollback`, `Conflicts`).
 *
 * @since 0.1.0
 */
import { Engine } from "@forkjoin/engine/Engine"
import { HistoryRecords, type StoreError } from "@forkjoin/history/HistoryStore"
import { MergeStore } from "@forkjoin/history/MergeStore"
import { HistoryViews } from "@forkjoin/history/Views"
import { type ConflictRecord, ownerOf } from "@forkjoin/schema/Conflict"
import type { ConflictId, ThreadId, TransactionId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { childThread } from "./internal/model.ts"

/**
 * Whether `caller` sees `thread` (itself or a thread registered below it). Asks the timeline
 * view for one item; a refusal of the view is `false`, a store failure stays a failure.
 *
 * @category predicates
 * @since 0.1.0
 */
export const sees = (caller: string, thread: string): Effect.Effect<boolean, StoreError, HistoryViews> =>
  caller === thread
    ? Effect.succeed(true)
    : HistoryViews.use((v) => v.timeline({ caller, thread, limit: 1, maxBytes: 1024 })).pipe(
      Effect.as(true),
      Effect.catchTag("ViewError", () => Effect.succeed(false))
    )

/**
 * The thread a held conflict belongs to: its child's thread in the run, or for a rollback's,
 * the thread that asked for the rollback.
 *
 * @category constructors
 * @since 0.1.0
 */
export const conflictThread = (conflict: ConflictRecord): ThreadId => {
  const owner = ownerOf(conflict)
  return owner.kind === "rollback" ? owner.threadId : childThread(owner.runId, owner.childId)
}

/**
 * Whether `caller` may act on the transaction: it has records in this workspace and `caller`
 * sees the thread of every one of them (`false` for an unknown transaction too).
 *
 * @category predicates
 * @since 0.1.0
 */
export const seesTransaction = (
  caller: string,
  transactionId: TransactionId
): Effect.Effect<boolean, StoreError, Engine | HistoryRecords | HistoryViews> =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const history = yield* HistoryRecords
    const records = yield* history.recordsByTransaction(engine.environmentId, transactionId)
    if (records.length === 0) return false
    for (const r of records) if (!(yield* sees(caller, r.threadId))) return false
    return true
  })

/**
 * The conflict when it exists and `caller` sees its child's thread, else none (an unknown
 * conflict and another thread's look the same).
 *
 * @category constructors
 * @since 0.1.0
 */
export const visibleConflict = (
  caller: string,
  conflictId: ConflictId
): Effect.Effect<Option.Option<ConflictRecord>, StoreError, MergeStore | HistoryViews> =>
  Effect.gen(function*() {
    const store = yield* MergeStore
    const found = yield* store.getConflict(conflictId)
    if (Option.isNone(found)) return found
    return (yield* sees(caller, conflictThread(found.value))) ? found : Option.none()
  })
