/**
 * Our own tiny SQLite service over better-sqlite3 12 (SPEC §4.3, style #15): it opens one
 * database file, applies the connection policy (one PRAGMA per line, each with its reason),
 * brings the components it is opened with to their latest schema (`Migrator`), caches
 * prepared statements, and runs synchronous bodies inside `BEGIN IMMEDIATE` transactions with
 * SQLite errors mapped to `SqliteError`. Lock contention with other processes is waited out in
 * two tiers: a short synchronous `busy_timeout`, then asynchronous jittered retries up to the
 * busy timeout, so the event loop never stalls for long.
 *
 * It owns the connection and its policy. It does not own any table (components bring their
 * migrations) nor row decoding (callers decode rows with their schemas). It is not an ORM and
 * not `@effect/sql`: bodies are plain synchronous functions, which is what better-sqlite3 is,
 * and which guarantees that no other fiber interleaves statements inside a transaction.
 * `makeWith` opens the same connection speaking a caller's error instead (the history store's
 * `StoreError`), so a caller's bodies may throw that error and its stores see one error type.
 *
 * @since 0.1.0
 */
import type Database from "better-sqlite3"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { inTransaction, isMemory, makeConnection, openFile } from "./internal/database.ts"
import { type Component, migrateSync } from "./Migrator.ts"
import { cannotOpen, fromSqlite, isBusy, SqliteError } from "./SqliteError.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * A value SQLite can bind or return: TEXT, INTEGER/REAL, INTEGER as bigint, BLOB, NULL.
 *
 * @category models
 * @since 0.1.0
 */
export type SqlValue = string | number | bigint | Uint8Array | null

/**
 * The synchronous connection handed to `run` and `transaction` bodies. Every SQL string is
 * prepared once per connection and cached, so callers pass constant SQL and bind parameters.
 *
 * @category models
 * @since 0.1.0
 */
export interface Connection {
  /** Runs a statement; returns the number of changed rows. */
  readonly run: (sql: string, ...params: ReadonlyArray<SqlValue>) => number
  /** The first row, or `undefined`. The row type is the caller's claim: decode what matters. */
  readonly get: <Row>(sql: string, ...params: ReadonlyArray<SqlValue>) => Row | undefined
  /** Every row. The row type is the caller's claim: decode what matters. */
  readonly all: <Row>(sql: string, ...params: ReadonlyArray<SqlValue>) => Array<Row>
  /** Runs a script of statements without caching (migrations). */
  readonly exec: (sql: string) => void
}

/**
 * Per-transaction options. `durable: false` commits without waiting for the disk
 * (`synchronous = NORMAL` in WAL: safe against process crashes, not against power loss);
 * only for writes that something durable already allows to be redone.
 *
 * @category models
 * @since 0.1.0
 */
export interface TransactionOptions {
  readonly durable?: boolean
}

/**
 * How to open a database: the components to migrate on open, in order, how long, in total, a
 * call may wait for another process's write lock before failing `Busy` (default 10 s), and
 * whether commits wait for the disk.
 *
 * @category models
 * @since 0.1.0
 */
export interface OpenOptions {
  readonly components?: ReadonlyArray<Component>
  readonly busyTimeoutMs?: number
  /**
   * `normal`: every commit without waiting for the disk (safe against process crashes, not
   * against power loss), for a database whose every write something durable allows to be redone
   * (a cluster run's join steps: each is idempotent through the history). Default `full`.
   */
  readonly durability?: "full" | "normal"
}

/**
 * One open database, failing with `E`.
 *
 * @category models
 * @since 0.1.0
 */
