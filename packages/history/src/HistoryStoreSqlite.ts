/**
 * The SQLite implementation of `HistoryStore` (SPEC §4.2–4.3): blobs once per sha256, the
 * journal of intents, and PatchHistoryRecords whose per-environment `commitOrdinal` is
 * allocated as `MAX + 1` under `BEGIN IMMEDIATE`, so concurrent processes never collide or
 * leave gaps. Rows are encoded with the record schemas and validated again on read.
 *
 * It owns the table layout (migration 1) and the store's transactions. It does not own the
 * connection policy (`Sqlite`) nor the history views, which read the same tables later.
 *
 * Layout (migration 1):
 * - `blobs(hash PK, size, bytes)`: content by `sha256:<hex>`, inserted with `INSERT OR IGNORE`;
 * - `intents(intent_id PK, environment_id, transaction_id, status, created_at, closed_at, note,
 *   intent_json)`, with a partial index over the open ones (startup repair);
 * - `records(record_id PK, intent_id → intents, environment_id, commit_ordinal,
 *   thread_id, turn_id, transaction_id, committed_at, outcome, bytes_written, files_written,
 *   record_json, UNIQUE(environment_id, commit_ordinal))`, indexed for thread, turn and
 *   transaction lookups. The columns are projections of `record_json`, which is the record.
 *
 * Migration 2 (history views): `threads(thread_id PK, parent_thread_id, created_at)`;
 * `records.exactness/provenance/verifies` (coverage without parsing JSON);
 * `record_changes(environment_id, path, commit_ordinal, thread_id, move_from)` (one row per
 * change: file history and move following); `provider_events(record_id PK, format, payload)`
 * (the raw provider event an aggregate record was ingested from).
 *
 * Migration 3 (history identity, issue 9): `history_identity(singleton = 1, history_id,
 * created_at)`: the database's one history id, minted on first use, so a workspace can tell
 * its own history from an emptied or swapped database; `history_resets(environment_id,
 * reset_at, history_id, previous_history_id, previous_last_ordinal, reason)`: each deliberate
 * reset; `acknowledgements(record_id PK → records, acknowledged_at, note)`: which
 * `commit_state_uncertain` records someone checked, with a partial index over those records.
 *
 * @since 0.1.0
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import {
  type EnvironmentId,
  JournalIntentFromJson,
  type JournalIntent,
  type RecordDraft,
  type RecordId,
  type ThreadId,
  type Sha256Hash,
  type TransactionId,
  type TurnId,
  UtcTimestamp,
  utcTimestampFromMillis
} from "@forkjoin/schema"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { randomBytes } from "node:crypto"
import * as path from "node:path"
import {
  HistoryReset,
  type HistoryIdentity,
  type HistoryResetReason,
  HistoryStore,
  StoreError,
  type UncertainRecord,
  type Usage
} from "./HistoryStore.ts"
import {
  checkDraft,
  decodeRecordRow,
  insertRecord,
  messageOf,
  prepareRecord,
  prepareRecordSync,
  type RecordRow,
  recordOf,
  SQL as RECORD_SQL
} from "./internal/records.ts"
import { type Connection, type Migration, Sqlite, type SqliteOptions } from "./Sqlite.ts"

// -------------------------------------------------------------------------------------
// schema (migrations)
// -------------------------------------------------------------------------------------

const migrations: ReadonlyArray<Migration> = [
  {
    version: 1,
    name: "blobs, intents, records",
    up: (c) =>
      c.exec(`
        CREATE TABLE blobs (
          hash  TEXT PRIMARY KEY,
          size  INTEGER NOT NULL CHECK (size >= 0),
          bytes BLOB NOT NULL
        );
        CREATE TABLE intents (
          intent_id      TEXT PRIMARY KEY,
          environment_id TEXT NOT NULL,
          transaction_id TEXT NOT NULL,
          status         TEXT NOT NULL CHECK (status IN ('open', 'committed', 'aborted', 'uncertain')),
          created_at     TEXT NOT NULL,
          closed_at      TEXT,
          note           TEXT,
          intent_json    TEXT NOT NULL
        );
        CREATE INDEX intents_open ON intents (environment_id, created_at) WHERE status = 'open';
        CREATE TABLE records (
          record_id      TEXT PRIMARY KEY,
          intent_id      TEXT REFERENCES intents (intent_id),
          environment_id TEXT NOT NULL,
          commit_ordinal INTEGER NOT NULL CHECK (commit_ordinal > 0),
          thread_id      TEXT NOT NULL,
          turn_id        TEXT NOT NULL,
          transaction_id TEXT NOT NULL,
          committed_at   TEXT NOT NULL,
          outcome        TEXT NOT NULL,
          bytes_written  INTEGER NOT NULL,
          files_written  INTEGER NOT NULL,
          record_json    TEXT NOT NULL,
          UNIQUE (environment_id, commit_ordinal)
        );
        CREATE INDEX records_thread ON records (environment_id, thread_id, commit_ordinal);
        CREATE INDEX records_turn ON records (environment_id, turn_id, commit_ordinal);
        CREATE INDEX records_transaction ON records (environment_id, transaction_id, commit_ordinal);
      `)
  },
  {
    version: 2,
    name: "threads, record columns for coverage, per-path change index, provider events",
    up: (c) =>
      c.exec(`
        CREATE TABLE threads (
          thread_id        TEXT PRIMARY KEY,
          parent_thread_id TEXT,
          created_at       TEXT NOT NULL
        );
        CREATE INDEX threads_parent ON threads (parent_thread_id) WHERE parent_thread_id IS NOT NULL;
        ALTER TABLE records ADD COLUMN exactness TEXT;
        ALTER TABLE records ADD COLUMN provenance TEXT;
        ALTER TABLE records ADD COLUMN verifies TEXT;
        UPDATE records SET
          exactness = json_extract(record_json, '$.exactness'),
          provenance = json_extract(record_json, '$.provenance'),
          verifies = json_extract(record_json, '$.links.verifies');
        CREATE INDEX records_verifies ON records (verifies) WHERE verifies IS NOT NULL;
        CREATE TABLE record_changes (
          environment_id TEXT NOT NULL,
          path           TEXT NOT NULL,
          commit_ordinal INTEGER NOT NULL,
          thread_id      TEXT NOT NULL,
          move_from      TEXT,
          PRIMARY KEY (environment_id, path, commit_ordinal)
        ) WITHOUT ROWID;
        CREATE INDEX record_changes_moved_in ON record_changes (environment_id, path, commit_ordinal)
          WHERE move_from IS NOT NULL;
        CREATE INDEX record_changes_moved_out ON record_changes (environment_id, move_from, commit_ordinal)
          WHERE move_from IS NOT NULL;
        INSERT INTO record_changes (environment_id, path, commit_ordinal, thread_id, move_from)
          SELECT r.environment_id, json_extract(c.value, '$.path'), r.commit_ordinal, r.thread_id,
                 json_extract(c.value, '$.moveFrom')
          FROM records r, json_each(r.record_json, '$.changes') c;
        CREATE TABLE provider_events (
          record_id TEXT PRIMARY KEY REFERENCES records (record_id),
          format    TEXT NOT NULL,
          payload   TEXT NOT NULL
        );
      `)
  },
  {
    version: 3,
    name: "history identity, resets, acknowledgements of uncertain outcomes",
    up: (c) =>
      c.exec(`
        CREATE TABLE history_identity (
          singleton  INTEGER PRIMARY KEY CHECK (singleton = 1),
          history_id TEXT NOT NULL,
          created_at TEXT NOT NULL
        );
        CREATE TABLE history_resets (
          environment_id        TEXT NOT NULL,
          reset_at              TEXT NOT NULL,
          history_id            TEXT NOT NULL,
          previous_history_id   TEXT NOT NULL,
          previous_last_ordinal INTEGER NOT NULL,
          reason                TEXT NOT NULL CHECK (reason IN ('missing', 'different', 'older'))
        );
        CREATE INDEX history_resets_by_environment ON history_resets (environment_id, reset_at);
        CREATE TABLE acknowledgements (
          record_id       TEXT PRIMARY KEY REFERENCES records (record_id),
          acknowledged_at TEXT NOT NULL,
          note            TEXT NOT NULL
        );
        CREATE INDEX records_uncertain ON records (environment_id, commit_ordinal)
          WHERE outcome = 'commit_state_uncertain';
      `)
  }
]

// -------------------------------------------------------------------------------------
// SQL (constant strings: each is prepared once per connection)
// -------------------------------------------------------------------------------------

const SQL = {
  hasBlob: "SELECT 1 AS present FROM blobs WHERE hash = ?",
  getBlob: "SELECT size, bytes FROM blobs WHERE hash = ?",
  insertIntent: "INSERT INTO intents (intent_id, environment_id, transaction_id, status, created_at, intent_json) " +
    "VALUES (?, ?, ?, 'open', ?, ?)",
  intentState: "SELECT environment_id, transaction_id, status FROM intents WHERE intent_id = ?",
  closeIntent: "UPDATE intents SET status = ?, closed_at = ?, note = ? WHERE intent_id = ? AND status = 'open'",
  openIntents: "SELECT intent_json FROM intents WHERE environment_id = ? AND status = 'open' ORDER BY created_at, rowid",
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
  historyId: "SELECT history_id FROM history_identity WHERE singleton = 1",
  insertHistoryId: "INSERT OR IGNORE INTO history_identity (singleton, history_id, created_at) VALUES (1, ?, ?)",
  lastOrdinal: "SELECT COALESCE(MAX(commit_ordinal), 0) AS last FROM records WHERE environment_id = ?",
  openIntentCount: "SELECT COUNT(*) AS n FROM intents WHERE environment_id = ? AND status = 'open'",
  insertReset: "INSERT INTO history_resets (environment_id, reset_at, history_id, previous_history_id, " +
    "previous_last_ordinal, reason) VALUES (?, ?, ?, ?, ?, ?)",
  resets: "SELECT environment_id, reset_at, history_id, previous_history_id, previous_last_ordinal, reason " +
    "FROM history_resets WHERE environment_id = ? ORDER BY reset_at, rowid",
  uncertainRecords: "SELECT r.record_id, r.commit_ordinal, r.record_json, a.acknowledged_at, a.note FROM records r " +
    "LEFT JOIN acknowledgements a ON a.record_id = r.record_id " +
    "WHERE r.environment_id = ? AND r.outcome = 'commit_state_uncertain' ORDER BY r.commit_ordinal",
  uncertainRecord: "SELECT r.record_id, r.commit_ordinal, r.record_json, a.acknowledged_at, a.note FROM records r " +
    "LEFT JOIN acknowledgements a ON a.record_id = r.record_id " +
    "WHERE r.environment_id = ? AND r.record_id = ? AND r.outcome = 'commit_state_uncertain'",
  insertAcknowledgement: "INSERT OR IGNORE INTO acknowledgements (record_id, acknowledged_at, note) VALUES (?, ?, ?)",
  isAncestorOf: "WITH RECURSIVE up(t) AS (SELECT ? UNION SELECT parent_thread_id FROM threads JOIN up ON thread_id = up.t " +
    "WHERE parent_thread_id IS NOT NULL) SELECT 1 AS found FROM up WHERE t = ? LIMIT 1"
} as const

/** A `commit_state_uncertain` record row with its acknowledgement, if any. */
interface UncertainRow extends RecordRow {
  readonly acknowledged_at: string | null
  readonly note: string | null
}

