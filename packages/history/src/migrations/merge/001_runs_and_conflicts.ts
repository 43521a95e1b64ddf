/**
 * Merge migration 1: `merge_runs` and `merge_conflicts`, with the indexes `forkjoin runs`,
 * `forkjoin conflicts` and `forkjoin status` read them by.
 */
import type { Migration } from "@forkjoin/sqlite/Migrator"

/** The migration (its number is the file's). */
export const migration: Migration = {
  version: 1,
  name: "merge runs and conflicts",
  up: (c) =>
    c.exec(`
        CREATE TABLE merge_runs (
          run_id         TEXT PRIMARY KEY,
          environment_id TEXT NOT NULL,
          status         TEXT NOT NULL,
          created_at     TEXT NOT NULL,
          updated_at     TEXT NOT NULL,
          run_json       TEXT NOT NULL
        );
        CREATE INDEX merge_runs_by_environment ON merge_runs (environment_id, created_at, run_id);
        CREATE INDEX merge_runs_by_status ON merge_runs (environment_id, status, created_at, run_id);
        CREATE TABLE merge_conflicts (
          conflict_id    TEXT PRIMARY KEY,
          run_id         TEXT NOT NULL REFERENCES merge_runs (run_id),
          environment_id TEXT NOT NULL,
          child_id       TEXT NOT NULL,
          status         TEXT NOT NULL,
          created_at     TEXT NOT NULL,
          conflict_json  TEXT NOT NULL
        );
        CREATE INDEX merge_conflicts_by_run ON merge_conflicts (run_id, status, created_at, conflict_id);
        CREATE INDEX merge_conflicts_by_environment ON merge_conflicts (environment_id, status, created_at, conflict_id);
      `)
}
