/**
 * The SQLite implementation of `HistoryJournal`: an intent and its blobs written in one durable
 * transaction, committed with its record (the record's ordinal allocated under the same lock,
 * gaps recorded first when asked) or closed without one, and the open intents read back.
 *
 * @since 0.1.0
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import { type EnvironmentId, type JournalIntent, JournalIntentFromJson, type RecordDraft, type Sha256Hash, utcTimestampFromMillis } from "@forkjoin/schema"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { recordGapsBeforeWrite } from "../../Gaps.ts"
import { HistoryJournal, StoreError } from "../../HistoryStore.ts"
import * as SnapshotStore from "../../SnapshotStore.ts"
import type { Connection, Sqlite } from "../../Sqlite.ts"
import { checkDraft, insertRecord, messageOf, prepareRecord, recordOf } from "../records.ts"
import { storeBlobs } from "./contentSqlite.ts"

const SQL = {
  insertIntent: "INSERT INTO intents (intent_id, environment_id, transaction_id, status, created_at, intent_json) " +
    "VALUES (?, ?, ?, 'open', ?, ?)",
  intentState: "SELECT environment_id, transaction_id, status FROM intents WHERE intent_id = ?",
  closeIntent: "UPDATE intents SET status = ?, closed_at = ?, note = ? WHERE intent_id = ? AND status = 'open'",
  // Closing with a record: the record holds the draft, so the journal copy goes (see migration 4).
  closeIntentWithRecord: "UPDATE intents SET status = ?, closed_at = ?, note = ?, intent_json = '' " +
    "WHERE intent_id = ? AND status = 'open'",
  openIntents: "SELECT intent_json FROM intents WHERE environment_id = ? AND status = 'open' ORDER BY created_at, rowid"
} as const

interface IntentStateRow {
  readonly environment_id: string
  readonly transaction_id: string
  readonly status: string
}

const encodeIntentJson = Schema.encodeSync(JournalIntentFromJson)
const decodeIntentJson = Schema.decodeUnknownSync(JournalIntentFromJson)

/** Checks that an intent exists and is open; it must belong to the draft's environment and transaction. */
const requireOpenIntent = (
  c: Connection,
  operation: string,
  intentId: string,
  expect?: { readonly environmentId: string; readonly transactionId: string }
): void => {
  const row = c.get<IntentStateRow>(SQL.intentState, intentId)
  if (row === undefined) {
    throw new StoreError({ operation, reason: "NotFound", detail: `no intent ${intentId}` })
  }
  if (row.status !== "open") {
    throw new StoreError({ operation, reason: "Constraint", detail: `intent ${intentId} is already ${row.status}` })
  }
  if (expect !== undefined && (row.environment_id !== expect.environmentId || row.transaction_id !== expect.transactionId)) {
    throw new StoreError({
      operation,
      reason: "Constraint",
      detail: `intent ${intentId} belongs to ${row.environment_id} / ${row.transaction_id}, ` +
        `the draft to ${expect.environmentId} / ${expect.transactionId}`
    })
  }
}

