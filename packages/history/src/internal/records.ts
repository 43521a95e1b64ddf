/**
 * Record rows shared by the store, the views and ingestion: building a record from a draft,
 * validating and pre-encoding it outside the write lock, inserting it (with its ordinal and
 * its per-path index rows) inside a caller's transaction, and decoding rows on read.
 * Content addresses come from `@forkjoin/patch/Bytes`, the one `sha256`.
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import {
  PatchHistoryRecord,
  PatchHistoryRecordFromJson,
  type RecordDraft,
  type Sha256Hash,
  type UtcTimestamp,
  utcTimestampFromMillis
} from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { StoreError } from "../HistoryStore.ts"
import * as SnapshotStore from "../SnapshotStore.ts"
import type { Connection } from "../Sqlite.ts"

/** Statements shared by the store and the views. */
export const SQL = {
  nextOrdinal: "SELECT COALESCE(MAX(commit_ordinal), 0) + 1 AS next FROM records WHERE environment_id = ?",
  insertRecord: "INSERT INTO records (record_id, intent_id, environment_id, commit_ordinal, thread_id, turn_id, " +
    "transaction_id, committed_at, outcome, bytes_written, files_written, record_json, exactness, provenance, verifies) " +
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
  insertChange: "INSERT INTO record_changes (environment_id, path, commit_ordinal, thread_id, move_from) VALUES (?, ?, ?, ?, ?)",
  recordByOrdinal: "SELECT record_id, commit_ordinal, record_json FROM records WHERE environment_id = ? AND commit_ordinal = ?"
} as const

/** A `records` row as read by the views and the store. */
export interface RecordRow {
  readonly record_id: string
  readonly commit_ordinal: number
  readonly record_json: string
}

const encodeRecord = Schema.encodeSync(PatchHistoryRecord)
const decodeRecordJson = Schema.decodeUnknownSync(PatchHistoryRecordFromJson)

/** The message of a thrown value, for error details. */
export const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/** The record a draft becomes, fields in schema order (so the JSON is in schema order too). */
export const recordOf = (draft: RecordDraft, commitOrdinal: number, committedAt: UtcTimestamp): PatchHistoryRecord => ({
  schemaVersion: 1,
  recordId: draft.recordId,
  threadId: draft.threadId,
  turnId: draft.turnId,
  invocationId: draft.invocationId,
  environmentId: draft.environmentId,
  transactionId: draft.transactionId,
  commitOrdinal,
  committedAt,
  authority: draft.authority,
  provenance: draft.provenance,
  exactness: draft.exactness,
  outcome: draft.outcome,
  changes: draft.changes,
  directoryEffects: draft.directoryEffects,
  warnings: draft.warnings,
  links: draft.links
})

/** The encoded record check used by `openIntent`: throws when the draft can never be a record. */
export const checkDraft = (draft: RecordDraft, committedAt: UtcTimestamp): void => {
  encodeRecord(recordOf(draft, 1, committedAt))
}

/** A draft ready to insert: validated (with a placeholder ordinal) and pre-encoded. */
export interface PreparedRecord {
  readonly draft: RecordDraft
  readonly committedAt: UtcTimestamp
  readonly encoded: typeof PatchHistoryRecord.Encoded
  readonly bytesWritten: number
  readonly filesWritten: number
}

/** Synchronous `prepareRecord`: throws a `StoreError` (reason `Schema`) for an invalid draft. */
export const prepareRecordSync = (operation: string, draft: RecordDraft, committedAtMillis: number): PreparedRecord => {
  try {
    const committedAt = utcTimestampFromMillis(committedAtMillis)
    const encoded = encodeRecord(recordOf(draft, 1, committedAt))
    let bytesWritten = 0
    for (const change of draft.changes) bytesWritten += change.after?.bytes ?? 0
    return { draft, committedAt, encoded, bytesWritten, filesWritten: draft.changes.length }
  } catch (e) {
    throw new StoreError({ operation, reason: "Schema", detail: `the record draft is invalid: ${messageOf(e)}`, cause: e })
  }
}

/**
 * Validates outside the write lock: the real ordinal is only known inside the transaction, but
 * any positive integer is valid, so validating with ordinal 1 proves the final record valid.
 */
export const prepareRecord = (
  operation: string,
  draft: RecordDraft,
  committedAtMillis: number
): Effect.Effect<PreparedRecord, StoreError> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(prepareRecordSync(operation, draft, committedAtMillis))
    } catch (e) {
      return Effect.fail(e as StoreError)
    }
  })

/**
 * Inserts a prepared record with the environment's next ordinal, plus one `record_changes`
 * row per change (the views' path index); returns the ordinal. Call inside a transaction.
 */
export const insertRecord = (c: Connection, prepared: PreparedRecord, intentId: string | null): number => {
  const { draft } = prepared
  const next = c.get<{ readonly next: number }>(SQL.nextOrdinal, draft.environmentId)!.next
  c.run(
    SQL.insertRecord,
    draft.recordId,
    intentId,
    draft.environmentId,
    next,
    draft.threadId,
    draft.turnId,
    draft.transactionId,
    prepared.committedAt,
    draft.outcome,
    prepared.bytesWritten,
    prepared.filesWritten,
    JSON.stringify({ ...prepared.encoded, commitOrdinal: next }),
    draft.exactness,
    draft.provenance,
    draft.links.verifies ?? null
  )
  for (const change of draft.changes) {
    c.run(SQL.insertChange, draft.environmentId, change.path, next, draft.threadId, change.moveFrom ?? null)
  }
  return next
}

/** Stores blobs in the snapshot store (idempotent). Call inside a transaction. */
export const insertBlobs = (c: Connection, blobs: ReadonlyArray<Uint8Array>): ReadonlyArray<Sha256Hash> => {
  const hashes = blobs.map((bytes) => sha256(bytes))
  blobs.forEach((bytes, i) => SnapshotStore.put(c, bytes, hashes[i]!))
  return hashes
}

/** Decodes a record row; anything that does not decode, or disagrees with its columns, is corrupt. */
export const decodeRecordRow = (operation: string, row: RecordRow): PatchHistoryRecord => {
  let record: PatchHistoryRecord
  try {
    record = decodeRecordJson(row.record_json)
  } catch (e) {
    let parses = true
    try {
      JSON.parse(row.record_json)
    } catch {
      parses = false
    }
    throw new StoreError({
      operation,
      reason: parses ? "Schema" : "Corrupt",
      detail: `record ${row.record_id} does not decode: ${messageOf(e)}`,
      cause: e
    })
  }
  if (record.recordId !== row.record_id || record.commitOrdinal !== row.commit_ordinal) {
    throw new StoreError({
      operation,
      reason: "Corrupt",
      detail: `record ${row.record_id} (ordinal ${row.commit_ordinal}) disagrees with its JSON ` +
        `(${record.recordId}, ordinal ${record.commitOrdinal})`
    })
  }
  return record
}

/**
 * The views' decode of a record row: the JSON alone, any failure `Corrupt` (with its cause).
 * Unlike `decodeRecordRow` it does not cross-check the row's columns; it is what the views
 * and gap detection have always answered, so their errors keep their wording.
 */
export const decodeRecordJsonRow = (
  operation: string,
  row: Pick<RecordRow, "record_id" | "record_json">
): PatchHistoryRecord => {
  try {
    return decodeRecordJson(row.record_json)
  } catch (e) {
    throw new StoreError({ operation, reason: "Corrupt", detail: `record ${row.record_id} does not decode`, cause: e })
  }
}