interface ResetRow {
  readonly environment_id: string
  readonly reset_at: string
  readonly history_id: string
  readonly previous_history_id: string
  readonly previous_last_ordinal: number
  readonly reason: string
}

interface IntentStateRow {
  readonly environment_id: string
  readonly transaction_id: string
  readonly status: string
}

// -------------------------------------------------------------------------------------
// encoding
// -------------------------------------------------------------------------------------

const encodeIntentJson = Schema.encodeSync(JournalIntentFromJson)
const decodeIntentJson = Schema.decodeUnknownSync(JournalIntentFromJson)
const decodeReset = Schema.decodeUnknownSync(HistoryReset)
const decodeTimestamp = Schema.decodeUnknownSync(UtcTimestamp)

const resetOf = (operation: string, row: ResetRow): HistoryReset => {
  try {
    return decodeReset({
      environmentId: row.environment_id,
      resetAt: row.reset_at,
      historyId: row.history_id,
      previousHistoryId: row.previous_history_id,
      previousLastOrdinal: row.previous_last_ordinal,
      reason: row.reason
    })
  } catch (e) {
    throw new StoreError({ operation, reason: "Corrupt", detail: `a history reset row does not decode: ${messageOf(e)}`, cause: e })
  }
}

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

/** A fresh history id: 128 random bits, so two databases never share one by chance. */
const mintHistoryId = (): string => `hist-${randomBytes(16).toString("hex")}`