/** The `HistoryJournal` of the connection `sql`, storing blobs through `cache`. */
export const makeJournal = (sql: Sqlite["Service"], cache: SnapshotStore.ChunkCache): HistoryJournal["Service"] => {
  const openIntent = Effect.fnUntraced(function*(
    intent: JournalIntent,
    blobs: ReadonlyArray<Uint8Array>,
    knownHashes?: ReadonlyArray<Sha256Hash>
  ) {
    const operation = "HistoryStore.openIntent"
    if (
      intent.draft.environmentId !== intent.environmentId || intent.draft.transactionId !== intent.transactionId
    ) {
      return yield* new StoreError({
        operation,
        reason: "Schema",
        detail: `intent ${intent.intentId}: the draft's environment/transaction differ from the intent's`
      })
    }
    const json = yield* Effect.try({
      try: () => encodeIntentJson(intent),
      catch: (e) => new StoreError({ operation, reason: "Schema", detail: `the intent is invalid: ${messageOf(e)}`, cause: e })
    })
    // A draft that could never become a record must fail here, before the engine renames
    // anything, not at commit time with the files already in place.
    yield* Effect.try({
      try: () => checkDraft(intent.draft, intent.createdAt),
      catch: (e) =>
        new StoreError({
          operation,
          reason: "Schema",
          detail: `the intent's draft can never be committed: ${messageOf(e)}`,
          cause: e
        })
    })
    // The engine hashed these bytes a moment ago in this process; hashing 2 x 5 MB again
    // costs ~5 ms per large apply.
    const hashes = knownHashes !== undefined && knownHashes.length === blobs.length ? knownHashes : blobs.map((bytes) => sha256(bytes))
    const given = new Set<string>(hashes)
    // A path's post content is stored as an edit of its pre content (shared chunks, chunk
    // deltas, a manifest delta): the previous version is the one most like it.
    const bases = new Map<string, Sha256Hash>()
    for (const entry of intent.entries) {
      if (entry.pre !== null && entry.post !== null && entry.pre !== entry.post) bases.set(entry.post, entry.pre)
    }
    yield* storeBlobs(sql, operation, blobs, hashes, bases, cache, (c) => {
      // "After this returns, a crash can always be repaired": that needs every pre and post
      // content of the intent in the store, given now or stored earlier.
      for (const entry of intent.entries) {
        for (const hash of [entry.pre, entry.post]) {
          if (hash === null || given.has(hash)) continue
          if (SnapshotStore.stateOf(c, hash) !== "stored") {
            throw new StoreError({
              operation,
              reason: "NotFound",
              detail: `intent ${intent.intentId}: ${entry.path} needs blob ${hash}, which is neither given nor stored`
            })
          }
          given.add(hash)
        }
      }
      c.run(SQL.insertIntent, intent.intentId, intent.environmentId, intent.transactionId, intent.createdAt, json)
    })
  })

  const commitIntent = Effect.fnUntraced(function*(
    intentId: string,
    draft: RecordDraft,
    committedAtMillis: number,
    close?: { readonly status: "uncertain"; readonly note: string },
    options?: { readonly recordGaps?: boolean }
  ) {
    const operation = "HistoryStore.commitIntent"
    const prepared = yield* prepareRecord(operation, draft, committedAtMillis)
    // Not fsynced: the intent is already durable and holds everything this record says, so if
    // a power loss drops this commit, startup repair finishes the record from the journal. A
    // process crash cannot lose it (WAL frames reach the OS before COMMIT returns).
    const ordinal = yield* sql.transaction(operation, (c) => {
      requireOpenIntent(c, operation, intentId, draft)
      // An edit made outside forkjoin since history last saw a path is recorded before this write.
      if (options?.recordGaps === true) recordGapsBeforeWrite(c, draft, intentId, committedAtMillis)
      const next = insertRecord(c, prepared, intentId)
      c.run(SQL.closeIntentWithRecord, close?.status ?? "committed", prepared.committedAt, close?.note ?? null, intentId)
      return next
    }, { durable: false })
    return recordOf(draft, ordinal, prepared.committedAt)
  })

  const closeIntent = Effect.fnUntraced(function*(
    intentId: string,
    status: "aborted" | "uncertain",
    note: string
  ) {
    const operation = "HistoryStore.closeIntent"
    const closedAt = utcTimestampFromMillis(yield* Clock.currentTimeMillis)
    yield* sql.transaction(operation, (c) => {
      requireOpenIntent(c, operation, intentId)
      c.run(SQL.closeIntent, status, closedAt, note, intentId)
    })
  })

  const openIntents = Effect.fnUntraced(function*(environmentId: EnvironmentId) {
    const operation = "HistoryStore.openIntents"
    return yield* sql.run(operation, (c) =>
      c.all<{ readonly intent_json: string }>(SQL.openIntents, environmentId).map((row): JournalIntent => {
        try {
          return decodeIntentJson(row.intent_json)
        } catch (e) {
          throw new StoreError({ operation, reason: "Corrupt", detail: `an open intent does not decode: ${messageOf(e)}`, cause: e })
        }
      }))
  })

  return HistoryJournal.of({ openIntent, commitIntent, closeIntent, openIntents })
}
