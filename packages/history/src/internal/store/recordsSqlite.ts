/**
 * The SQLite implementation of `HistoryRecords`: intent-less records (one, or many in one
 * transaction), the thread tree (no cycles), record queries, usage sums, and the
 * acknowledgements of `commit_state_uncertain` records.
 *
 * @since 0.1.0
 */
import {
  type EnvironmentId,
  type RecordDraft,
  type RecordId,
  type ThreadId,
  type TransactionId,
  type TurnId,
  UtcTimestamp,
  utcTimestampFromMillis
} from "@forkjoin/schema"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { HistoryRecords, StoreError, type UncertainRecord, type Usage } from "../../HistoryStore.ts"
import type { Sqlite } from "../../Sqlite.ts"
import { decodeRecordRow, insertRecord, prepareRecord, prepareRecordSync, type RecordRow, recordOf } from "../records.ts"

const SQL = {
  recordsByTransaction: "SELECT record_id, commit_ordinal, record_json FROM records " +
    "WHERE environment_id = ? AND transaction_id = ? ORDER BY commit_ordinal",
  recordsAfter: "SELECT record_id, commit_ordinal, record_json FROM records " +
    "WHERE environment_id = ? AND commit_ordinal > ? ORDER BY commit_ordinal LIMIT ?",
  usageOfTurn: "SELECT COALESCE(SUM(bytes_written), 0) AS bytes, COALESCE(SUM(files_written), 0) AS files " +
    "FROM records WHERE environment_id = ? AND turn_id = ? AND outcome = 'applied'",
  usageOfEnvironment: "SELECT COALESCE(SUM(bytes_written), 0) AS bytes, COALESCE(SUM(files_written), 0) AS files " +
    "FROM records WHERE environment_id = ? AND outcome = 'applied'",
  threadOf: "SELECT parent_thread_id FROM threads WHERE thread_id = ?",
  insertThread: "INSERT INTO threads (thread_id, parent_thread_id, created_at) VALUES (?, ?, ?)",
  isAncestorOf: "WITH RECURSIVE up(t) AS (SELECT ? UNION SELECT parent_thread_id FROM threads JOIN up ON thread_id = up.t " +
    "WHERE parent_thread_id IS NOT NULL) SELECT 1 AS found FROM up WHERE t = ? LIMIT 1",
  uncertainRecords: "SELECT r.record_id, r.commit_ordinal, r.record_json, a.acknowledged_at, a.note FROM records r " +
    "LEFT JOIN acknowledgements a ON a.record_id = r.record_id " +
    "WHERE r.environment_id = ? AND r.outcome = 'commit_state_uncertain' ORDER BY r.commit_ordinal",
  uncertainRecord: "SELECT r.record_id, r.commit_ordinal, r.record_json, a.acknowledged_at, a.note FROM records r " +
    "LEFT JOIN acknowledgements a ON a.record_id = r.record_id " +
    "WHERE r.environment_id = ? AND r.record_id = ? AND r.outcome = 'commit_state_uncertain'",
  insertAcknowledgement: "INSERT OR IGNORE INTO acknowledgements (record_id, acknowledged_at, note) VALUES (?, ?, ?)"
} as const

/** A `commit_state_uncertain` record row with its acknowledgement, if any. */
interface UncertainRow extends RecordRow {
  readonly acknowledged_at: string | null
  readonly note: string | null
}

const decodeTimestamp = Schema.decodeUnknownSync(UtcTimestamp)

const uncertainOf = (operation: string, row: UncertainRow): UncertainRecord => {
  const record = decodeRecordRow(operation, row)
  let acknowledgedAt: UtcTimestamp | undefined
  try {
    acknowledgedAt = row.acknowledged_at === null ? undefined : decodeTimestamp(row.acknowledged_at)
  } catch (e) {
    throw new StoreError({ operation, reason: "Corrupt", detail: `the acknowledgement of ${row.record_id} does not decode`, cause: e })
  }
  return { record, acknowledgedAt, note: row.note ?? undefined }
}

