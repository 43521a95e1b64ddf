/**
 * The SQLite implementation of `HistoryStore` (SPEC §4.2–4.3): blobs once per sha256, the
 * journal of intents, and PatchHistoryRecords whose per-environment `commitOrdinal` is
 * allocated as `MAX + 1` under `BEGIN IMMEDIATE`, so concurrent processes never collide or
 * leave gaps. Rows are encoded with the record schemas and validated again on read.
 *
 * It owns the store's transactions. It does not own the table layout (migrations 1–5, in
 * `internal/historyMigrations.ts`), the connection policy (`Sqlite`), how snapshot bytes are
 * laid out (`SnapshotStore`), nor the history views, which read the same tables later.
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
import { recordGapsBeforeWrite } from "./Gaps.ts"
import {
  HistoryReset,
  type HistoryIdentity,
  type HistoryResetReason,
  HistoryStore,
  type RetentionReport,
  type RetentionRequest,
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
  recordOf
} from "./internal/records.ts"
import * as SnapshotStore from "./SnapshotStore.ts"
import { sqliteOptions } from "./internal/historyMigrations.ts"
import { type Connection, Sqlite, type SqliteOptions } from "./Sqlite.ts"

// -------------------------------------------------------------------------------------
// SQL (constant strings: each is prepared once per connection)
// -------------------------------------------------------------------------------------

const SQL = {
  insertIntent: "INSERT INTO intents (intent_id, environment_id, transaction_id, status, created_at, intent_json) " +
    "VALUES (?, ?, ?, 'open', ?, ?)",
  intentState: "SELECT environment_id, transaction_id, status FROM intents WHERE intent_id = ?",
  closeIntent: "UPDATE intents SET status = ?, closed_at = ?, note = ? WHERE intent_id = ? AND status = 'open'",
  // Closing with a record: the record holds the draft, so the journal copy goes (see migration 4).
  closeIntentWithRecord: "UPDATE intents SET status = ?, closed_at = ?, note = ?, intent_json = '' " +
    "WHERE intent_id = ? AND status = 'open'",
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
  allRecords: "SELECT environment_id, record_id, commit_ordinal, record_json FROM records ORDER BY environment_id, commit_ordinal",
  allOpenIntents: "SELECT intent_json FROM intents WHERE status = 'open'",
  changePairs: "SELECT json_extract(c.value, '$.after.hash') AS after, " +
    "COALESCE(json_extract(c.value, '$.before.hash'), json_extract(c.value, '$.overwritten.hash')) AS before " +
    "FROM records r, json_each(r.record_json, '$.changes') c " +
    "WHERE json_extract(c.value, '$.after.hash') IS NOT NULL " +
    "AND COALESCE(json_extract(c.value, '$.before.hash'), json_extract(c.value, '$.overwritten.hash')) IS NOT NULL " +
    "ORDER BY r.rowid",
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

/** One blob of a write, with the blob it was edited from (its `base`, at `baseAt` when among them too). */
interface BlobStep {
  readonly at: number
  readonly base: Sha256Hash | undefined
  readonly baseAt: number | undefined
}

/**
 * The order to store blobs in: each after the blob it was edited from when that is among them
 * too, so the later version can be stored as an edit of the earlier one.
 */
const inBaseOrder = (hashes: ReadonlyArray<Sha256Hash>, bases: ReadonlyMap<string, Sha256Hash>): Array<BlobStep> => {
  const index = new Map<string, number>()
  hashes.forEach((h, i) => {
    if (!index.has(h)) index.set(h, i)
  })
  const done = new Set<number>()
  const order: Array<BlobStep> = []
  const visit = (i: number): void => {
    if (done.has(i)) return
    // Marked first: two files swapping contents make a cycle of bases.
    done.add(i)
    const base = bases.get(hashes[i]!)
    const baseAt = base === undefined ? undefined : index.get(base)
    if (baseAt !== undefined) visit(baseAt)
    order.push({ at: i, base, baseAt })
  }
  for (let i = 0; i < hashes.length; i++) visit(i)
  return order
}

// Blobs from this size on are cut, hashed and compressed before the write transaction
// (`SnapshotStore.prepare`): a new 5 MB file then holds the lock ~5 ms instead of ~60. Below it
// that work takes about a millisecond, less than looking everything up twice.
const PREPARE_FROM = 256 * 1024

/**
 * Stores blobs (`bases`: a blob's hash to the blob it was edited from): the CPU-heavy work
 * first, on the connection but outside any transaction, then the writes in one transaction
 * (`operation`), which `after` extends.
 */
