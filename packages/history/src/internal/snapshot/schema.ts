/**
 * The tables of the snapshot store (history migrations 4 and 5).
 *
 * Layout:
 * - `chunks(id PK, hash UNIQUE (32-byte sha256 of the chunk), size, codec, base, depth, pack,
 *   pack_at)`: `codec` 0 raw, 1 LZ4 block, 3 patch of the whole chunk `base` (depth 1), or 2
 *   delta against chunk `base` (`depth` deltas down to a whole chunk; written by the first
 *   chunked release, read only);
 * - `chunk_bodies(id PK, data)`: a chunk's stored bytes under its id; the raw chunks one
 *   snapshot adds share the first one's row (a pack: the others name it in `pack`, with their
 *   offset `pack_at`);
 * - `snapshots(id PK, hash UNIQUE, size, base, depth, manifest, pruned_at)`: the manifest is
 *   whole when `base` is null, else a splice of snapshot `base`'s manifest; `pruned_at` is set
 *   when retention dropped the content (the row stays: its hash, size and manifest remain).
 *
 * @since 0.1.0
 */
import type { Connection } from "../../Sqlite.ts"

// The chunks table as it is now (migration 5 rebuilds the first chunked release's, which did
// not allow patches, into it; a new database gets it from migration 4 directly).
const chunksTable = (name: string): string => `
  CREATE TABLE ${name} (
    id    INTEGER PRIMARY KEY,
    hash  BLOB NOT NULL UNIQUE,
    size  INTEGER NOT NULL CHECK (size >= 0),
    codec INTEGER NOT NULL CHECK (codec IN (0, 1, 2, 3)),
    base  INTEGER,
    depth INTEGER NOT NULL CHECK (depth >= 0),
    pack    INTEGER,
    pack_at INTEGER NOT NULL DEFAULT 0 CHECK (pack_at >= 0)
  );`

/**
 * The tables of the snapshot store (run once by history migration 4, inside its transaction).
 *
 * @category constructors
 * @since 0.1.0
 */
export const createTables = (c: Connection): void =>
  c.exec(`
    ${chunksTable("chunks")}
    -- Bodies apart from the rows above: a read looks up every chunk's row first, and rows
    -- without their bodies pack dozens to a page instead of one page (or more) each.
    CREATE TABLE chunk_bodies (
      id   INTEGER PRIMARY KEY,
      data BLOB NOT NULL
    );
    CREATE TABLE snapshots (
      id        INTEGER PRIMARY KEY,
      hash      TEXT NOT NULL UNIQUE,
      size      INTEGER NOT NULL CHECK (size >= 0),
      base      INTEGER,
      depth     INTEGER NOT NULL CHECK (depth >= 0),
      manifest  BLOB NOT NULL,
      pruned_at TEXT
    );
  `)

/**
 * History migration 5: chunks may be patches (`Codec.patch`). Rebuilds the `chunks` table with
 * the wider check (SQLite cannot alter one); rows, ids and bodies stay as they are, and the
 * first chunked release's deltas stay readable.
 *
 * @category constructors
 * @since 0.1.0
 */
export const allowPatches = (c: Connection): void =>
  c.exec(`
    ${chunksTable("chunks_v5")}
    INSERT INTO chunks_v5 (id, hash, size, codec, base, depth, pack, pack_at)
      SELECT id, hash, size, codec, base, depth, pack, pack_at FROM chunks;
    DROP TABLE chunks;
    ALTER TABLE chunks_v5 RENAME TO chunks;
  `)