export interface Database<E> {
  /** The file as opened (`:memory:` for an in-memory database). */
  readonly file: string
  /** The version of each component it was opened with, after migrating it. */
  readonly versions: Readonly<Record<string, number>>
  /**
   * Runs `body` without an explicit transaction (each statement is atomic on its own). `body`
   * may run again after SQLITE_BUSY: no side effects outside the connection.
   */
  readonly run: <A>(operation: string, body: (connection: Connection) => A) => Effect.Effect<A, E>
  /**
   * Runs `body` inside `BEGIN IMMEDIATE … COMMIT`: the write lock is taken up front, so a
   * read-then-write (e.g. `MAX(ordinal) + 1`) is atomic across processes. A throw rolls back.
   * While another process holds the lock, waits (without blocking the event loop) up to the
   * busy timeout, re-running `body` from scratch; then fails with reason `Busy`.
   */
  readonly transaction: <A>(
    operation: string,
    body: (connection: Connection) => A,
    options?: TransactionOptions
  ) => Effect.Effect<A, E>
  /** Brings `component` to its latest version (`Migrator`); returns that version. */
  readonly migrate: (operation: string, component: Component) => Effect.Effect<number, E>
}

/**
 * How a `Database<E>` speaks `E`: a `SqliteError` as `E`, and which thrown values are already
 * `E` (a body's own failures, passed through as they are).
 *
 * @category models
 * @since 0.1.0
 */
export interface Errors<E> {
  readonly fromSqliteError: (error: SqliteError) => E
  readonly isError: (thrown: unknown) => thrown is E
}

const DEFAULT_BUSY_TIMEOUT_MS = 10_000
// better-sqlite3 is synchronous: SQLite's busy handler sleeps on the JS thread. Wait at most
// this long there, then yield to the event loop and retry, so other fibers keep running.
const BUSY_SLICE_MS = 20
const MAX_BACKOFF_MS = 25

// -------------------------------------------------------------------------------------
// errors
// -------------------------------------------------------------------------------------

/**
 * Turns what a body threw into the error channel: an `E` passes through, a `SqliteError` or a
 * SQLite error becomes an `E`, anything else is a bug and dies.
 */
const fromThrown = <E>(errors: Errors<E>, operation: string, thrown: unknown): Effect.Effect<never, E> => {
  if (errors.isError(thrown)) return Effect.fail(thrown)
  if (thrown instanceof SqliteError) return Effect.fail(errors.fromSqliteError(thrown))
  const sqlite = fromSqlite(operation, thrown)
  return sqlite === undefined ? Effect.die(thrown) : Effect.fail(errors.fromSqliteError(sqlite))
}

// Real time on purpose: this is lock back-off against other processes, not domain time, and
// it must make progress under a `TestClock` too.
const sleepMs = (ms: number): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), ms)
    return Effect.sync(() => clearTimeout(timer))
  })

/**
 * Runs `body`; while it fails with SQLITE_BUSY (after SQLite's own short synchronous wait),
 * sleeps asynchronously with jittered back-off and retries, up to `busyTimeoutMs` in total.
 * `body` must be safe to run again: it is a transaction that was rolled back, or a read.
 */
const attemptWithBusyRetry = <A, E>(errors: Errors<E>, operation: string, busyTimeoutMs: number, body: () => A): Effect.Effect<A, E> =>
  Effect.suspend(() => {
    const deadline = Date.now() + busyTimeoutMs
    const loop = (round: number): Effect.Effect<A, E> => {
      try {
        return Effect.succeed(body())
      } catch (thrown) {
        if (isBusy(thrown) && Date.now() < deadline) {
          const backoff = Math.min(MAX_BACKOFF_MS, 2 ** round) * (0.5 + Math.random())
          return Effect.flatMap(sleepMs(backoff), () => loop(round + 1))
        }
        return fromThrown(errors, operation, thrown)
      }
    }
    return loop(0)
  })

// -------------------------------------------------------------------------------------
// service
// -------------------------------------------------------------------------------------

/**
 * One open SQLite database with its policy applied and its components migrated, failing with
 * `SqliteError`.
 *
 * @category services
 * @since 0.1.0
 */
export class Sqlite extends Context.Service<Sqlite, Database<SqliteError>>()("forkjoin/sqlite/Sqlite") {
  /** Opens `file` (creating its directory) for the layer's lifetime. */
  static readonly layer = (file: string, options?: OpenOptions): Layer.Layer<Sqlite, SqliteError> =>
    Layer.effect(Sqlite, make(file, options))
  /** A private in-memory database (tests). */
  static readonly layerMemory = (options?: OpenOptions): Layer.Layer<Sqlite, SqliteError> =>
    Layer.effect(Sqlite, make(":memory:", options))
}

