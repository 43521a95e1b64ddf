/**
 * The SQLite implementation of `MergeStore` (SPEC §6.6–6.7), in the history database
 * (`<workspace>/.forkjoin/history.db`) through the same `Sqlite` service, so a join's run,
 * its children's outcomes and its conflicts sit next to the records they produced. Every
 * write is one `BEGIN IMMEDIATE` transaction (read, decide, write), so concurrent processes
 * never lose each other's outcomes and waits for the lock are handled as the history store's.
 *
 * It owns the merge tables and their migrations (`migrations/merge/`). It does not own the
 * connection policy (`Sqlite`), the versioning (`@forkjoin/sqlite/Migrator`: the `merge` row of
 * `schema_components`, checked when the layer is built and, if behind, migrated step by step)
 * nor the history tables (`HistoryStoreSqlite`), which it never alters.
 *
 * Layout (merge migration 1):
 * - `merge_runs(run_id PK, environment_id, status, created_at, updated_at, run_json)`, indexed
 *   by `(environment_id, created_at, run_id)` and `(environment_id, status, created_at, run_id)`
 *   (newest first, and e.g. the `running` runs `forkjoin status` lists);
 * - `merge_conflicts(conflict_id PK, run_id → merge_runs, environment_id, child_id, status,
 *   created_at, conflict_json)`, indexed by `(run_id, status, created_at, conflict_id)` (the open
 *   conflicts of a run) and `(environment_id, status, created_at, conflict_id)`.
 * Merge migration 2 rebuilds `merge_conflicts` with `run_id` and `child_id` nullable: a
 * rollback's held conflicts belong to no run (`kind: "rollback"` in the record).
 * The `*_json` column is the record's schema encoding; the other columns are projections of
 * it for querying (`environment_id` of a conflict is its run's, or the rollback's workspace:
 * the record does not carry it).
 *
 * @since 0.1.0
 */
import { ConflictRecord, type ConflictResolution } from "@forkjoin/schema/Conflict"
import type { ConflictId, EnvironmentId, MergeRunId, TransactionId } from "@forkjoin/schema/Ids"
import { type ChildOutcome, MergeRun, type MergeRunStatus } from "@forkjoin/schema/MergeRun"
import type { UtcTimestamp } from "@forkjoin/schema/UtcTimestamp"
import { Migrator } from "@forkjoin/sqlite"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { type HistoryServices, StoreError } from "./HistoryStore.ts"
import { layerNoDeps as historyLayerNoDeps, sqliteOptions } from "./HistoryStoreSqlite.ts"
import { type ConflictFilter, MergeStore, type RunFilter } from "./MergeStore.ts"
import { migration as m001 } from "./migrations/merge/001_runs_and_conflicts.ts"
import { migration as m002 } from "./migrations/merge/002_rollback_conflicts.ts"
import { type Connection, Sqlite, type SqliteOptions } from "./Sqlite.ts"
import * as Rules from "./internal/mergeRules.ts"

// -------------------------------------------------------------------------------------
// schema (migrations)
// -------------------------------------------------------------------------------------

// One file per migration under `migrations/merge/`, numbered as its version; the version is
// the `merge` row of `schema_components`, brought up when the store is built.
const component = Migrator.component({ name: "merge", label: "merge schema", migrations: [m001, m002] })

// -------------------------------------------------------------------------------------
// SQL (constant strings: each is prepared once per connection)
// -------------------------------------------------------------------------------------