/** The history id of the database, minting it first when it has none. Call inside a transaction. */
const ensureHistoryId = (c: Connection, at: string): string => {
  c.run(SQL.insertHistoryId, mintHistoryId(), at)
  return c.get<{ readonly history_id: string }>(SQL.historyId)!.history_id
}

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

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

/**
 * Builds the store over the `Sqlite` service (whose migrations must be this module's; use
 * `layerSqlite`/`layerMemory` unless you compose the connection yourself).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make: Effect.Effect<typeof HistoryStore.Service, never, Sqlite> = Effect.gen(function*() {
  const sql = yield* Sqlite
  // Methods are `fnUntraced`: a traced `Effect.fn` span costs ~10 us per call, ~15% of a store
  // call's CPU on the engine's hot path (two calls per durable apply). Failures still name
  // their step in `StoreError.operation`, and the engine's own spans cover these calls.

  const putBlobs = Effect.fnUntraced(function*(blobs: ReadonlyArray<Uint8Array>) {
    const hashes = blobs.map((bytes) => sha256(bytes))
    if (blobs.length === 0) return hashes
    yield* sql.transaction("HistoryStore.putBlobs", (c) => {
      blobs.forEach((bytes, i) => c.run(RECORD_SQL.insertBlob, hashes[i]!, bytes.byteLength, bytes))
    })
    return hashes
  })

  const getBlob = Effect.fnUntraced(function*(hash: Sha256Hash) {
    const row = yield* sql.run(
      "HistoryStore.getBlob",
      (c) => c.get<{ readonly size: number; readonly bytes: Uint8Array }>(SQL.getBlob, hash)
    )
    if (row === undefined) return Option.none<Uint8Array>()
    const bytes = new Uint8Array(row.bytes.buffer, row.bytes.byteOffset, row.bytes.byteLength)
    // Repair and rollback restore files from these bytes: never hand out content that is not
    // what its address says.
    if (bytes.byteLength !== row.size || sha256(bytes) !== hash) {
      return yield* new StoreError({
        operation: "HistoryStore.getBlob",
        reason: "Corrupt",
        detail: `blob ${hash} does not match its hash or size`
      })
    }
    return Option.some(bytes)
  })

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
    yield* sql.transaction(operation, (c) => {
      // Skip blobs already stored: INSERT OR IGNORE would still copy the bytes into SQLite.
      blobs.forEach((bytes, i) => {
        if (c.get(SQL.hasBlob, hashes[i]!) === undefined) c.run(RECORD_SQL.insertBlob, hashes[i]!, bytes.byteLength, bytes)
      })
      // "After this returns, a crash can always be repaired": that needs every pre and post
      // content of the intent in the store, given now or stored earlier.
      for (const entry of intent.entries) {
        for (const hash of [entry.pre, entry.post]) {
          if (hash === null || given.has(hash)) continue
          if (c.get(SQL.hasBlob, hash) === undefined) {
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
    close?: { readonly status: "uncertain"; readonly note: string }
  ) {
    const operation = "HistoryStore.commitIntent"
    const prepared = yield* prepareRecord(operation, draft, committedAtMillis)
    // Not fsynced: the intent is already durable and holds everything this record says, so if
    // a power loss drops this commit, startup repair finishes the record from the journal. A
    // process crash cannot lose it (WAL frames reach the OS before COMMIT returns).
    const ordinal = yield* sql.transaction(operation, (c) => {
      requireOpenIntent(c, operation, intentId, draft)
      const next = insertRecord(c, prepared, intentId)
      c.run(SQL.closeIntent, close?.status ?? "committed", prepared.committedAt, close?.note ?? null, intentId)
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

  const identityIn = (c: Connection, location: string | undefined, environmentId: EnvironmentId): HistoryIdentity => ({
    location,
    historyId: c.get<{ readonly history_id: string }>(SQL.historyId)?.history_id,
    lastOrdinal: c.get<{ readonly last: number }>(SQL.lastOrdinal, environmentId)!.last,
    openIntents: c.get<{ readonly n: number }>(SQL.openIntentCount, environmentId)!.n
  })
  const location = sql.file === ":memory:" || sql.file === "" ? undefined : path.resolve(sql.file)

  const identity = Effect.fnUntraced(function*(environmentId: EnvironmentId) {
    return yield* sql.run("HistoryStore.identity", (c) => identityIn(c, location, environmentId))
  })

  const establishIdentity = Effect.fnUntraced(function*(environmentId: EnvironmentId, atMillis: number) {
    const at = utcTimestampFromMillis(atMillis)
    return yield* sql.transaction("HistoryStore.establishIdentity", (c) => {
      ensureHistoryId(c, at)
      return identityIn(c, location, environmentId)
    })
  })

  const resetIdentity = Effect.fnUntraced(function*(
    environmentId: EnvironmentId,
    atMillis: number,
    previous: { readonly historyId: string; readonly lastOrdinal: number; readonly reason: HistoryResetReason }
  ) {
    const operation = "HistoryStore.resetIdentity"
    const at = utcTimestampFromMillis(atMillis)
    return yield* sql.transaction(operation, (c) => {
      const historyId = ensureHistoryId(c, at)
      c.run(SQL.insertReset, environmentId, at, historyId, previous.historyId, previous.lastOrdinal, previous.reason)
      return resetOf(operation, {
        environment_id: environmentId,
        reset_at: at,
        history_id: historyId,
        previous_history_id: previous.historyId,
        previous_last_ordinal: previous.lastOrdinal,
        reason: previous.reason
      })
    })
  })

  const historyResets = Effect.fnUntraced(function*(environmentId: EnvironmentId) {
    const operation = "HistoryStore.historyResets"
    return yield* sql.run(operation, (c) => c.all<ResetRow>(SQL.resets, environmentId).map((row) => resetOf(operation, row)))
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

  return HistoryStore.of({
    putBlobs,
    getBlob,
    openIntent,
    commitIntent,
    closeIntent,
    openIntents,
    appendRecord,
    appendRecords,
    registerThread,
    recordsByTransaction,
    recordsAfter,
    usage,
    identity,
    establishIdentity,
    resetIdentity,
    historyResets,
    uncertainRecords,
    acknowledge
  })
})

// -------------------------------------------------------------------------------------
// layers
// -------------------------------------------------------------------------------------

/**
 * The store over an already provided `Sqlite` opened with `sqliteOptions()`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerNoDeps: Layer.Layer<HistoryStore, never, Sqlite> = Layer.effect(HistoryStore, make)

/**
 * The `Sqlite` options this store needs (its migrations), merged over `options`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const sqliteOptions = (options?: Omit<SqliteOptions, "migrations">): SqliteOptions => ({ ...options, migrations })

/**
 * The store in the database file `file` (parent directory created, migrated on open, closed
 * when the layer is released). Several processes may use one file at once.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerSqlite = (
  file: string,
  options?: Omit<SqliteOptions, "migrations">
): Layer.Layer<HistoryStore, StoreError> => layerNoDeps.pipe(Layer.provide(Sqlite.layer(file, sqliteOptions(options))))

/**
 * A private in-memory SQLite store (tests): same schema and code path as `layerSqlite`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerMemory: Layer.Layer<HistoryStore> = layerSqlite(":memory:").pipe(Layer.orDie)
