/**
 * Our own tiny SQLite service over better-sqlite3 12 (SPEC §4.3, style #15): it opens one
 * database file, applies the connection policy (one PRAGMA per line, each with its reason),
 * runs versioned migrations (`PRAGMA user_version`), caches prepared statements, and runs
 * synchronous bodies inside `BEGIN IMMEDIATE` transactions with SQLite errors mapped to
 * `StoreError`. Lock contention with other processes is waited out in two tiers: a short
 * synchronous `busy_timeout`, then asynchronous jittered retries up to the busy timeout, so
 * the event loop never stalls for long.
 *
 * It owns the connection and its policy. It does not own any table (callers pass their
 * migrations) nor row decoding (callers decode rows with their schemas). It is not an ORM and
 * not `@effect/sql`: bodies are plain synchronous functions, which is what better-sqlite3 is,
 * and which guarantees that no other fiber interleaves statements inside a transaction.
 *
 * @since 0.1.0
 */
import Database from "better-sqlite3"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as path from "node:path"
import { StoreError } from "./HistoryStore.ts"

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
 * One schema step: versions are `1..n` in order; `up` runs inside its own transaction.
 *
 * @category models
 * @since 0.1.0
 */
export interface Migration {
  readonly version: number
  readonly name: string
  readonly up: (connection: Connection) => void
}

/**
 * How to open a database: the migrations to apply and how long, in total, a call may wait
 * for another process's write lock before failing with `Busy` (default 10 s).
 *
 * @category models
 * @since 0.1.0
 */
export interface SqliteOptions {
  readonly migrations?: ReadonlyArray<Migration>
  readonly busyTimeoutMs?: number
}

const DEFAULT_BUSY_TIMEOUT_MS = 10_000
// better-sqlite3 is synchronous: SQLite's busy handler sleeps on the JS thread. Wait at most
// this long there, then yield to the event loop and retry, so other fibers keep running.
const BUSY_SLICE_MS = 20
const MAX_BACKOFF_MS = 25

// -------------------------------------------------------------------------------------
// errors
// -------------------------------------------------------------------------------------

const reasonOf = (code: string): StoreError["reason"] => {
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return "Busy"
  if (code.startsWith("SQLITE_CONSTRAINT")) return "Constraint"
  if (code.startsWith("SQLITE_CORRUPT") || code === "SQLITE_NOTADB") return "Corrupt"
  return "Io"
}

/**
 * Turns what a body threw into the error channel: a `StoreError` passes through, a SQLite
 * error becomes a `StoreError` by its code, anything else is a bug and dies.
 */
const fromThrown = (operation: string, thrown: unknown): Effect.Effect<never, StoreError> => {
  if (thrown instanceof StoreError) return Effect.fail(thrown)
  if (thrown instanceof Database.SqliteError) {
    const reason = reasonOf(thrown.code)
    return Effect.fail(
      new StoreError({
        operation,
        reason,
        detail: reason === "Busy"
          ? `${thrown.code}: another process held the database write lock for longer than the busy timeout; retry`
          : `${thrown.code}: ${thrown.message}`,
        cause: thrown
      })
    )
  }
  return Effect.die(thrown)
}

const attempt = <A>(operation: string, body: () => A): Effect.Effect<A, StoreError> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(body())
    } catch (thrown) {
      return fromThrown(operation, thrown)
    }
  })

const isBusy = (thrown: unknown): boolean =>
  thrown instanceof Database.SqliteError && reasonOf(thrown.code) === "Busy"

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
const attemptWithBusyRetry = <A>(operation: string, busyTimeoutMs: number, body: () => A): Effect.Effect<A, StoreError> =>
  Effect.suspend(() => {
    const deadline = Date.now() + busyTimeoutMs
    const loop = (round: number): Effect.Effect<A, StoreError> => {
      try {
        return Effect.succeed(body())
      } catch (thrown) {
        if (isBusy(thrown) && Date.now() < deadline) {
          const backoff = Math.min(MAX_BACKOFF_MS, 2 ** round) * (0.5 + Math.random())
          return Effect.flatMap(sleepMs(backoff), () => loop(round + 1))
        }
        return fromThrown(operation, thrown)
      }
    }
    return loop(0)
  })

