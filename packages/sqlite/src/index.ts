/**
 * @forkjoin/sqlite: the `Sqlite` service every forkjoin database is opened through (connection
 * policy, busy waits, transactions, `SqliteError`), the one `Migrator` that versions every
 * component of a database in `schema_components`, and `LockFile`, a cross-process lock held
 * as a write transaction.
 *
 * @since 0.1.0
 */
export * from "./SqliteError.ts"
export * from "./Sqlite.ts"
export * as Migrator from "./Migrator.ts"
export * as LockFile from "./LockFile.ts"
