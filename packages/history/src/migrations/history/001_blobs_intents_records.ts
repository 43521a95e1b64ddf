/**
 * History migration 1: the first release's tables: `blobs`, the `intents` journal and the
 * `records` of patch history, with their indexes.
 */
import type { Migration } from "@forkjoin/sqlite/Migrator"

/** The migration (its number is the file's). */
export const migration: Migration = {
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
}