// -------------------------------------------------------------------------------------
// service
// -------------------------------------------------------------------------------------

/**
 * One open SQLite database with its policy applied and its migrations run.
 *
 * @category services
 * @since 0.1.0
 */
export class Sqlite extends Context.Service<Sqlite, {
  /** The file as opened (`:memory:` for an in-memory database). */
  readonly file: string
  /** `PRAGMA user_version` after migrations. */
  readonly schemaVersion: number
  /**
   * Runs `body` without an explicit transaction (each statement is atomic on its own). `body`
   * may run again after SQLITE_BUSY: no side effects outside the connection.
   */
  readonly run: <A>(operation: string, body: (connection: Connection) => A) => Effect.Effect<A, StoreError>
  /**
   * Runs `body` inside `BEGIN IMMEDIATE … COMMIT`: the write lock is taken up front, so a
   * read-then-write (e.g. `MAX(ordinal) + 1`) is atomic across processes. A throw rolls back.
   * While another process holds the lock, waits (without blocking the event loop) up to the
   * busy timeout, re-running `body` from scratch; then fails with `StoreError` reason `Busy`.
   */
  readonly transaction: <A>(
    operation: string,
    body: (connection: Connection) => A,
    options?: TransactionOptions
  ) => Effect.Effect<A, StoreError>
}>()("forkjoin/history/Sqlite") {
  /** Opens `file` (creating its directory) for the layer's lifetime. */
  static readonly layer = (file: string, options?: SqliteOptions): Layer.Layer<Sqlite, StoreError> =>
    Layer.effect(Sqlite, make(file, options))
  /** A private in-memory database (tests). */
  static readonly layerMemory = (options?: SqliteOptions): Layer.Layer<Sqlite, StoreError> =>
    Layer.effect(Sqlite, make(":memory:", options))
}

const isMemory = (file: string): boolean => file === ":memory:" || file === ""

