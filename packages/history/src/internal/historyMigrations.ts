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
import * as SnapshotStore from "../SnapshotStore.ts"
import type { Migration, SqliteOptions } from "../Sqlite.ts"

// -------------------------------------------------------------------------------------
// schema (migrations)
// -------------------------------------------------------------------------------------

const migrations: ReadonlyArray<Migration> = [
  {
    version: 1,
    name: "blobs, intents, records",
    up: (c) =>
      c.exec(`
        CREATE TABLE blobs (
          hash  TEXT PRIMARY KEY,
          size  INTEGER NOT NULL CHECK (size >= 0),
          bytes BLOB NOT NULL
        );
        CREATE TABLE intents (
          intent_id      TEXT PRIMARY KEY,
          environment_id TEXT NOT NULL,
          transaction_id TEXT NOT NULL,
          status         TEXT NOT NULL CHECK (status IN ('open', 'committed', 'aborted', 'uncertain')),
          created_at     TEXT NOT NULL,
          closed_at      TEXT,
          note           TEXT,
          intent_json    TEXT NOT NULL
        );
        CREATE INDEX intents_open ON intents (environment_id, created_at) WHERE status = 'open';
        CREATE TABLE records (
          record_id      TEXT PRIMARY KEY,
          intent_id      TEXT REFERENCES intents (intent_id),
          environment_id TEXT NOT NULL,
          commit_ordinal INTEGER NOT NULL CHECK (commit_ordinal > 0),
          thread_id      TEXT NOT NULL,
          turn_id        TEXT NOT NULL,
          transaction_id TEXT NOT NULL,
          committed_at   TEXT NOT NULL,
          outcome        TEXT NOT NULL,
          bytes_written  INTEGER NOT NULL,
          files_written  INTEGER NOT NULL,
          record_json    TEXT NOT NULL,
          UNIQUE (environment_id, commit_ordinal)
        );
        CREATE INDEX records_thread ON records (environment_id, thread_id, commit_ordinal);
        CREATE INDEX records_turn ON records (environment_id, turn_id, commit_ordinal);
        CREATE INDEX records_transaction ON records (environment_id, transaction_id, commit_ordinal);
      `)
  },
  {
    version: 2,
    name: "threads, record columns for coverage, per-path change index, provider events",
    up: (c) =>
      c.exec(`
        CREATE TABLE threads (
          thread_id        TEXT PRIMARY KEY,
          parent_thread_id TEXT,
          created_at       TEXT NOT NULL
        );
        CREATE INDEX threads_parent ON threads (parent_thread_id) WHERE parent_thread_id IS NOT NULL;
        ALTER TABLE records ADD COLUMN exactness TEXT;
        ALTER TABLE records ADD COLUMN provenance TEXT;
        ALTER TABLE records ADD COLUMN verifies TEXT;
        UPDATE records SET
          exactness = json_extract(record_json, '$.exactness'),
          provenance = json_extract(record_json, '$.provenance'),
          verifies = json_extract(record_json, '$.links.verifies');
        CREATE INDEX records_verifies ON records (verifies) WHERE verifies IS NOT NULL;
        CREATE TABLE record_changes (
          environment_id TEXT NOT NULL,
          path           TEXT NOT NULL,
          commit_ordinal INTEGER NOT NULL,
          thread_id      TEXT NOT NULL,
          move_from      TEXT,
          PRIMARY KEY (environment_id, path, commit_ordinal)
        ) WITHOUT ROWID;
        CREATE INDEX record_changes_moved_in ON record_changes (environment_id, path, commit_ordinal)
          WHERE move_from IS NOT NULL;
        CREATE INDEX record_changes_moved_out ON record_changes (environment_id, move_from, commit_ordinal)
          WHERE move_from IS NOT NULL;
        INSERT INTO record_changes (environment_id, path, commit_ordinal, thread_id, move_from)
          SELECT r.environment_id, json_extract(c.value, '$.path'), r.commit_ordinal, r.thread_id,
                 json_extract(c.value, '$.moveFrom')
          FROM records r, json_each(r.record_json, '$.changes') c;
        CREATE TABLE provider_events (
          record_id TEXT PRIMARY KEY REFERENCES records (record_id),
          format    TEXT NOT NULL,
          payload   TEXT NOT NULL
        );
      `)
  },
  {
    version: 3,
    name: "history identity, resets, acknowledgements of uncertain outcomes",
    up: (c) =>
      c.exec(`
        CREATE TABLE history_identity (
          singleton  INTEGER PRIMARY KEY CHECK (singleton = 1),
          history_id TEXT NOT NULL,
          created_at TEXT NOT NULL
        );
        CREATE TABLE history_resets (
          environment_id        TEXT NOT NULL,
          reset_at              TEXT NOT NULL,
          history_id            TEXT NOT NULL,
          previous_history_id   TEXT NOT NULL,
          previous_last_ordinal INTEGER NOT NULL,
          reason                TEXT NOT NULL CHECK (reason IN ('missing', 'different', 'older'))
        );
        CREATE INDEX history_resets_by_environment ON history_resets (environment_id, reset_at);
        CREATE TABLE acknowledgements (
          record_id       TEXT PRIMARY KEY REFERENCES records (record_id),
          acknowledged_at TEXT NOT NULL,
          note            TEXT NOT NULL
        );
        CREATE INDEX records_uncertain ON records (environment_id, commit_ordinal)
          WHERE outcome = 'commit_state_uncertain';
      `)
  },
  {
    version: 4,
    name: "snapshot store: shared chunks, compressed or as deltas; committed intents keep no JSON copy",
    up: (c) => {
      SnapshotStore.createTables(c)
      // The record holds the draft; only open intents are read back (startup repair, gaps).
      c.exec("UPDATE intents SET intent_json = '' WHERE status = 'committed' AND intent_id IN (SELECT intent_id FROM records)")
    }
  },
  {
    version: 5,
    name: "snapshot store: chunks may be one-hop patches of a whole chunk",
    up: SnapshotStore.allowPatches
  }
]

/**
 * The `Sqlite` options this store needs (its migrations), merged over `options`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const sqliteOptions = (options?: Omit<SqliteOptions, "migrations">): SqliteOptions => ({ ...options, migrations })