const SQL = {
  insertRun: "INSERT INTO merge_runs (run_id, environment_id, status, created_at, updated_at, run_json) VALUES (?, ?, ?, ?, ?, ?)",
  hasRun: "SELECT 1 AS present FROM merge_runs WHERE run_id = ?",
  getRun: "SELECT run_id, run_json FROM merge_runs WHERE run_id = ?",
  updateRun: "UPDATE merge_runs SET status = ?, updated_at = ?, run_json = ? WHERE run_id = ?",
  runs: "SELECT run_id, run_json FROM merge_runs WHERE environment_id = ? ORDER BY created_at DESC, run_id DESC",
  runsByStatus: "SELECT run_id, run_json FROM merge_runs WHERE environment_id = ? AND status = ? " +
    "ORDER BY created_at DESC, run_id DESC",
  getConflict: "SELECT conflict_id, conflict_json FROM merge_conflicts WHERE conflict_id = ?",
  insertConflict: "INSERT INTO merge_conflicts (conflict_id, run_id, environment_id, child_id, status, created_at, conflict_json) " +
    "VALUES (?, ?, ?, ?, ?, ?, ?)",
  rollbackConflicts: "SELECT conflict_id, conflict_json FROM merge_conflicts WHERE environment_id = ? AND run_id IS NULL " +
    "ORDER BY created_at, conflict_id",
  deleteConflict: "DELETE FROM merge_conflicts WHERE conflict_id = ?",
  conflictEnvironment: "SELECT environment_id FROM merge_conflicts WHERE conflict_id = ?",
  openRollbackConflicts: "SELECT conflict_id, conflict_json FROM merge_conflicts WHERE environment_id = ? AND run_id IS NULL " +
    "AND status = 'open' ORDER BY created_at, conflict_id",
  resolveConflict: "UPDATE merge_conflicts SET status = 'resolved', conflict_json = ? WHERE conflict_id = ? AND status = 'open'",
  reopenConflict: "UPDATE merge_conflicts SET status = 'open', conflict_json = ? WHERE conflict_id = ? AND status = 'resolved'",
  conflicts: "SELECT conflict_id, conflict_json FROM merge_conflicts WHERE environment_id = ? " +
    "ORDER BY created_at, conflict_id",
  conflictsByStatus: "SELECT conflict_id, conflict_json FROM merge_conflicts WHERE environment_id = ? AND status = ? " +
    "ORDER BY created_at, conflict_id",
  // `+environment_id` keeps the planner off the environment index: a run's rows are few, an
  // environment's many (without it SQLite picks merge_conflicts_by_environment here).
  conflictsOfRun: "SELECT conflict_id, conflict_json FROM merge_conflicts " +
    "WHERE run_id = ? AND +environment_id = ? ORDER BY created_at, conflict_id",
  conflictsOfRunByStatus: "SELECT conflict_id, conflict_json FROM merge_conflicts " +
    "WHERE run_id = ? AND status = ? AND +environment_id = ? ORDER BY created_at, conflict_id"
} as const

interface RunRow {
  readonly run_id: string
  readonly run_json: string
}

interface ConflictRow {
  readonly conflict_id: string
  readonly conflict_json: string
}

// -------------------------------------------------------------------------------------
// encoding
// -------------------------------------------------------------------------------------

const encodeRunJson = Schema.encodeSync(Schema.fromJsonString(MergeRun))
const decodeRunJson = Schema.decodeUnknownSync(Schema.fromJsonString(MergeRun))
const encodeConflictJson = Schema.encodeSync(Schema.fromJsonString(ConflictRecord))
const decodeConflictJson = Schema.decodeUnknownSync(Schema.fromJsonString(ConflictRecord))


/** Encodes a record for writing; what the schema refuses is `Schema` and nothing is written. */
const encoded = <A>(operation: string, what: string, encode: (a: A) => string, value: A): string => {
  try {
    return encode(value)
  } catch (e) {
    throw new StoreError({ operation, reason: "Schema", detail: `${what} is invalid: ${Rules.messageOf(e)}`, cause: e })
  }
}


const corrupt = (operation: string, what: string, problem: string, cause?: unknown): StoreError =>
  new StoreError({ operation, reason: "Corrupt", detail: `${what} ${problem}`, cause })

const runOfRow = (operation: string, row: RunRow): MergeRun => {
  let run: MergeRun
  try {
    run = decodeRunJson(row.run_json)
  } catch (e) {
    throw corrupt(operation, `merge run ${row.run_id}`, `does not decode: ${Rules.messageOf(e)}`, e)
  }
  if (run.runId !== row.run_id) throw corrupt(operation, `merge run ${row.run_id}`, `holds the record of ${run.runId}`)
  return run
}

