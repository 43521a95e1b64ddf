/**
 * An `effect/sql` `SqlClient` (sqlite dialect) over the one `Sqlite` connection of this process:
 * the file is opened by `Sqlite.make`, so it gets the same policy (WAL, FULL sync, foreign keys,
 * the two-tier busy wait) and the same migrator, and effect's SQL code (the cluster's message
 * and runner storage) runs on it. Fibers share the connection through a semaphore (a
 * transaction holds it until it ends), and transactions begin with `BEGIN IMMEDIATE`, so a
 * read-then-write is atomic across processes and a lock is waited out at `BEGIN`, never
 * half-way through.
 *
 * It owns the statement execution and the mapping of SQLite errors to `SqlError` (cause kept).
 * It does not own the connection policy nor any table (`Sqlite`, and the callers' migrations).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Reactivity from "effect/reactivity/Reactivity"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Client from "effect/sql/SqlClient"
import type { Connection as SqlConnection } from "effect/sql/SqlConnection"
import { classifySqliteError, SqlError, UnknownError } from "effect/sql/SqlError"
import * as Statement from "effect/sql/Statement"
import * as Stream from "effect/Stream"
import { type Connection, make as openSqlite, type OpenOptions, type SqlValue } from "./Sqlite.ts"
import { SqliteError } from "./SqliteError.ts"

/**
 * The driver name this client reports as `SqlClient.driver`.
 *
 * @category constants
 * @since 0.1.0
 */
export const driver = "forkjoin-sqlite"

/** A statement's outcome inside the synchronous body: rows, or a value that cannot be bound. */
type Outcome =
  | { readonly _tag: "Rows"; readonly rows: ReadonlyArray<Record<string, unknown>>; readonly changes: number }
  | { readonly _tag: "Unbindable"; readonly index: number; readonly cause: unknown }

/** A parameter as SQLite binds it: booleans as 0/1 (the sqlite dialect's own encoding), undefined as NULL. */
const bindable = (value: unknown): SqlValue | typeof unbindable => {
  if (value === undefined || value === null) return null
  if (typeof value === "boolean") return value ? 1 : 0
  if (typeof value === "string" || typeof value === "number" || typeof value === "bigint" || value instanceof Uint8Array) return value
  return unbindable
}
const unbindable: unique symbol = Symbol("unbindable")

const sqlError = (operation: string, cause: unknown, message: string): SqlError =>
  new SqlError({ reason: classifySqliteError(cause, { message, operation }) })

/** A statement's `SqliteError` as effect's `SqlError`, classified by SQLite's own result code. */
const fromSqliteError = (operation: string, error: SqliteError): SqlError =>
  sqlError(operation, error.cause ?? error, error.message)

/**
 * Opens `file` through `Sqlite.make` (policy, components migrated) and builds a `SqlClient` over
 * it for the current scope. Opening fails as the `Sqlite` service does (`SqliteError`: cannot
 * open, a refused schema); statements fail with `SqlError`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  file: string,
  options?: OpenOptions
): Effect.Effect<Client.SqlClient, SqliteError, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function*() {
    const db = yield* openSqlite(file, options)
    // SQL text of statements that return no rows: better-sqlite3 refuses `all` on them before
    // running anything, so the first call learns it and later calls go straight to `run`.
    const writes = new Set<string>()
    const step = (c: Connection, sql: string, params: ReadonlyArray<SqlValue>): Outcome => {
      if (!writes.has(sql)) {
        try {
          return { _tag: "Rows", rows: c.all<Record<string, unknown>>(sql, ...params), changes: 0 }
        } catch (thrown) {
          // Not a reader (or a binding error, which `run` below throws again): nothing ran.
          if (!(thrown instanceof TypeError)) throw thrown
        }
      }
      const changes = c.run(sql, ...params)
      writes.add(sql)
      return { _tag: "Rows", rows: [], changes }
    }
    const execute = (operation: string, sql: string, params: ReadonlyArray<unknown>) =>
      Effect.suspend(() => {
        const bound: Array<SqlValue> = []
        for (const [index, value] of params.entries()) {
          const b = bindable(value)
          if (b === unbindable) {
            return Effect.fail(
              new SqlError({
                reason: new UnknownError({
                  operation,
                  message: `parameter ${index + 1} of ${JSON.stringify(sql.slice(0, 80))} cannot be bound in SQLite`,
                  cause: value
                })
              })
            )
          }
          bound.push(b)
        }
        return Effect.mapError(db.run(operation, (c) => step(c, sql, bound)), (error) => fromSqliteError(operation, error))
      }).pipe(Effect.flatMap((outcome) =>
        outcome._tag === "Rows"
          ? Effect.succeed(outcome)
          : Effect.fail(sqlError(operation, outcome.cause, `parameter ${outcome.index + 1} cannot be bound`))
      ))
    const rows = (sql: string, params: ReadonlyArray<unknown>) => Effect.map(execute("execute", sql, params), (o) => o.rows)
    const connection: SqlConnection = {
      execute: (sql, params, transformRows) =>
        transformRows === undefined ? rows(sql, params) : Effect.map(rows(sql, params), transformRows),
      // The rows of a reader, else `{ changes }` (better-sqlite3's own result shape for writes).
      executeRaw: (sql, params) =>
        Effect.map(execute("executeRaw", sql, params), (o) => (writes.has(sql) ? { changes: o.changes } : o.rows)),
      executeStream: (sql, params, transformRows) =>
        Stream.unwrap(Effect.map(rows(sql, params), (r) => Stream.fromIterable(transformRows === undefined ? r : transformRows(r)))),
      // Column values in column order: better-sqlite3 keeps a row's keys in select-list order
      // (duplicate column names collapse; the cluster storage selects distinct names).
      executeValues: (sql, params) => Effect.map(rows(sql, params), (r) => r.map((row) => Object.values(row))),
      executeValuesUnprepared: (sql, params) => Effect.map(rows(sql, params), (r) => r.map((row) => Object.values(row))),
      executeUnprepared: (sql, params, transformRows) =>
        transformRows === undefined ? rows(sql, params) : Effect.map(rows(sql, params), transformRows)
    }
    const acquirers = Client.makeSqliteAcquirers({ connection: Effect.succeed(connection), semaphore: Semaphore.makeUnsafe(1) })
    return yield* Client.make({
      ...acquirers,
      driver,
      compiler: Statement.makeCompilerSqlite(),
      // Take the write lock up front: a deferred transaction that later writes can fail with
      // SQLITE_BUSY mid-way, where waiting is no longer possible.
      beginTransaction: "BEGIN IMMEDIATE",
      prepareTransactionControls: true,
      releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`,
      spanAttributes: [["db.system.name", "sqlite"], ["db.namespace", db.file]]
    })
  })

/**
 * The client as a layer: `SqlClient` over `file` for the layer's lifetime.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (file: string, options?: OpenOptions): Layer.Layer<Client.SqlClient, SqliteError> =>
  Layer.effectContext(Effect.map(make(file, options), (client) => Context.make(Client.SqlClient, client))).pipe(
    Layer.provide(Reactivity.layer)
  )