const storeBlobs = (
  sql: Sqlite["Service"],
  operation: string,
  blobs: ReadonlyArray<Uint8Array>,
  hashes: ReadonlyArray<Sha256Hash>,
  bases: ReadonlyMap<string, Sha256Hash>,
  cache: SnapshotStore.ChunkCache,
  after: (c: Connection) => void = () => undefined
): Effect.Effect<void, StoreError> =>
  Effect.gen(function*() {
    const order = inBaseOrder(hashes, bases)
    const optionsOf = (step: BlobStep) => ({ base: step.base, baseBytes: step.baseAt === undefined ? undefined : blobs[step.baseAt], cache })
    const large = order.some((step) => blobs[step.at]!.byteLength >= PREPARE_FROM)
    // Only saves work: whatever it could not do (a read failing, another writer meanwhile) the
    // transaction does, and reports.
    const prepared = !large ? new Map<number, SnapshotStore.Prepared>() : yield* sql.run(operation, (c) => {
      const done = new Map<number, SnapshotStore.Prepared>()
      const seen = new Set<string>()
      for (const step of order) {
        // Two paths with the same new content: the second `put` finds it stored.
        if (blobs[step.at]!.byteLength < PREPARE_FROM || seen.has(hashes[step.at]!)) continue
        seen.add(hashes[step.at]!)
        const basePrepared = step.baseAt === undefined ? undefined : done.get(step.baseAt)
        done.set(step.at, SnapshotStore.prepare(c, blobs[step.at]!, hashes[step.at]!, { ...optionsOf(step), basePrepared }))
      }
      return done
    }).pipe(Effect.orElseSucceed(() => new Map<number, SnapshotStore.Prepared>()))
    yield* sql.transaction(operation, (c) => {
      for (const step of order) SnapshotStore.put(c, blobs[step.at]!, hashes[step.at]!, { ...optionsOf(step), prepared: prepared.get(step.at) })
      after(c)
    })
  })

/** The database's size: its pages (the WAL's committed pages included). */
const databaseBytes = (c: Connection): number =>
  c.get<{ readonly page_count: number }>("PRAGMA page_count")!.page_count * c.get<{ readonly page_size: number }>("PRAGMA page_size")!.page_size

/**
 * Which snapshots records use: `old`, used by a record committed before `committedBefore`;
 * `needed`, whatever retention must keep: used by a newer record, the last recorded content of
 * a path (per environment, moves followed), or a pre or post content of an open intent.
 */
const snapshotUse = (
  c: Connection,
  operation: string,
  committedBefore: number
): { readonly old: Set<Sha256Hash>; readonly needed: Set<Sha256Hash> } => {
  const old = new Set<Sha256Hash>()
  const needed = new Set<Sha256Hash>()
  const latest = new Map<string, Sha256Hash | undefined>()
  for (const row of c.all<RecordRow & { readonly environment_id: string }>(SQL.allRecords)) {
    const record = decodeRecordRow(operation, row)
    const into = Date.parse(record.committedAt) < committedBefore ? old : needed
    for (const change of record.changes) {
      for (const s of [change.before, change.after, change.overwritten]) if (s !== undefined) into.add(s.hash)
      if (change.moveFrom !== undefined) latest.set(`${row.environment_id}\u0000${change.moveFrom}`, undefined)
      latest.set(`${row.environment_id}\u0000${change.path}`, change.after?.hash)
    }
  }
  for (const hash of latest.values()) if (hash !== undefined) needed.add(hash)
  for (const row of c.all<{ readonly intent_json: string }>(SQL.allOpenIntents)) {
    let intent: JournalIntent
    try {
      intent = decodeIntentJson(row.intent_json)
    } catch (e) {
      // An open intent that does not decode could need anything: prune nothing.
      throw new StoreError({ operation, reason: "Corrupt", detail: `an open intent does not decode: ${messageOf(e)}`, cause: e })
    }
    for (const entry of intent.entries) for (const h of [entry.pre, entry.post]) if (h !== null) needed.add(h)
  }
  return { old, needed }
}

// Decompressed chunks a store keeps in memory (see `SnapshotStore.makeChunkCache`).
const CHUNK_CACHE_BYTES = 32 * 1024 * 1024

// Legacy blobs move in steps of at most this many rows and about this many bytes: each step is
// one transaction, short enough not to starve other writers, and a kill loses at most one.
const MOVE_STEP = { rows: 256, bytes: 16 * 1024 * 1024 } as const

/**
 * For the move of legacy blobs: each snapshot a record changed into, mapped to the snapshot
 * it changed from (the base its chunks and manifest are best stored against).
 */
const legacyBases = (c: Connection): Map<string, Sha256Hash> => {
  const bases = new Map<string, Sha256Hash>()
  for (const row of c.all<{ readonly after: Sha256Hash; readonly before: Sha256Hash }>(SQL.changePairs)) {
    if (!bases.has(row.after) && row.after !== row.before) bases.set(row.after, row.before)
  }
  return bases
}

