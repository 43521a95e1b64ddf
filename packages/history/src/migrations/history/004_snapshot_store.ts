/**
 * History migration 4: the snapshot store's tables (the legacy blobs move there afterwards,
 * in steps, when a store opens the database); committed intents keep no JSON copy.
 */
import * as SnapshotStore from "../../SnapshotStore.ts"
import type { Migration } from "@forkjoin/sqlite/Migrator"

/** The migration (its number is the file's). */
export const migration: Migration = {
  version: 4,
  name: "snapshot store: shared chunks, compressed or as deltas; committed intents keep no JSON copy",
  up: (c) => {
    SnapshotStore.createTables(c)
    // The record holds the draft; only open intents are read back (startup repair, gaps).
    c.exec("UPDATE intents SET intent_json = '' WHERE status = 'committed' AND intent_id IN (SELECT intent_id FROM records)")
  }
}
