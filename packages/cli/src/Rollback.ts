/**
 * `forkjoin rollback TRANSACTION_ID`: undoes one transaction (a child's merge, a patch, a
 * conflict resolution) through the engine, refusing with `rollback_drift` when a path changed
 * since; what the startup repair of its engine did is said first, on stderr and in `--json`.
 * The flags are in `RollbackCommand.ts`.
 *
 * @since 0.1.0
 */
import type { RepairOutcome } from "@forkjoin/engine/Engine"
import * as OrchestratorRollback from "@forkjoin/orchestrator/Rollback"
import { type ThreadId, TransactionId } from "@forkjoin/schema/Ids"
import type { PatchHistoryRecord } from "@forkjoin/schema/PatchHistoryRecord"
import { PatchHistoryRecord as RecordSchema } from "@forkjoin/schema/PatchHistoryRecord"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { UsageError } from "./internal/errors.ts"
import { orchestratorLayer } from "./internal/orchestratorLayer.ts"
import { historyDbOf, resolveWorkspace } from "./internal/workspace.ts"
import { repairsField, withRepairs } from "./Repair.ts"

/**
 * One `rollback` invocation, after flag parsing.
 *
 * @category models
 * @since 0.1.0
 */
export interface RollbackRequest {
  readonly transactionId: string
  readonly workspace: string
  readonly db?: string | undefined
  readonly threadId: ThreadId
}

/**
 * A rollback: its record, and what the startup repair did first (already on stderr).
 *
 * @category models
 * @since 0.1.0
 */
export interface RollbackResult {
  readonly record: PatchHistoryRecord
  readonly repairs: ReadonlyArray<RepairOutcome>
}

/**
 * Rolls the transaction back and returns the rollback's record.
 *
 * @category constructors
 * @since 0.1.0
 */
export const rollback = Effect.fn("Rollback.rollback")(function*(request: RollbackRequest) {
  const transactionId = yield* Schema.decodeUnknownEffect(TransactionId)(request.transactionId).pipe(
    Effect.mapError((e) => new UsageError({ message: `TRANSACTION_ID: ${e.message}`, cause: e }))
  )
  const root = yield* resolveWorkspace(request.workspace)
  const [record, repairs] = yield* withRepairs(
    root,
    request.db,
    OrchestratorRollback.rollbackTransaction(transactionId, { threadId: request.threadId })
  ).pipe(Effect.provide(orchestratorLayer(root, historyDbOf(root, request.db))))
  return { record, repairs } satisfies RollbackResult
})

const encodeRecord = Schema.encodeSync(RecordSchema)

/**
 * `{"ok":true,"record":<PatchHistoryRecord>}`, plus `"repairs":[...]` when the startup repair
 * did something.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderJson = ({ record, repairs }: RollbackResult): string =>
  JSON.stringify({ ok: true, record: encodeRecord(record), ...repairsField(repairs) }) + "\n"

/**
 * `Rolled back <txn> as <rollback txn>:` then one line per restored path.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderText = ({ record }: RollbackResult): string =>
  [
    `Rolled back ${record.links.rollbackOf} as ${record.transactionId} (record #${record.commitOrdinal}):`,
    ...record.changes.map((c) => `  ${c.kind} ${c.moveFrom === undefined ? "" : `${c.moveFrom} -> `}${c.path}`)
  ].join("\n") + "\n"
