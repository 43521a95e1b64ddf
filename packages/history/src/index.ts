/**
 * @forkjoin/history: the durable patch history (SPEC §4): the `HistoryStore` contract, its
 * SQLite implementation and layers, and the small `Sqlite` service underneath.
 *
 * @since 0.1.0
 */
export * from "./HistoryStore.ts"
export { layerMemory, layerNoDeps, layerSqlite, sqliteOptions } from "./HistoryStoreSqlite.ts"
export { type Connection, type Migration, Sqlite, type SqliteOptions, type SqlValue } from "./Sqlite.ts"
