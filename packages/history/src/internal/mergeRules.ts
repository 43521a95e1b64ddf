/**
 * The merge store's rules, shared by its memory and SQLite layers (the contract suite holds
 * both to them): a run lists each child once, a conflict belongs to the outcome recorded with
 * it, and an outcome replaces its child's; plus how both run a synchronous body.
 */
import type { ChildOutcome, ConflictRecord, ConflictResolution, MergeRun, MergeRunId, TransactionId, UtcTimestamp } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import { StoreError } from "../HistoryStore.ts"

/** The message of a thrown value, for a store error's detail. */
export const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/** Runs a synchronous body: a thrown `StoreError` fails the effect, anything else is a bug. */
export const attempt = <A>(body: () => A): Effect.Effect<A, StoreError> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(body())
    } catch (thrown) {
      return thrown instanceof StoreError ? Effect.fail(thrown) : Effect.die(thrown)
    }
  })

/** The first child a run lists twice, if any. */
export const duplicateChild = (run: MergeRun): string | undefined => {
  const seen = new Set<string>()
  for (const o of run.outcomes) {
    if (seen.has(o.childId)) return o.childId
    seen.add(o.childId)
  }
  return undefined
}

/** Refuses a conflict recorded with another run's or child's outcome. */
export const checkConflictOwner = (operation: string, runId: MergeRunId, childId: string, c: ConflictRecord): void => {
  if (c.runId !== runId || c.childId !== childId) {
    throw new StoreError({
      operation,
      reason: "Constraint",
      detail: `conflict ${c.conflictId} belongs to ${c.runId} / ${c.childId}, the outcome to ${runId} / ${childId}`
    })
  }
}

/** Refuses a conflict held for a rollback that is not one of `transactionId`'s. */
export const checkRollbackConflict = (operation: string, transactionId: TransactionId, c: ConflictRecord): void => {
  if (c.kind !== "rollback" || c.transactionId !== transactionId) {
    throw new StoreError({
      operation,
      reason: "Constraint",
      detail: `conflict ${c.conflictId} is not one of the rollback of ${transactionId}`
    })
  }
}

/** Whether `c` is one `listConflicts` returns for `filter` (its environment aside). */
export const matchesFilter = (
  c: ConflictRecord,
  filter: { readonly runId?: MergeRunId; readonly rollbackOf?: TransactionId; readonly status?: ConflictRecord["status"] }
): boolean =>
  (filter.runId === undefined || c.runId === filter.runId) &&
  (filter.rollbackOf === undefined || (c.kind === "rollback" && c.transactionId === filter.rollbackOf)) &&
  (filter.status === undefined || c.status === filter.status)

/** `run` with `outcome` in place of its child's (NotFound for an unknown child). */
export const withOutcome = (operation: string, run: MergeRun, outcome: ChildOutcome, updatedAt: UtcTimestamp): MergeRun => {
  const index = run.outcomes.findIndex((o) => o.childId === outcome.childId)
  if (index < 0) {
    throw new StoreError({ operation, reason: "NotFound", detail: `merge run ${run.runId} has no child ${outcome.childId}` })
  }
  return { ...run, outcomes: run.outcomes.map((o, i) => (i === index ? outcome : o)), updatedAt }
}

/** `c` resolved with `resolution`, refusing one that is not an open rollback conflict (`Constraint`). */
export const resolvedRollbackConflict = (operation: string, c: ConflictRecord, resolution: ConflictResolution): ConflictRecord => {
  if (c.kind !== "rollback") throw new StoreError({ operation, reason: "Constraint", detail: `conflict ${c.conflictId} is not a rollback's` })
  if (c.status !== "open") throw new StoreError({ operation, reason: "Constraint", detail: `conflict ${c.conflictId} is already resolved` })
  return { ...c, status: "resolved", resolution }
}
