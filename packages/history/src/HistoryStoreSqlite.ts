/**
 * The SQLite implementation of the history store (SPEC §4.2–4.3): blobs once per sha256, the
 * journal of intents, and PatchHistoryRecords whose per-environment `commitOrdinal` is
 * allocated as `MAX + 1` under `BEGIN IMMEDIATE`, so concurrent processes never collide or
 * leave gaps. Rows are encoded with the record schemas and validated again on read.
 *
 * This module opens the store: it finishes moving a first-release database's blobs, then builds
 * the four services over one connection, one implementation file each in `internal/store/`
 * (`HistoryContent`, `HistoryJournal`, `HistoryRecords`, `HistoryIdentityStore`), with
 * `HistoryStore`, all four in one, and provides them as layers. It does not own the table
 * layout (migrations 1–5, in `internal/historyMigrations.ts`), the connection policy
 * (`Sqlite`), how snapshot bytes are laid out (`SnapshotStore`), nor the history views, which
 * read the same tables later.
 *
 * @since 0.1.0
 */
import type { Sha256Hash } from "@forkjoin/schema"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import {
  HistoryContent,
  HistoryIdentityStore,
  HistoryJournal,
  HistoryRecords,
  type HistoryServices,
  HistoryStore,
  type StoreError
} from "./HistoryStore.ts"
import { sqliteOptions } from "./internal/historyMigrations.ts"
import { makeContent } from "./internal/store/contentSqlite.ts"
import { makeIdentity } from "./internal/store/identitySqlite.ts"
import { makeJournal } from "./internal/store/journalSqlite.ts"
import { makeRecords } from "./internal/store/recordsSqlite.ts"
import * as SnapshotStore from "./SnapshotStore.ts"
import { type Connection, Sqlite, type SqliteOptions } from "./Sqlite.ts"

const SQL = {
  changePairs: "SELECT json_extract(c.value, '$.after.hash') AS after, " +
    "COALESCE(json_extract(c.value, '$.before.hash'), json_extract(c.value, '$.overwritten.hash')) AS before " +
    "FROM records r, json_each(r.record_json, '$.changes') c " +
    "WHERE json_extract(c.value, '$.after.hash') IS NOT NULL " +
    "AND COALESCE(json_extract(c.value, '$.before.hash'), json_extract(c.value, '$.overwritten.hash')) IS NOT NULL " +
    "ORDER BY r.rowid"
} as const

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
 * The four services over the `Sqlite` service, with `HistoryStore` composed of them; building
 * it first finishes an interrupted move of legacy blobs.
 */
const services: Effect.Effect<Context.Context<HistoryServices>, StoreError, Sqlite> = Effect.gen(function*() {
  const sql = yield* Sqlite
  yield* moveLegacyBlobs(sql)
  // Versions of a file share most chunks: reading one after another decompresses only what differs.
  const cache = SnapshotStore.makeChunkCache(CHUNK_CACHE_BYTES)
  // Methods are `fnUntraced`: a traced `Effect.fn` span costs ~10 us per call, ~15% of a store
  // call's CPU on the engine's hot path (two calls per durable apply). Failures still name
  // their step in `StoreError.operation`, and the engine's own spans cover these calls.
  const content = makeContent(sql, cache)
  const journal = makeJournal(sql, cache)
  const records = makeRecords(sql)
  const identity = makeIdentity(sql)
  return Context.make(HistoryContent, content).pipe(
    Context.add(HistoryJournal, journal),
    Context.add(HistoryRecords, records),
    Context.add(HistoryIdentityStore, identity),
    Context.add(HistoryStore, HistoryStore.of({ ...content, ...journal, ...records, ...identity }))
  )
})

/**
 * Builds the store over the `Sqlite` service (whose migrations must be this module's; use
 * `layerSqlite`/`layerMemory` unless you compose the connection yourself).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make: Effect.Effect<typeof HistoryStore.Service, StoreError, Sqlite> = Effect.map(services, Context.get(HistoryStore))

// -------------------------------------------------------------------------------------
// layers
// -------------------------------------------------------------------------------------

/**
 * The store, and each of its four services, over an already provided `Sqlite` opened with
 * `sqliteOptions()`; building it finishes moving a first-release database's blobs into the
 * snapshot store.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerNoDeps: Layer.Layer<HistoryServices, StoreError, Sqlite> = Layer.effectContext(services)

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
 * The store and its services in the database file `file` (parent directory created, migrated on open, closed
 * when the layer is released). Several processes may use one file at once.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerSqlite = (
  file: string,
  options?: Omit<SqliteOptions, "migrations">
): Layer.Layer<HistoryServices, StoreError> => layerNoDeps.pipe(Layer.provide(Sqlite.layer(file, sqliteOptions(options))))

/**
 * A private in-memory SQLite store (tests): same schema and code path as `layerSqlite`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerMemory: Layer.Layer<HistoryServices> = layerSqlite(":memory:").pipe(Layer.orDie)