const ownErrors: Errors<SqliteError> = {
  fromSqliteError: (error) => error,
  isError: (thrown): thrown is SqliteError => thrown instanceof SqliteError
}

/**
 * Opens `file` in the current scope (closed when the scope closes), applies the PRAGMAs and
 * migrates `options.components`. A component whose schema is newer than its code is refused.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (file: string, options?: OpenOptions): Effect.Effect<Database<SqliteError>, SqliteError, Scope.Scope> =>
  makeWith(file, options, ownErrors)

/**
 * `make`, failing with the caller's `E` (`errors`): bodies may throw an `E` to fail with it.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeWith = <E>(
  file: string,
  options: OpenOptions | undefined,
  errors: Errors<E>
): Effect.Effect<Database<E>, E, Scope.Scope> =>
  Effect.gen(function*() {
    const busyTimeoutMs = options?.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS
    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => openFile(file, Math.min(BUSY_SLICE_MS, busyTimeoutMs)),
        catch: (cause) => errors.fromSqliteError(fromSqlite("Sqlite.open", cause) ?? cannotOpen("Sqlite.open", file, cause))
      }),
      (db) => Effect.sync(() => db.close())
    )
    const connection = makeConnection(db)
    const transact = <A>(body: (connection: Connection) => A, durable: boolean) => inTransaction(db, connection, body, durable)
    const migrate = (operation: string, component: Component) =>
      attemptWithBusyRetry(errors, operation, busyTimeoutMs, () => migrateSync(operation, file, connection, (body) => transact(body, true), component))
    // Several processes may open a fresh file at once: setup and migrations retry on busy too.
    yield* attemptWithBusyRetry(errors, "Sqlite.setup", busyTimeoutMs, () => setup(db, file, busyTimeoutMs, options?.durability ?? "full"))
    const versions: Record<string, number> = {}
    for (const component of options?.components ?? []) versions[component.name] = yield* migrate("Sqlite.migrate", component)
    return {
      file,
      versions,
      run: (operation, body) => attemptWithBusyRetry(errors, operation, busyTimeoutMs, () => body(connection)),
      transaction: (operation, body, options) =>
        attemptWithBusyRetry(errors, operation, busyTimeoutMs, () => transact(body, options?.durable ?? true)),
      migrate
    }
  })

// -------------------------------------------------------------------------------------
// internals
// -------------------------------------------------------------------------------------

/** The connection policy: one statement per PRAGMA, each with why. */
const setup = (db: Database.Database, file: string, busyTimeoutMs: number, durability: "full" | "normal"): void => {
  // Orchestrator, CLI and other agents write from separate processes: wait for the write lock
  // instead of failing at once with SQLITE_BUSY; only a short slice here, because the wait
  // blocks the JS thread; `attemptWithBusyRetry` waits out the rest asynchronously.
  db.pragma(`busy_timeout = ${Math.max(0, Math.min(BUSY_SLICE_MS, Math.floor(busyTimeoutMs)))}`)
  // Readers (history views, CLI) never block the writer and the writer never blocks them;
  // a commit appends to the WAL with one fsync instead of rewriting pages twice.
  const mode = String(db.pragma("journal_mode = WAL", { simple: true })).toLowerCase()
  if (!isMemory(file) && mode !== "wal") {
    throw new SqliteError({
      operation: "Sqlite.setup",
      reason: "Io",
      detail: `${file}: SQLite refused journal_mode=WAL (got ${mode}); put the database on a local filesystem`
    })
  }
  // The journal intent must be on disk before the engine renames files: FULL fsyncs the WAL
  // at every commit (WAL's default, and better-sqlite3's build default, is NORMAL, which may
  // lose the last commits on power loss). NORMAL only where asked (`durability`).
  db.pragma(durability === "full" ? "synchronous = FULL" : "synchronous = NORMAL")
  // records.intent_id references intents: enforce it rather than trust every caller.
  db.pragma("foreign_keys = ON")
}
