/**
 * Merge migration 2: `merge_conflicts` rebuilt with `run_id` and `child_id` nullable, rows kept:
 * a rollback's held conflicts belong to no run.
 */
import type { Migration } from "@forkjoin/sqlite/Migrator"

/** The migration (its number is the file's). */
export const migration: Migration = {
  version: 2,
  name: "conflicts of rollbacks (no run)",
  // SQLite cannot drop a NOT NULL constraint in place: the table is rebuilt, rows kept.
  up: (c) =>
    c.exec(`
        CREATE TABLE merge_conflicts_v2 (
          conflict_id    TEXT PRIMARY KEY,
          run_id         TEXT REFERENCES merge_runs (run_id),
          environment_id TEXT NOT NULL,
          child_id       TEXT,
          status         TEXT NOT NULL,
          created_at     TEXT NOT NULL,
          conflict_json  TEXT NOT NULL
        );
        INSERT INTO merge_conflicts_v2 (conflict_id, run_id, environment_id, child_id, status, created_at, conflict_json)
          SELECT conflict_id, run_id, environment_id, child_id, status, created_at, conflict_json FROM merge_conflicts;
        DROP TABLE merge_conflicts;
        ALTER TABLE merge_conflicts_v2 RENAME TO merge_conflicts;
        CREATE INDEX merge_conflicts_by_run ON merge_conflicts (run_id, status, created_at, conflict_id);
        CREATE INDEX merge_conflicts_by_environment ON merge_conflicts (environment_id, status, created_at, conflict_id);
      `)
}
