/**
 * History migration 2 (history views): `threads`, the records' coverage columns, the per-path
 * change index `record_changes` and `provider_events`, each backfilled from the rows there are.
 */
import type { Migration } from "@forkjoin/sqlite/Migrator"

/** The migration (its number is the file's). */
export const migration: Migration = {
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
}
