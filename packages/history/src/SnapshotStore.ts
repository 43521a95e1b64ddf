/**
 * The snapshot store of a history database (SPEC §4.2–4.3): the bytes of every file
 * version, addressed by `sha256:<hex>` of the whole, kept as content-defined chunks that
 * versions share. A chunk is stored once: whole (compressed when that pays), or as a small patch
 * of the whole chunk below the one it replaced, so rebuilding any chunk is one hop; a snapshot
 * is its list of chunk ids (a manifest), whole or as an edit of its base's manifest (a bounded
 * chain). Reading writes each chunk into its place in one buffer and checks the bytes against
 * the snapshot's hash and size: a missing or damaged chunk is a `StoreError` naming the snapshot,
 * never wrong bytes.
 *
 * It owns the `snapshots` and `chunks` tables (history migrations 4 and 5), the move of the first
 * release's `blobs` table into them, and the low level of retention (marking snapshots pruned,
 * dropping the chunks nothing unpruned needs). It does not own which snapshots records still
 * need (`HistoryStoreSqlite` decides that), nor transactions: every function runs on the
 * caller's `Connection`, writes inside the caller's transaction.
 *
 * This module is its public face; the parts live in `internal/snapshot/`: the tables
 * (`schema`), the row shapes and manifests (`rows`), rebuilding chunks (`chunks`), `read`,
 * `write`, the chunk `cache`, `retention` and the `legacyMove` of the first release's blobs.
 *
 * @since 0.1.0
 */
export { type ChunkCache, makeChunkCache } from "./internal/snapshot/cache.ts"
export { hasLegacyBlobs, moveLegacyBlobs, type MoveStep } from "./internal/snapshot/legacyMove.ts"
export { type Lookup, read, SnapshotState, stateOf } from "./internal/snapshot/read.ts"
export { prune, PruneCounts } from "./internal/snapshot/retention.ts"
export { allowPatches, createTables } from "./internal/snapshot/schema.ts"
export { prepare, type Prepared, put, type PutOptions } from "./internal/snapshot/write.ts"
