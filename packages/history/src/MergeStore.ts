/**
 * The durable join (SPEC §6.6–6.7): merge runs with each child's outcome, and the conflicts a
 * join held back, kept in patch history so `forkjoin run --resume` applies every child at most
 * once, `forkjoin status` lists interrupted (`running`) runs and `forkjoin conflicts` lists
 * conflicts. This module owns the service contract and an in-memory layer; the SQLite layer,
 * in the history database, lives in `MergeStoreSqlite.ts`.
 *
 * It does not own the records (`@forkjoin/schema/MergeRun`, `@forkjoin/schema/Conflict`), the
 * merge itself (the join computes outcomes and conflicts) nor applying a resolution.
 *
 * @since 0.1.0
 */
import { ConflictRecord, type ConflictResolution } from "@forkjoin/schema/Conflict"
import type { ConflictId, EnvironmentId, MergeRunId, TransactionId } from "@forkjoin/schema/Ids"
import { type ChildOutcome, MergeRun, type MergeRunStatus } from "@forkjoin/schema/MergeRun"
import type { UtcTimestamp } from "@forkjoin/schema/UtcTimestamp"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { StoreError } from "./HistoryStore.ts"
import {
  attempt,
  checkConflictOwner,
  checkRollbackConflict,
  duplicateChild,
  matchesFilter,
  messageOf,
  resolvedRollbackConflict,
  withOutcome
} from "./internal/mergeRules.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * Which runs `listRuns` returns: those of one environment, optionally only one status
 * (`running` = interrupted or in progress, what `forkjoin status` shows).
 *
 * @category models
 * @since 0.1.0
 */
export interface RunFilter {
  readonly environmentId: EnvironmentId
  readonly status?: MergeRunStatus
}

/**
 * Which conflicts `listConflicts` returns: those of one environment, optionally of one run
 * or of the rollback of one transaction (`rollbackOf`), and/or one status.
 *
 * @category models
 * @since 0.1.0
 */
export interface ConflictFilter {
  readonly environmentId: EnvironmentId
  readonly runId?: MergeRunId
  readonly rollbackOf?: TransactionId
  readonly status?: ConflictRecord["status"]
}

// -------------------------------------------------------------------------------------
// service
// -------------------------------------------------------------------------------------

/**
 * The merge-run and conflict store. Every method fails with `StoreError` only: `NotFound`,
 * `Constraint`, `Schema` (a record the schema refuses), `Corrupt` (a stored row that no longer
 * decodes), `Busy`/`Io` (SQLite).
 *
 * @category services
 * @since 0.1.0
 */
export class MergeStore extends Context.Service<MergeStore, {
  /** Stores a new run; an existing `runId`, or a child listed twice in `outcomes`, is `Constraint`. */
  readonly createRun: (run: MergeRun) => Effect.Effect<void, StoreError>
  /** The run, if stored. */
  readonly getRun: (runId: MergeRunId) => Effect.Effect<Option.Option<MergeRun>, StoreError>
  /**
   * In ONE transaction: replaces the outcome of `outcome.childId` in the run, inserts the
   * child's conflicts (an existing `conflictId` with identical content is a no-op, different
   * content is `Constraint`) and sets `updatedAt`. `NotFound` when the run or the child is
   * unknown; a conflict of another run or child is `Constraint`. Returns the updated run.
   */
  readonly recordOutcome: (
    runId: MergeRunId,
    outcome: ChildOutcome,
    conflicts: ReadonlyArray<ConflictRecord>,
    updatedAt: UtcTimestamp
  ) => Effect.Effect<MergeRun, StoreError>
  /** Sets the run's status and `updatedAt` (`NotFound` when unknown); returns the updated run. */
  readonly setRunStatus: (
    runId: MergeRunId,
    status: MergeRunStatus,
    updatedAt: UtcTimestamp
  ) => Effect.Effect<MergeRun, StoreError>
  /** Runs of an environment (optionally of one status), newest first (`createdAt`, then `runId`, descending). */
  readonly listRuns: (filter: RunFilter) => Effect.Effect<ReadonlyArray<MergeRun>, StoreError>
  /**
   * In ONE transaction: the conflicts held for the rollback of `transactionId` become
   * `conflicts` (each a rollback conflict of that transaction, else `Constraint`); the ones
   * held before, open or resolved, are dropped (a rollback asked for again merges afresh). An
   * id another conflict already has is `Constraint`.
   */
  readonly holdRollback: (
    environmentId: EnvironmentId,
    transactionId: TransactionId,
    conflicts: ReadonlyArray<ConflictRecord>
  ) => Effect.Effect<void, StoreError>
  /** The conflict, if stored. */
  readonly getConflict: (conflictId: ConflictId) => Effect.Effect<Option.Option<ConflictRecord>, StoreError>
  /** Conflicts matching `filter`, by `createdAt` then `conflictId` (code point order, as SQLite's BINARY). */
  readonly listConflicts: (filter: ConflictFilter) => Effect.Effect<ReadonlyArray<ConflictRecord>, StoreError>
  /**
   * In ONE transaction: an open conflict becomes `resolved` with `resolution`; returns it.
   * Unknown is `NotFound`; already resolved is `Constraint` (the detail says so).
   */
  readonly resolveConflict: (
    conflictId: ConflictId,
    resolution: ConflictResolution
  ) => Effect.Effect<ConflictRecord, StoreError>
  /**
   * In ONE transaction: an open conflict of a held rollback becomes `resolved` with
   * `resolution`, and the rollback's conflicts still open after it are counted; when none is,
   * the resolution names `closing` (the transaction that applies the rollback). So of
   * resolutions racing for the last conflicts, exactly one sees none left open. Returns the
   * record and that count. Unknown is `NotFound`; already resolved or not a rollback's is
   * `Constraint` (the detail says which).
   */
  readonly resolveRollbackConflict: (
    conflictId: ConflictId,
    resolution: ConflictResolution,
    closing: TransactionId
  ) => Effect.Effect<{ readonly conflict: ConflictRecord; readonly open: number }, StoreError>
  /**
   * In ONE transaction: a conflict resolved by `transactionId` (its write never landed) is open
   * again; returns whether it was. Any other state is left as it is.
   */
  readonly reopenConflict: (conflictId: ConflictId, transactionId: TransactionId) => Effect.Effect<boolean, StoreError>
}>()("forkjoin/history/MergeStore") {
  /** A fresh, private in-memory store per build (tests, single-process runs). */
  static readonly layerMemory: Layer.Layer<MergeStore> = Layer.sync(MergeStore, () => makeMemory())
}

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

