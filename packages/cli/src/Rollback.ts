/**
 * `forkjoin rollback TARGET`: undoes one transaction (a child's merge, a patch, a conflict
 * resolution) through the engine, merging a path that changed since with the later work (held
 * as conflicts, nothing written, where that merge is not clean; `--strict` refuses with
 * `rollback_drift` instead); what the startup repair of its engine did is said first, on stderr and in `--json`. TARGET is
 * a transaction id, a record id (its transaction) or `#N` (the record with commit ordinal N),
 * each id whole or shortened as text output shows it. The flags are in `RollbackCommand.ts`.
 *
 * @since 0.1.0
 */
import { Engine, type RepairOutcome } from "@forkjoin/engine/Engine"
import { HistoryRecords } from "@forkjoin/history/HistoryStore"
import { ordinalOf } from "@forkjoin/history/ViewRequests"
import * as OrchestratorRollback from "@forkjoin/orchestrator/Rollback"
import { type RelativePath, type ThreadId, TransactionId } from "@forkjoin/schema/Ids"
import type { PatchHistoryRecord } from "@forkjoin/schema/PatchHistoryRecord"
import { PatchHistoryRecord as RecordSchema } from "@forkjoin/schema/PatchHistoryRecord"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { HistoryCommandError, toHistoryCommandError, UsageError } from "./internal/errors.ts"
import { orchestratorLayer } from "./internal/orchestratorLayer.ts"
import * as ShortIds from "./internal/shortIds.ts"
import { historyDbOf, resolveWorkspace } from "./internal/workspace.ts"
import { repairsField, withRepairs } from "./Repair.ts"

/**
 * One `rollback` invocation, after flag parsing.
 *
 * @category models
 * @since 0.1.0
 */
export interface RollbackRequest {
  /** A transaction id, a record id or `#N`, whole or shortened. */
  readonly transactionId: string
  readonly workspace: string
  readonly db?: string | undefined
  readonly threadId: ThreadId
  /** Refuse any path changed since (`rollback_drift`) instead of merging. */
  readonly strict?: boolean
}

/**
 * A rollback: its record, and what the startup repair did first (already on stderr).
 *
 * @category models
 * @since 0.1.0
 */
export interface RollbackResult {
  readonly record: PatchHistoryRecord
  /** The paths merged with later work. */
  readonly merged: ReadonlyArray<RelativePath>
  /** Grammars that could not be loaded (their files were merged by lines). */
  readonly warnings: ReadonlyArray<string>
  readonly repairs: ReadonlyArray<RepairOutcome>
  /** The ids for text output. */
  readonly ids: ShortIds.ShortIds
}

/**
 * The transaction `target` names: `#N`'s record's, a record id's (whole or shortened), else the
 * transaction id it is or shortens. A `#N` no record has is `not_found`.
 */
const transactionNamed = (target: string) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const ordinal = ordinalOf(target)
    if (ordinal !== undefined) {
      const history = yield* HistoryRecords
      const [record] = yield* history.recordsAfter(engine.environmentId, ordinal - 1, 1).pipe(Effect.mapError(toHistoryCommandError("read")))
      if (record === undefined || record.commitOrdinal !== ordinal) {
        return yield* new HistoryCommandError({
          code: "not_found",
          message: `no record ${target} in this workspace's history; 'forkjoin history timeline' lists the records with their #N`
        })
      }
      return record.transactionId
    }
    const ids = yield* ShortIds.load(engine.environmentId).pipe(Effect.mapError(toHistoryCommandError("read")))
    const recordId = yield* ShortIds.expand(ids, "record", target, "TARGET")
    const ofRecord = ids.sets.transactionOf.get(recordId)
    const named = ofRecord ?? (yield* ShortIds.expand(ids, "transaction", target, "TARGET"))
    return yield* Schema.decodeUnknownEffect(TransactionId)(named).pipe(
      Effect.mapError((e) =>
        new UsageError({ message: `TARGET: ${e.message}; give a transaction id, a record id or #N ('forkjoin history timeline' lists them)`, cause: e })
      )
    )
  })

/**
 * Rolls the transaction back and returns the rollback's record.
 *
 * @category constructors
 * @since 0.1.0
 */
export const rollback = Effect.fn("Rollback.rollback")(function*(request: RollbackRequest) {
  const root = yield* resolveWorkspace(request.workspace)
  const [[rolled, ids], repairs] = yield* withRepairs(
    root,
    request.db,
    Effect.gen(function*() {
      const transactionId = yield* transactionNamed(request.transactionId)
      const rolled = yield* OrchestratorRollback.rollback(transactionId, { threadId: request.threadId, strict: request.strict === true })
      const engine = yield* Engine
      return [rolled, yield* ShortIds.loadForDisplay(engine.environmentId)] as const
    })
  ).pipe(Effect.provide(orchestratorLayer(root, historyDbOf(root, request.db))))
  return { record: rolled.record, merged: rolled.merged, warnings: rolled.warnings, repairs, ids } satisfies RollbackResult
})

const encodeRecord = Schema.encodeSync(RecordSchema)

/**
 * `{"ok":true,"record":<PatchHistoryRecord>,"mergedPaths":[...]}` (the paths merged with later
 * work), plus `"warnings":[...]` when a grammar could not be loaded and `"repairs":[...]` when
 * the startup repair did something.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderJson = ({ merged, record, repairs, warnings }: RollbackResult): string =>
  JSON.stringify({
    ok: true,
    record: encodeRecord(record),
    mergedPaths: merged,
    ...(warnings.length === 0 ? {} : { warnings }),
    ...repairsField(repairs)
  }) + "\n"

/**
 * `Rolled back <txn> as <rollback txn>:` then one line per restored path, `(merged with later
 * changes)` after a path merged with later work, then a `warning:` line per grammar not loaded.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderText = ({ ids, merged, record, warnings }: RollbackResult): string =>
  [
    `Rolled back ${ids.short(record.links.rollbackOf ?? "")} as ${ids.short(record.transactionId)} (record #${record.commitOrdinal}):`,
    ...record.changes.map((c) =>
      `  ${c.kind} ${c.moveFrom === undefined ? "" : `${c.moveFrom} -> `}${c.path}${merged.includes(c.path) ? " (merged with later changes)" : ""}`
    ),
    ...warnings.map((w) => `warning: ${w}`)
  ].join("\n") + "\n"