const conflictOfRow = (operation: string, row: ConflictRow): ConflictRecord => {
  let conflict: ConflictRecord
  try {
    conflict = decodeConflictJson(row.conflict_json)
  } catch (e) {
    throw corrupt(operation, `conflict ${row.conflict_id}`, `does not decode: ${Rules.messageOf(e)}`, e)
  }
  if (conflict.conflictId !== row.conflict_id) {
    throw corrupt(operation, `conflict ${row.conflict_id}`, `holds the record of ${conflict.conflictId}`)
  }
  return conflict
}

const requireRun = (c: Connection, operation: string, runId: MergeRunId): MergeRun => {
  const row = c.get<RunRow>(SQL.getRun, runId)
  if (row === undefined) throw new StoreError({ operation, reason: "NotFound", detail: `no merge run ${runId}` })
  return runOfRow(operation, row)
}

/** Writes `run` over its row: the columns are re-projected from the record every time. */
const updateRun = (c: Connection, operation: string, run: MergeRun): MergeRun => {
  const json = encoded(operation, `merge run ${run.runId}`, encodeRunJson, run)
  c.run(SQL.updateRun, run.status, run.updatedAt, json, run.runId)
  return run
}



// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

/**
 * Builds the store over the `Sqlite` service (opened with `HistoryStoreSqlite.sqliteOptions()`,
 * i.e. the history database) after migrating the merge tables.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make: Effect.Effect<typeof MergeStore.Service, StoreError, Sqlite> = Effect.gen(function*() {
  const sql = yield* Sqlite
  yield* sql.migrate("MergeStore.migrate", component)

  const createRun = Effect.fnUntraced(function*(run: MergeRun) {
    const operation = "MergeStore.createRun"
    const json = yield* Rules.attempt(() => encoded(operation, `merge run ${run.runId}`, encodeRunJson, run))
    const twice = Rules.duplicateChild(run)
    if (twice !== undefined) {
      return yield* new StoreError({ operation, reason: "Constraint", detail: `merge run ${run.runId} lists child ${twice} twice` })
    }
    yield* sql.transaction(operation, (c) => {
      // Checked first so the detail says which run; the primary key still guards the insert.
      if (c.get(SQL.hasRun, run.runId) !== undefined) {
        throw new StoreError({ operation, reason: "Constraint", detail: `merge run ${run.runId} already exists` })
      }
      c.run(SQL.insertRun, run.runId, run.environmentId, run.status, run.createdAt, run.updatedAt, json)
    })
  })

  const getRun = (runId: MergeRunId) =>
    sql.run("MergeStore.getRun", (c) => {
      const row = c.get<RunRow>(SQL.getRun, runId)
      return row === undefined ? Option.none<MergeRun>() : Option.some(runOfRow("MergeStore.getRun", row))
    })

  const recordOutcome = Effect.fnUntraced(function*(
    runId: MergeRunId,
    outcome: ChildOutcome,
    conflicts: ReadonlyArray<ConflictRecord>,
    updatedAt: UtcTimestamp
  ) {
    const operation = "MergeStore.recordOutcome"
    // Validated and encoded before taking the write lock.
    const rows = yield* Rules.attempt(() =>
      conflicts.map((conflict) => {
        Rules.checkConflictOwner(operation, runId, outcome.childId, conflict)
        return { conflict, json: encoded(operation, `conflict ${conflict.conflictId}`, encodeConflictJson, conflict) }
      })
    )
    return yield* sql.transaction(operation, (c) => {
      const run = requireRun(c, operation, runId)
      const updated = updateRun(c, operation, Rules.withOutcome(operation, run, outcome, updatedAt))
      for (const { conflict, json } of rows) {
        const existing = c.get<ConflictRow>(SQL.getConflict, conflict.conflictId)
        if (existing === undefined) {
          c.run(
            SQL.insertConflict,
            conflict.conflictId,
            runId,
            run.environmentId,
            outcome.childId,
            conflict.status,
            conflict.createdAt,
            json
          )
        } else if (existing.conflict_json !== json) {
          // The encoding is canonical (schema key order, no extra keys): equal JSON is equal content.
          throw new StoreError({
            operation,
            reason: "Constraint",
            detail: `conflict ${conflict.conflictId} is already stored with different content`
          })
        }
      }
      return updated
    })
  })

  const setRunStatus = (runId: MergeRunId, status: MergeRunStatus, updatedAt: UtcTimestamp) =>
    sql.transaction("MergeStore.setRunStatus", (c) => {
      const operation = "MergeStore.setRunStatus"
      return updateRun(c, operation, { ...requireRun(c, operation, runId), status, updatedAt })
    })

  const listRuns = (filter: RunFilter) =>
    sql.run("MergeStore.listRuns", (c) =>
      (filter.status === undefined
        ? c.all<RunRow>(SQL.runs, filter.environmentId)
        : c.all<RunRow>(SQL.runsByStatus, filter.environmentId, filter.status)).map((row) => runOfRow("MergeStore.listRuns", row)))

  const holdRollback = Effect.fnUntraced(function*(
    environmentId: EnvironmentId,
    transactionId: TransactionId,
    conflicts: ReadonlyArray<ConflictRecord>
  ) {
    const operation = "MergeStore.holdRollback"
    const rows = yield* Rules.attempt(() =>
      conflicts.map((conflict) => {
        Rules.checkRollbackConflict(operation, transactionId, conflict)
        return { conflict, json: encoded(operation, `conflict ${conflict.conflictId}`, encodeConflictJson, conflict) }
      })
    )
    yield* sql.transaction(operation, (c) => {
      const held = c.all<ConflictRow>(SQL.rollbackConflicts, environmentId)
        .map((row) => conflictOfRow(operation, row))
        .filter((x) => Rules.matchesFilter(x, { rollbackOf: transactionId }))
      for (const old of held) c.run(SQL.deleteConflict, old.conflictId)
      for (const { conflict, json } of rows) {
        if (c.get<ConflictRow>(SQL.getConflict, conflict.conflictId) !== undefined) {
          throw new StoreError({ operation, reason: "Constraint", detail: `conflict ${conflict.conflictId} is already stored` })
        }
        c.run(SQL.insertConflict, conflict.conflictId, null, environmentId, null, conflict.status, conflict.createdAt, json)
      }
    })
  })

  const getConflict = (conflictId: ConflictId) =>
    sql.run("MergeStore.getConflict", (c) => {
      const row = c.get<ConflictRow>(SQL.getConflict, conflictId)
      return row === undefined ? Option.none<ConflictRecord>() : Option.some(conflictOfRow("MergeStore.getConflict", row))
    })

  const listConflicts = (filter: ConflictFilter) =>
    sql.run("MergeStore.listConflicts", (c) => {
      const { environmentId, runId, status } = filter
      if (filter.rollbackOf !== undefined) {
        return c.all<ConflictRow>(SQL.rollbackConflicts, environmentId)
          .map((row) => conflictOfRow("MergeStore.listConflicts", row))
          .filter((x) => Rules.matchesFilter(x, filter))
      }
      const rows = runId === undefined
        ? status === undefined
          ? c.all<ConflictRow>(SQL.conflicts, environmentId)
          : c.all<ConflictRow>(SQL.conflictsByStatus, environmentId, status)
        : status === undefined
        ? c.all<ConflictRow>(SQL.conflictsOfRun, runId, environmentId)
        : c.all<ConflictRow>(SQL.conflictsOfRunByStatus, runId, status, environmentId)
      return rows.map((row) => conflictOfRow("MergeStore.listConflicts", row))
    })

  const resolveConflict = (conflictId: ConflictId, resolution: ConflictResolution) =>
    sql.transaction("MergeStore.resolveConflict", (c) => {
      const operation = "MergeStore.resolveConflict"
      const row = c.get<ConflictRow>(SQL.getConflict, conflictId)
      if (row === undefined) throw new StoreError({ operation, reason: "NotFound", detail: `no conflict ${conflictId}` })
      const conflict = conflictOfRow(operation, row)
      if (conflict.status !== "open") {
        throw new StoreError({ operation, reason: "Constraint", detail: `conflict ${conflictId} is already resolved` })
      }
      const resolved: ConflictRecord = { ...conflict, status: "resolved", resolution }
      c.run(SQL.resolveConflict, encoded(operation, `conflict ${conflictId}`, encodeConflictJson, resolved), conflictId)
      return resolved
    })

  const resolveRollbackConflict = (conflictId: ConflictId, resolution: ConflictResolution, closing: TransactionId) =>
    sql.transaction("MergeStore.resolveRollbackConflict", (c) => {
      const operation = "MergeStore.resolveRollbackConflict"
      const row = c.get<ConflictRow>(SQL.getConflict, conflictId)
      if (row === undefined) throw new StoreError({ operation, reason: "NotFound", detail: `no conflict ${conflictId}` })
      const conflict = conflictOfRow(operation, row)
      // Counted under the write lock taken by BEGIN IMMEDIATE: no other resolution interleaves.
      const environmentId = c.get<{ readonly environment_id: string }>(SQL.conflictEnvironment, conflictId)!.environment_id
      const open = c.all<ConflictRow>(SQL.openRollbackConflicts, environmentId)
        .filter((other) => other.conflict_id !== conflictId)
        .map((other) => conflictOfRow(operation, other))
        .filter((other) => conflict.transactionId !== undefined && Rules.matchesFilter(other, { rollbackOf: conflict.transactionId })).length
      const resolved = Rules.resolvedRollbackConflict(operation, conflict, open === 0 ? { ...resolution, transactionId: closing } : resolution)
      c.run(SQL.resolveConflict, encoded(operation, `conflict ${conflictId}`, encodeConflictJson, resolved), conflictId)
      return { conflict: resolved, open }
    })

  const reopenConflict = (conflictId: ConflictId, transactionId: TransactionId) =>
    sql.transaction("MergeStore.reopenConflict", (c) => {
      const operation = "MergeStore.reopenConflict"
      const row = c.get<ConflictRow>(SQL.getConflict, conflictId)
      if (row === undefined) return false
      const conflict = conflictOfRow(operation, row)
      if (conflict.status !== "resolved" || conflict.resolution?.transactionId !== transactionId) return false
      const { resolution: _, ...open } = conflict
      c.run(SQL.reopenConflict, encoded(operation, `conflict ${conflictId}`, encodeConflictJson, { ...open, status: "open" }), conflictId)
      return true
    })

  return MergeStore.of({
    createRun,
    getRun,
    recordOutcome,
    setRunStatus,
    listRuns,
    getConflict,
    listConflicts,
    holdRollback,
    resolveConflict,
    resolveRollbackConflict,
    reopenConflict
  })
})

// -------------------------------------------------------------------------------------
// layers
// -------------------------------------------------------------------------------------

/**
 * The store over an already provided `Sqlite` opened with `HistoryStoreSqlite.sqliteOptions()`
 * (share one connection with the history store); migrates the merge tables when built.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerNoDeps: Layer.Layer<MergeStore, StoreError, Sqlite> = Layer.effect(MergeStore, make)

/**
 * The store in the history database `file` (created and migrated, history tables included,
 * on open; closed when the layer is released). Several processes may use one file at once.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerSqlite = (
  file: string,
  options?: Omit<SqliteOptions, "migrations">
): Layer.Layer<MergeStore, StoreError> => layerNoDeps.pipe(Layer.provide(Sqlite.layer(file, sqliteOptions(options))))

/**
 * The merge store and the history store over ONE connection to `file` (the join records
 * patch history and merge outcomes in the same database), with the `Sqlite` service itself.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerWithHistory = (
  file: string,
  options?: Omit<SqliteOptions, "migrations">
): Layer.Layer<MergeStore | HistoryServices | Sqlite, StoreError> =>
  Layer.mergeAll(layerNoDeps, historyLayerNoDeps).pipe(Layer.provideMerge(Sqlite.layer(file, sqliteOptions(options))))