/** The `HistoryRecords` of the connection `sql`. */
export const makeRecords = (sql: Sqlite["Service"]): HistoryRecords["Service"] => {
  const appendRecord = Effect.fnUntraced(function*(draft: RecordDraft, committedAtMillis: number) {
    const operation = "HistoryStore.appendRecord"
    const prepared = yield* prepareRecord(operation, draft, committedAtMillis)
    const ordinal = yield* sql.transaction(operation, (c) => insertRecord(c, prepared, null))
    return recordOf(draft, ordinal, prepared.committedAt)
  })

  const appendRecords = Effect.fnUntraced(function*(
    drafts: ReadonlyArray<RecordDraft>,
    committedAtMillis: number
  ) {
    const operation = "HistoryStore.appendRecords"
    if (drafts.length === 0) return []
    const prepared = yield* Effect.try({
      try: () => drafts.map((d) => prepareRecordSync(operation, d, committedAtMillis)),
      catch: (e) => e as StoreError
    })
    const ordinals = yield* sql.transaction(operation, (c) => prepared.map((p) => insertRecord(c, p, null)))
    return prepared.map((p, i) => recordOf(p.draft, ordinals[i]!, p.committedAt))
  })

  const registerThread = Effect.fnUntraced(function*(threadId: ThreadId, parentThreadId?: ThreadId) {
    const operation = "HistoryStore.registerThread"
    const createdAt = utcTimestampFromMillis(yield* Clock.currentTimeMillis)
    const parent = parentThreadId ?? null
    yield* sql.transaction(operation, (c) => {
      if (parent === threadId) {
        throw new StoreError({ operation, reason: "Constraint", detail: `thread ${threadId} cannot be its own parent` })
      }
      const existing = c.get<{ readonly parent_thread_id: string | null }>(SQL.threadOf, threadId)
      if (existing !== undefined) {
        if (existing.parent_thread_id === parent) return
        throw new StoreError({
          operation,
          reason: "Constraint",
          detail: `thread ${threadId} is already registered with parent ${existing.parent_thread_id ?? "(none)"}`
        })
      }
      // A new thread has no children yet, but its parent chain must not already contain it.
      if (parent !== null && c.get(SQL.isAncestorOf, parent, threadId) !== undefined) {
        throw new StoreError({ operation, reason: "Constraint", detail: `registering ${threadId} under ${parent} makes a cycle` })
      }
      c.run(SQL.insertThread, threadId, parent, createdAt)
    })
  })

  const recordsByTransaction = Effect.fnUntraced(function*(
    environmentId: EnvironmentId,
    transactionId: TransactionId
  ) {
    const operation = "HistoryStore.recordsByTransaction"
    return yield* sql.run(operation, (c) =>
      c.all<RecordRow>(SQL.recordsByTransaction, environmentId, transactionId).map((row) => decodeRecordRow(operation, row)))
  })

  const recordsAfter = Effect.fnUntraced(function*(
    environmentId: EnvironmentId,
    after: number,
    limit: number
  ) {
    const operation = "HistoryStore.recordsAfter"
    if (!(limit >= 1)) return []
    // Non-integers would make SQLite compare as REAL and LIMIT round: normalize here.
    const from = Number.isFinite(after) ? Math.floor(after) : after > 0 ? Number.MAX_SAFE_INTEGER : 0
    const count = Number.isFinite(limit) ? Math.floor(limit) : -1
    return yield* sql.run(operation, (c) =>
      c.all<RecordRow>(SQL.recordsAfter, environmentId, from, count).map((row) => decodeRecordRow(operation, row)))
  })

  const usage = Effect.fnUntraced(function*(environmentId: EnvironmentId, turnId: TurnId | undefined) {
    return yield* sql.run("HistoryStore.usage", (c): Usage => {
      const row = turnId === undefined
        ? c.get<{ readonly bytes: number; readonly files: number }>(SQL.usageOfEnvironment, environmentId)
        : c.get<{ readonly bytes: number; readonly files: number }>(SQL.usageOfTurn, environmentId, turnId)
      return { bytes: row?.bytes ?? 0, files: row?.files ?? 0 }
    })
  })

  const uncertainRecords = Effect.fnUntraced(function*(environmentId: EnvironmentId) {
    const operation = "HistoryStore.uncertainRecords"
    return yield* sql.run(operation, (c) =>
      c.all<UncertainRow>(SQL.uncertainRecords, environmentId).map((row) => uncertainOf(operation, row)))
  })

  const acknowledge = Effect.fnUntraced(function*(
    environmentId: EnvironmentId,
    recordId: RecordId,
    atMillis: number,
    note: string
  ) {
    const operation = "HistoryStore.acknowledge"
    const at = utcTimestampFromMillis(atMillis)
    return yield* sql.transaction(operation, (c) => {
      if (c.get(SQL.uncertainRecord, environmentId, recordId) === undefined) {
        throw new StoreError({ operation, reason: "NotFound", detail: `no commit_state_uncertain record ${recordId} in ${environmentId}` })
      }
      c.run(SQL.insertAcknowledgement, recordId, at, note)
      return uncertainOf(operation, c.get<UncertainRow>(SQL.uncertainRecord, environmentId, recordId)!)
    })
  })

  return HistoryRecords.of({
    appendRecord,
    appendRecords,
    registerThread,
    recordsByTransaction,
    recordsAfter,
    usage,
    uncertainRecords,
    acknowledge
  })
}
