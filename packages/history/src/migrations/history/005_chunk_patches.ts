/**
 * History migration 5: a snapshot-store chunk may be a one-hop patch of a whole chunk.
 */
import * as SnapshotStore from "../../SnapshotStore.ts"
import type { Migration } from "@forkjoin/sqlite/Migrator"

/** The migration (its number is the file's). */
export const migration: Migration = {
  version: 5,
  name: "snapshot store: chunks may be one-hop patches of a whole chunk",
  up: SnapshotStore.allowPatches
}
