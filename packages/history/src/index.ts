/**
 * @forkjoin/history: the durable patch history (SPEC §4): the `HistoryStore` contract, its
 * SQLite implementation and layers, the history database's `Sqlite` service (over
 * `@forkjoin/sqlite`, speaking `StoreError`), the history views
 * (`HistoryViews`), gap detection (`Gaps`), provider-aggregate ingestion (`ProviderAggregates`)
 * and the git export. `HistoryStore` is its four focused services in one (`HistoryContent`,
 * `HistoryJournal`, `HistoryRecords`, `HistoryIdentityStore`).
 *
 * @since 0.1.0
 */
export * from "./HistoryStore.ts"
export { layerMemory, layerNoDeps, layerSqlite, moveLegacyBlobs, sqliteOptions } from "./HistoryStoreSqlite.ts"
export { type Connection, type Migration, Sqlite, type SqliteOptions, type SqlValue } from "./Sqlite.ts"
export * as Views from "./Views.ts"
export * as Gaps from "./Gaps.ts"
export * as ProviderAggregates from "./ProviderAggregates.ts"
export * as GitExport from "./GitExport.ts"
export * from "./MergeStore.ts"
export * as MergeStoreSqlite from "./MergeStoreSqlite.ts"
export * as SnapshotStore from "./SnapshotStore.ts"
