/**
 * Gateway migration 1: `gateway_tokens`, the bearer tokens `forkjoin serve` accepts (only
 * their hashes; times in epoch milliseconds).
 */
import type { Migration } from "@forkjoin/sqlite/Migrator"

/** The migration (its number is the file's). */
export const migration: Migration = {
  version: 1,
  name: "gateway tokens",
  up: (c) =>
    c.exec(`
        CREATE TABLE gateway_tokens (
          token_id   TEXT PRIMARY KEY,
          token_hash TEXT NOT NULL UNIQUE,
          thread_id  TEXT NOT NULL,
          created_at INTEGER NOT NULL,
          expires_at INTEGER NOT NULL,
          revoked_at INTEGER
        );
      `)
}