/**
 * Finishes migration 4 in place: moves what is left of the first release's `blobs` into the
 * snapshot store, one transaction per step (`SnapshotStore.moveLegacyBlobs`), then gives the
 * freed pages back to the filesystem once the table is empty. Damaged rows stay (their reads
 * keep failing as `Corrupt`). `make` runs it, so every store open finishes an interrupted move.
 *
 * @category constructors
 * @since 0.1.0
 */
export const moveLegacyBlobs = (
  sql: typeof Sqlite.Service
): Effect.Effect<{ readonly moved: number; readonly damaged: number }, StoreError> =>
  Effect.gen(function*() {
    const operation = "HistoryStore.moveLegacyBlobs"
    if (!(yield* sql.run(operation, SnapshotStore.hasLegacyBlobs))) return { moved: 0, damaged: 0 }
    const bases = yield* sql.run(operation, legacyBases)
    let after = 0
    let moved = 0
    let damaged = 0
    for (;;) {
      const step = yield* sql.transaction(operation, (c) => SnapshotStore.moveLegacyBlobs(c, bases, after, MOVE_STEP))
      moved += step.moved
      damaged += step.damaged
      if (step.last === undefined) break
      after = step.last
    }
    if (moved > 0 && !(yield* sql.run(operation, SnapshotStore.hasLegacyBlobs))) {
      // The moved rows left free pages as large as the old table: give them back once.
      yield* sql.run(`${operation}:vacuum`, (c) => c.exec("VACUUM"))
    }
    return { moved, damaged }
  })

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
export const make: Effect.Effect<typeof HistoryStore.Service, StoreError, Sqlite> = Effect.gen(function*() {
  const sql = yield* Sqlite
  yield* moveLegacyBlobs(sql)
  // Versions of a file share most chunks: reading one after another decompresses only what differs.
  const cache = SnapshotStore.makeChunkCache(CHUNK_CACHE_BYTES)
  // Methods are `fnUntraced`: a traced `Effect.fn` span costs ~10 us per call, ~15% of a store
  // call's CPU on the engine's hot path (two calls per durable apply). Failures still name
  // their step in `StoreError.operation`, and the engine's own spans cover these calls.

  const putBlobs = Effect.fnUntraced(function*(blobs: ReadonlyArray<Uint8Array>) {
    const hashes = blobs.map((bytes) => sha256(bytes))
    if (blobs.length === 0) return hashes
    yield* storeBlobs(sql, "HistoryStore.putBlobs", blobs, hashes, new Map(), cache)
    return hashes
  })

  const getBlob = Effect.fnUntraced(function*(hash: Sha256Hash) {
    const operation = "HistoryStore.getBlob"
    // Repair and rollback restore files from these bytes: `read` never hands out content that
    // is not what its address says.
    const found = yield* sql.run(operation, (c) => SnapshotStore.read(c, operation, hash, cache))
    switch (found._tag) {
      case "Stored":
        return Option.some(found.bytes)
      case "Missing":
        return Option.none<Uint8Array>()
      case "Pruned":
        return yield* new StoreError({
          operation,
          reason: "Pruned",
          detail: `the content of ${hash} was dropped by retention at ${found.prunedAt} (forkjoin gc --prune-snapshots-older-than)`
        })
    }
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

  const pruneSnapshots = Effect.fnUntraced(function*(request: RetentionRequest) {
    const operation = "HistoryStore.pruneSnapshots"
    const at = utcTimestampFromMillis(yield* Clock.currentTimeMillis)
    const databaseBytesBefore = yield* sql.run(operation, databaseBytes)
    const counts = yield* sql.transaction(operation, (c) => {
      const use = snapshotUse(c, operation, request.committedBefore)
      for (const hash of request.keep ?? []) use.needed.add(hash)
      return SnapshotStore.prune(c, operation, [...use.old].filter((h) => !use.needed.has(h)), at)
    })
    // Deleted chunks leave free pages: give them back to the filesystem.
    if (counts.chunks > 0) yield* sql.run(`${operation}:vacuum`, (c) => c.exec("VACUUM"))
    return {
      snapshotsPruned: counts.snapshots,
      chunksRemoved: counts.chunks,
      bytesFreed: counts.bytes,
      databaseBytesBefore,
      databaseBytesAfter: yield* sql.run(operation, databaseBytes)
    } satisfies RetentionReport
  })

  return HistoryStore.of({
    pruneSnapshots,
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
 * The store over an already provided `Sqlite` opened with `sqliteOptions()`; building it
 * finishes moving a first-release database's blobs into the snapshot store.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerNoDeps: Layer.Layer<HistoryStore, StoreError, Sqlite> = Layer.effect(HistoryStore, make)

export {
  /**
   * The `Sqlite` options this store needs (its migrations), merged over `options`.
   *
   * @category constructors
   * @since 0.1.0
   */
  sqliteOptions
} from "./internal/historyMigrations.ts"

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
