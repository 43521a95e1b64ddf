/**
 * The history database's `Sqlite` service: `@forkjoin/sqlite`'s connection (policy, busy
 * waits, transactions, the one migrator) speaking the history store's `StoreError`, so the
 * stores over it (history, merge, tokens) and their bodies fail with one error type. A
 * `SqliteError` becomes the `StoreError` of the same operation and reason, cause kept; bodies
 * may throw a `StoreError` to fail with it.
 *
 * It owns that mapping and the `migrations` option: the history tables' migrations, opened as
 * the `history` component (versioned in `schema_components` and, as before it existed, in
 * `PRAGMA user_version`). It owns no table and no connection policy.
 *
 * @since 0.1.0
 */
import { Migrator, type SqliteError } from "@forkjoin/sqlite"
import * as Core from "@forkjoin/sqlite/Sqlite"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { StoreError } from "./HistoryStore.ts"

/**
 * A value SQLite can bind or return: TEXT, INTEGER/REAL, INTEGER as bigint, BLOB, NULL.
 *
 * @category models
 * @since 0.1.0
 */
export type SqlValue = Core.SqlValue

/**
 * The synchronous connection handed to `run` and `transaction` bodies (`@forkjoin/sqlite`).
 *
 * @category models
 * @since 0.1.0
 */
export type Connection = Core.Connection

/**
 * One schema step: versions are `1..n` in order; `up` runs inside its own transaction.
 *
 * @category models
 * @since 0.1.0
 */
export type Migration = Migrator.Migration

/**
 * Per-transaction options (`durable: false`: commit without waiting for the disk).
 *
 * @category models
 * @since 0.1.0
 */
export type TransactionOptions = Core.TransactionOptions

/**
 * How to open the history database: the history tables' migrations to apply (the `history`
 * component; none when absent) and how long, in total, a call may wait for another process's
 * write lock before failing with `Busy` (default 10 s).
 *
 * @category models
 * @since 0.1.0
 */
export interface SqliteOptions {
  readonly migrations?: ReadonlyArray<Migration>
  readonly busyTimeoutMs?: number
}

/**
 * One open history database with its policy applied and its migrations run.
 *
 * @category services
 * @since 0.1.0
 */
export class Sqlite extends Context.Service<Sqlite, Core.Database<StoreError> & {
  /** The history tables' version after migrations (0 when opened without them). */
  readonly schemaVersion: number
}>()("forkjoin/history/Sqlite") {
  /** Opens `file` (creating its directory) for the layer's lifetime. */
  static readonly layer = (file: string, options?: SqliteOptions): Layer.Layer<Sqlite, StoreError> =>
    Layer.effect(Sqlite, make(file, options))
  /** A private in-memory database (tests). */
  static readonly layerMemory = (options?: SqliteOptions): Layer.Layer<Sqlite, StoreError> =>
    Layer.effect(Sqlite, make(":memory:", options))
}

/** A `SqliteError` as the `StoreError` of the same operation and reason. */
const storeErrorOf = (error: SqliteError): StoreError =>
  new StoreError({ operation: error.operation, reason: error.reason, detail: error.detail, cause: error })

const errors: Core.Errors<StoreError> = {
  fromSqliteError: storeErrorOf,
  isError: (thrown): thrown is StoreError => thrown instanceof StoreError
}

/** The history tables as a component of the one migrator (`user_version` kept for older releases). */
const historyComponent = (migrations: ReadonlyArray<Migration>): Migrator.Component =>
  Migrator.component({ name: "history", label: "schema", migrations, userVersion: true })

/**
 * Opens `file` in the current scope (closed when the scope closes), applies the PRAGMAs and
 * runs the migrations. A database whose schema is newer than the migrations is refused.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (file: string, options?: SqliteOptions): Effect.Effect<typeof Sqlite.Service, StoreError, Scope.Scope> => {
  const migrations = options?.migrations ?? []
  return Core.makeWith(file, {
    ...(options?.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs }),
    components: migrations.length === 0 ? [] : [historyComponent(migrations)]
  }, errors).pipe(Effect.map((database) => ({ ...database, schemaVersion: database.versions["history"] ?? 0 })))
}