/**
 * Opens `file` in the current scope (closed when the scope closes), applies the PRAGMAs and
 * runs the migrations. A database whose schema is newer than the migrations is refused.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (file: string, options?: SqliteOptions): Effect.Effect<typeof Sqlite.Service, StoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const migrations = [...(options?.migrations ?? [])]
    migrations.forEach((m, i) => {
      if (m.version !== i + 1) throw new Error(`Sqlite migrations must be numbered 1..n in order; #${i} is ${m.version}`)
    })
    const busyTimeoutMs = options?.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS
    const db = yield* Effect.acquireRelease(
      attempt("Sqlite.open", () => {
        if (!isMemory(file)) fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
        return new Database(file, { timeout: Math.min(BUSY_SLICE_MS, busyTimeoutMs) })
      }).pipe(Effect.catchDefect((defect) => Effect.fail(ioError("Sqlite.open", file, defect)))),
      (db) => Effect.sync(() => db.close())
    )
    const connection = makeConnection(db)
    // Several processes may open a fresh file at once: setup and migrations retry on busy too.
    yield* attemptWithBusyRetry("Sqlite.setup", busyTimeoutMs, () => setup(db, file, busyTimeoutMs))
    const schemaVersion = yield* attemptWithBusyRetry(
      "Sqlite.migrate",
      busyTimeoutMs,
      () => migrate(db, connection, migrations, file)
    )
    return Sqlite.of({
      file,
      schemaVersion,
      run: (operation, body) => attemptWithBusyRetry(operation, busyTimeoutMs, () => body(connection)),
      transaction: (operation, body, options) =>
        attemptWithBusyRetry(operation, busyTimeoutMs, () => inTransaction(db, connection, body, options?.durable ?? true))
    })
  })

const ioError = (operation: string, file: string, cause: unknown): StoreError =>
  new StoreError({
    operation,
    reason: "Io",
    detail: `cannot open ${file}: ${cause instanceof Error ? cause.message : String(cause)}`,
    cause
  })

// -------------------------------------------------------------------------------------
// internals
// -------------------------------------------------------------------------------------

const makeConnection = (db: Database.Database): Connection => {
  const cache = new Map<string, Database.Statement<Array<SqlValue>, unknown>>()
  const statement = (sql: string) => {
    let stmt = cache.get(sql)
    if (stmt === undefined) {
      stmt = db.prepare<Array<SqlValue>, unknown>(sql)
      cache.set(sql, stmt)
    }
    return stmt
  }
  return {
    run: (sql, ...params) => statement(sql).run(...params).changes,
    get: <Row>(sql: string, ...params: ReadonlyArray<SqlValue>) => statement(sql).get(...params) as Row | undefined,
    all: <Row>(sql: string, ...params: ReadonlyArray<SqlValue>) => statement(sql).all(...params) as Array<Row>,
    exec: (sql) => {
      db.exec(sql)
    }
  }
}

/** The connection policy: one statement per PRAGMA, each with why. */
const setup = (db: Database.Database, file: string, busyTimeoutMs: number): void => {
  // Orchestrator, CLI and other agents write from separate processes: wait for the write lock
  // instead of failing at once with SQLITE_BUSY; only a short slice here, because the wait
  // blocks the JS thread; `attemptWithBusyRetry` waits out the rest asynchronously.
  db.pragma(`busy_timeout = ${Math.max(0, Math.min(BUSY_SLICE_MS, Math.floor(busyTimeoutMs)))}`)
  // Readers (history views, CLI) never block the writer and the writer never blocks them;
  // a commit appends to the WAL with one fsync instead of rewriting pages twice.
  const mode = String(db.pragma("journal_mode = WAL", { simple: true })).toLowerCase()
  if (!isMemory(file) && mode !== "wal") {
    throw new StoreError({
      operation: "Sqlite.setup",
      reason: "Io",
      detail: `${file}: SQLite refused journal_mode=WAL (got ${mode}); put the database on a local filesystem`
    })
  }
  // The journal intent must be on disk before the engine renames files: FULL fsyncs the WAL
  // at every commit (WAL's default, and better-sqlite3's build default, is NORMAL, which may
  // lose the last commits on power loss).
  db.pragma("synchronous = FULL")
  // records.intent_id references intents: enforce it rather than trust every caller.
  db.pragma("foreign_keys = ON")
}

const userVersion = (db: Database.Database): number => Number(db.pragma("user_version", { simple: true }))

const migrate = (
  db: Database.Database,
  connection: Connection,
  migrations: ReadonlyArray<Migration>,
  file: string
): number => {
  const latest = migrations.length
  const refuseNewer = (found: number) =>
    new StoreError({
      operation: "Sqlite.migrate",
      reason: "Schema",
      detail: `${file} has schema version ${found}, newer than this forkjoin supports (${latest}); ` +
        "upgrade forkjoin or use another database"
    })
  const found = userVersion(db)
  if (found > latest) throw refuseNewer(found)
  for (const migration of migrations) {
    if (migration.version <= found) continue
    inTransaction(db, connection, () => {
      // Re-read under the write lock: another process may have migrated meanwhile.
      const current = userVersion(db)
      if (current > latest) throw refuseNewer(current)
      if (current >= migration.version) return
      migration.up(connection)
      db.pragma(`user_version = ${migration.version}`)
    }, true)
  }
  return userVersion(db)
}

const inTransaction = <A>(
  db: Database.Database,
  connection: Connection,
  body: (connection: Connection) => A,
  durable: boolean
): A => {
  // Bodies are synchronous, so the only way to get here nested is a bug.
  if (db.inTransaction) throw new Error("Sqlite.transaction: nested transactions are not supported")
  // All of this runs synchronously: no other statement can commit under the relaxed setting.
  if (!durable) db.pragma("synchronous = NORMAL")
  try {
    connection.run("BEGIN IMMEDIATE")
    try {
      const result = body(connection)
      connection.run("COMMIT")
      return result
    } catch (thrown) {
      if (db.inTransaction) connection.run("ROLLBACK")
      throw thrown
    }
  } finally {
    if (!durable) db.pragma("synchronous = FULL")
  }
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
