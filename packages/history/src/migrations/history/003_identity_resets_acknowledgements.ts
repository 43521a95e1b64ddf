/**
 * History migration 3: the database's history identity, its resets, and acknowledgements of
 * uncertain outcomes.
 */
import type { Migration } from "@forkjoin/sqlite/Migrator"

/** The migration (its number is the file's). */
export const migration: Migration = {
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
}
