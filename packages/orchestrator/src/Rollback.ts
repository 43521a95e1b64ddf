/**
 * `rollback_transaction` (SPEC §6.8): undoes exactly one transaction (a child's merge, a
 * patch, a conflict resolution) as a new transaction `rollback:<id>` linked by
 * `links.rollbackOf`. Every path must still hold what the transaction wrote; otherwise the
 * rollback is refused as `rollback_drift` naming the paths and, where history knows it, the
 * later transaction that changed them. Nothing is written on a refusal; history is
 * append-only.
 *
 * Owns reading the transaction and its blobs and asking the pure planner. Does not own the
 * restore plan (`@forkjoin/merge/RollbackPlan`) nor writing (the engine).
 *
 * @since 0.1.0
 */
import { Engine, Grants } from "@forkjoin/engine/Engine"
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { planRollback } from "@forkjoin/merge/RollbackPlan"
import type { FileState } from "@forkjoin/patch"
import { type PatchHistoryRecord, type Sha256Hash, type ThreadId, TransactionId, TurnId } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { OrchestratorError, storeFailure } from "./OrchestratorError.ts"

const ROLLBACK_TURN = TurnId.make("rollback")
const PAGE = 500

/**
 * Rolls back `transactionId` in `threadId`'s name; resolves to the rollback's record.
 *
 * @category constructors
 * @since 0.1.0
 */
export const rollbackTransaction = Effect.fn("Rollback.rollbackTransaction")(function*(
  transactionId: TransactionId,
  options: { readonly threadId: ThreadId }
) {
  const engine = yield* Engine
  const history = yield* HistoryStore
  const records = yield* history.recordsByTransaction(engine.environmentId, transactionId).pipe(Effect.mapError(storeFailure("Reading the transaction")))
  const applied = records.filter((r) => r.outcome === "applied")
  if (applied.length === 0) {
    return yield* new OrchestratorError({
      code: "unknown_transaction",
      paths: [],
      message: `No applied transaction '${transactionId}' is recorded in this workspace; 'forkjoin history timeline' lists transactions.`
    })
  }
  const changes = applied.flatMap((r) => r.changes)
  const paths = [...new Set(changes.flatMap((c) => (c.moveFrom === undefined ? [c.path] : [c.path, c.moveFrom])))]
  const live = yield* engine.read(paths)
  const hashes = [...new Set(changes.flatMap((c) => [c.before?.hash, c.overwritten?.hash].filter((h): h is Sha256Hash => h !== undefined)))]
  const blobs = new Map<string, Uint8Array>()
  for (const h of hashes) {
    const bytes = yield* history.getBlob(h).pipe(Effect.mapError(storeFailure("Reading a snapshot")))
    if (Option.isSome(bytes)) blobs.set(h, bytes.value)
  }
  const planned = planRollback({ changes, live: (p) => live.get(p) ?? ({ _tag: "Missing" } satisfies FileState), blob: (h) => blobs.get(h) })
  switch (planned._tag) {
    case "Unavailable":
      return yield* new OrchestratorError({
        code: "rollback_unavailable",
        paths: planned.paths,
        message: `The history does not hold the earlier content of ${planned.paths.join(", ")} for this transaction, so it cannot be ` +
          "restored; nothing was written."
      })
    case "Drift": {
      const later = yield* laterTransaction(applied, planned.paths)
      return yield* new OrchestratorError({
        code: "rollback_drift",
        paths: planned.paths,
        message: `${planned.paths.join(", ")} changed after ${transactionId}${later === undefined ? "" : ` (by ${later})`}; ` +
          "nothing was written. Roll back the later change first, or edit the files by hand.",
        ...(later === undefined ? {} : { laterTransactionId: later })
      })
    }
    case "Ready":
      if (planned.plan.files.length === 0) {
        return yield* new OrchestratorError({
          code: "rollback_unavailable",
          paths: [],
          message: `Transaction ${transactionId} changed nothing in the end (its changes cancel out); there is nothing to roll back.`
        })
      }
      return yield* engine.applyPlan({
        threadId: options.threadId,
        turnId: ROLLBACK_TURN,
        transactionId: TransactionId.make(`rollback:${transactionId}`),
        // Every `before` is the transaction's postimage, re-checked under the lock.
        grant: Grants.full,
        links: { rollbackOf: transactionId },
        plan: planned.plan
      })
  }
})

/** The first transaction after `records` that changed one of `paths`, when history shows one. */
const laterTransaction = (records: ReadonlyArray<PatchHistoryRecord>, paths: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const history = yield* HistoryStore
    const wanted = new Set(paths)
    let after = Math.max(...records.map((r) => r.commitOrdinal))
    for (;;) {
      const page = yield* history.recordsAfter(engine.environmentId, after, PAGE).pipe(Effect.orElseSucceed(() => []))
      for (const r of page) {
        if (r.changes.some((c) => wanted.has(c.path) || (c.moveFrom !== undefined && wanted.has(c.moveFrom)))) return r.transactionId
      }
      if (page.length < PAGE) return undefined
      after = page[page.length - 1]!.commitOrdinal
    }
  })
