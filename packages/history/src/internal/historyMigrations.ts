/**
 * The history tables' migrations (1–5) and the `Sqlite` options that apply them.
 *
 * Layout (migration 1):
 * - `blobs(hash PK, size, bytes)`: content by `sha256:<hex>`, whole (emptied by migration 4);
 * - `intents(intent_id PK, environment_id, transaction_id, status, created_at, closed_at, note,
 *   intent_json)`, with a partial index over the open ones (startup repair);
 * - `records(record_id PK, intent_id → intents, environment_id, commit_ordinal,
 *   thread_id, turn_id, transaction_id, committed_at, outcome, bytes_written, files_written,
 *   record_json, UNIQUE(environment_id, commit_ordinal))`, indexed for thread, turn and
 *   transaction lookups. The columns are projections of `record_json`, which is the record.
 *
 * Migration 2 (history views): `threads(thread_id PK, parent_thread_id, created_at)`;
 * `records.exactness/provenance/verifies` (coverage without parsing JSON);
 * `record_changes(environment_id, path, commit_ordinal, thread_id, move_from)` (one row per
 * change: file history and move following); `provider_events(record_id PK, format, payload)`
 * (the raw provider event an aggregate record was ingested from).
 *
 * Migration 3 (history identity, issue 9): `history_identity(singleton = 1, history_id,
 * created_at)`: the database's one history id, minted on first use, so a workspace can tell
 * its own history from an emptied or swapped database; `history_resets(environment_id,
 * reset_at, history_id, previous_history_id, previous_last_ordinal, reason)`: each deliberate
 * reset; `acknowledgements(record_id PK → records, acknowledged_at, note)`: which
 * `commit_state_uncertain` records someone checked, with a partial index over those records.
 *
 * Migration 4 (snapshot storage): the `snapshots` and `chunks` tables of
 * `SnapshotStore` (content-defined chunks stored once, compressed or as deltas; as patches since
 * migration 5). The rows of `blobs` move there in place after the schema change, in steps of
 * their own transactions, when a store opens the database (`make`): a process killed midway
 * leaves whole steps done, reads find a row on either side meanwhile, and the next open
 * continues. A committed intent's JSON is emptied (its record holds the draft; only open
 * intents are ever read back).
 * Migration 5: a chunk may be a one-hop patch of a whole chunk (`SnapshotStore.allowPatches`).
 *
 * @since 0.1.0
 */
import type { Migration, SqliteOptions } from "../Sqlite.ts"
import { migration as m001 } from "../migrations/history/001_blobs_intents_records.ts"
import { migration as m002 } from "../migrations/history/002_threads_coverage_changes_events.ts"
import { migration as m003 } from "../migrations/history/003_identity_resets_acknowledgements.ts"
import { migration as m004 } from "../migrations/history/004_snapshot_store.ts"
import { migration as m005 } from "../migrations/history/005_chunk_patches.ts"

// One file per migration under `migrations/history/`, numbered as its version.
const migrations: ReadonlyArray<Migration> = [m001, m002, m003, m004, m005]

/**
 * The `Sqlite` options this store needs (its migrations), merged over `options`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const sqliteOptions = (options?: Omit<SqliteOptions, "migrations">): SqliteOptions => ({ ...options, migrations })