const RunJson = Schema.fromJsonString(MergeRun)
const ConflictJson = Schema.fromJsonString(ConflictRecord)
const encodeRunJson = Schema.encodeSync(RunJson)
const decodeRunJson = Schema.decodeUnknownSync(RunJson)
const encodeConflictJson = Schema.encodeSync(ConflictJson)
const decodeConflictJson = Schema.decodeUnknownSync(ConflictJson)



const encoded = <A>(operation: string, what: string, encode: (a: A) => string, value: A): string => {
  try {
    return encode(value)
  } catch (e) {
    throw new StoreError({ operation, reason: "Schema", detail: `${what} is invalid: ${messageOf(e)}`, cause: e })
  }
}

/**
 * An in-memory store: a private map per call. Records are kept as their JSON encoding, as the
 * SQLite layer keeps them, so both validate on write and hand out fresh decoded values.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeMemory = (): MergeStore["Service"] => {
  const runs = new Map<MergeRunId, string>()
  const conflicts = new Map<ConflictId, { readonly environmentId: EnvironmentId; readonly json: string }>()
  // Nothing stored here can fail to decode: it was encoded by the same schema.
  const runOf = (json: string): MergeRun => decodeRunJson(json)
  const conflictOf = (json: string): ConflictRecord => decodeConflictJson(json)

  const requireRun = (operation: string, runId: MergeRunId): MergeRun => {
    const json = runs.get(runId)
    if (json === undefined) throw new StoreError({ operation, reason: "NotFound", detail: `no merge run ${runId}` })
    return runOf(json)
  }

  return MergeStore.of({
    createRun: (run) =>
      attempt(() => {
        const operation = "MergeStore.createRun"
        const json = encoded(operation, `merge run ${run.runId}`, encodeRunJson, run)
        const twice = duplicateChild(run)
        if (twice !== undefined) {
          throw new StoreError({ operation, reason: "Constraint", detail: `merge run ${run.runId} lists child ${twice} twice` })
        }
        if (runs.has(run.runId)) {
          throw new StoreError({ operation, reason: "Constraint", detail: `merge run ${run.runId} already exists` })
        }
        runs.set(run.runId, json)
      }),

    getRun: (runId) =>
      attempt(() => {
        const json = runs.get(runId)
        return json === undefined ? Option.none() : Option.some(runOf(json))
      }),

    recordOutcome: (runId, outcome, given, updatedAt) =>
      attempt(() => {
        const operation = "MergeStore.recordOutcome"
        // Everything is checked before anything is written: the memory layer's "transaction".
        const rows = given.map((c) => {
          checkConflictOwner(operation, runId, outcome.childId, c)
          return { conflictId: c.conflictId, json: encoded(operation, `conflict ${c.conflictId}`, encodeConflictJson, c) }
        })
        const run = requireRun(operation, runId)
        const updated = withOutcome(operation, run, outcome, updatedAt)
        const json = encoded(operation, `merge run ${runId}`, encodeRunJson, updated)
        const fresh = new Map<ConflictId, string>()
        for (const row of rows) {
          const existing = conflicts.get(row.conflictId)?.json ?? fresh.get(row.conflictId)
          if (existing === undefined) fresh.set(row.conflictId, row.json)
          else if (existing !== row.json) throw conflictClash(operation, row.conflictId)
        }
        runs.set(runId, json)
        for (const [conflictId, conflictJson] of fresh) {
          conflicts.set(conflictId, { environmentId: run.environmentId, json: conflictJson })
        }
        return runOf(json)
      }),

    setRunStatus: (runId, status, updatedAt) =>
      attempt(() => {
        const operation = "MergeStore.setRunStatus"
        const run = requireRun(operation, runId)
        const json = encoded(operation, `merge run ${runId}`, encodeRunJson, { ...run, status, updatedAt })
        runs.set(runId, json)
        return runOf(json)
      }),

    listRuns: (filter) =>
      attempt(() =>
        Array.from(runs.values(), runOf)
          .filter((r) => r.environmentId === filter.environmentId && (filter.status === undefined || r.status === filter.status))
          .sort((a, b) => byBinary(b.createdAt, a.createdAt) || byBinary(b.runId, a.runId))
      ),

    holdRollback: (environmentId, transactionId, given) =>
      attempt(() => {
        const operation = "MergeStore.holdRollback"
        const rows = given.map((c) => {
          checkRollbackConflict(operation, transactionId, c)
          return { conflictId: c.conflictId, json: encoded(operation, `conflict ${c.conflictId}`, encodeConflictJson, c) }
        })
        const held = (row: { readonly environmentId: EnvironmentId; readonly json: string }) => {
          const c = conflictOf(row.json)
          return row.environmentId === environmentId && c.kind === "rollback" && c.transactionId === transactionId
        }
        for (const row of rows) {
          const existing = conflicts.get(row.conflictId)
          if (existing !== undefined && !held(existing)) throw conflictClash(operation, row.conflictId)
        }
        for (const [id, row] of conflicts) if (held(row)) conflicts.delete(id)
        for (const row of rows) conflicts.set(row.conflictId, { environmentId, json: row.json })
      }),

    getConflict: (conflictId) =>
      attempt(() => {
        const row = conflicts.get(conflictId)
        return row === undefined ? Option.none() : Option.some(conflictOf(row.json))
      }),

    listConflicts: (filter) =>
      attempt(() =>
        Array.from(conflicts.values())
          .filter((row) => row.environmentId === filter.environmentId)
          .map((row) => conflictOf(row.json))
          .filter((c) => matchesFilter(c, filter))
          .sort((a, b) => byBinary(a.createdAt, b.createdAt) || byBinary(a.conflictId, b.conflictId))
      ),

    resolveConflict: (conflictId, resolution) =>
      attempt(() => {
        const operation = "MergeStore.resolveConflict"
        const row = conflicts.get(conflictId)
        if (row === undefined) throw new StoreError({ operation, reason: "NotFound", detail: `no conflict ${conflictId}` })
        const conflict = conflictOf(row.json)
        if (conflict.status !== "open") {
          throw new StoreError({ operation, reason: "Constraint", detail: `conflict ${conflictId} is already resolved` })
        }
        const json = encoded(operation, `conflict ${conflictId}`, encodeConflictJson, {
          ...conflict,
          status: "resolved",
          resolution
        })
        conflicts.set(conflictId, { environmentId: row.environmentId, json })
        return conflictOf(json)
      }),

    resolveRollbackConflict: (conflictId, resolution, closing) =>
      attempt(() => {
        const operation = "MergeStore.resolveRollbackConflict"
        const row = conflicts.get(conflictId)
        if (row === undefined) throw new StoreError({ operation, reason: "NotFound", detail: `no conflict ${conflictId}` })
        const conflict = conflictOf(row.json)
        const others = (c: ConflictRecord) =>
          c.conflictId !== conflictId && conflict.transactionId !== undefined && matchesFilter(c, { rollbackOf: conflict.transactionId, status: "open" })
        const open = Array.from(conflicts.values()).filter((o) => o.environmentId === row.environmentId).map((o) => conflictOf(o.json)).filter(others).length
        const resolved = resolvedRollbackConflict(operation, conflict, open === 0 ? { ...resolution, transactionId: closing } : resolution)
        const json = encoded(operation, `conflict ${conflictId}`, encodeConflictJson, resolved)
        conflicts.set(conflictId, { environmentId: row.environmentId, json })
        return { conflict: conflictOf(json), open }
      }),

    reopenConflict: (conflictId, transactionId) =>
      attempt(() => {
        const row = conflicts.get(conflictId)
        if (row === undefined) return false
        const conflict = conflictOf(row.json)
        if (conflict.status !== "resolved" || conflict.resolution?.transactionId !== transactionId) return false
        const { resolution: _, ...open } = conflict
        conflicts.set(conflictId, { environmentId: row.environmentId, json: encoded("MergeStore.reopenConflict", `conflict ${conflictId}`, encodeConflictJson, { ...open, status: "open" }) })
        return true
      })
  })
}

// -------------------------------------------------------------------------------------
// internals
// -------------------------------------------------------------------------------------


const conflictClash = (operation: string, conflictId: ConflictId): StoreError =>
  new StoreError({
    operation,
    reason: "Constraint",
    detail: `conflict ${conflictId} is already stored with different content`
  })

/** SQLite's BINARY collation (UTF-8 bytes, i.e. code points), not JS's UTF-16 code units. */
const byBinary = (a: string, b: string): number => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"))
