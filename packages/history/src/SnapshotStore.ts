/**
 * The snapshot store of a history database (SPEC §4.2–4.3): the bytes of every file
 * version, addressed by `sha256:<hex>` of the whole, kept as content-defined chunks that
 * versions share. A chunk is stored once: whole (compressed when that pays), or as a small patch
 * of the whole chunk below the one it replaced, so rebuilding any chunk is one hop; a snapshot
 * is its list of chunk ids (a manifest), whole or as an edit of its base's manifest (a bounded
 * chain). Reading writes each chunk into its place in one buffer and checks the bytes against
 * the snapshot's hash and size: a missing or damaged chunk is a `StoreError` naming the snapshot,
 * never wrong bytes.
 *
 * It owns the `snapshots` and `chunks` tables (history migrations 4 and 5), the move of the first
 * release's `blobs` table into them, and the low level of retention (marking snapshots pruned,
 * dropping the chunks nothing unpruned needs). It does not own which snapshots records still
 * need (`HistoryStoreSqlite` decides that), nor transactions: every function runs on the
 * caller's `Connection`, writes inside the caller's transaction.
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
import { byteView, sameBytes, sha256 } from "@forkjoin/patch/Bytes"
import type { Sha256Hash } from "@forkjoin/schema"
import * as Schema from "effect/Schema"
import { StoreError } from "./HistoryStore.ts"
import { cutPoints, cutPointsAfterEdit, type EditCuts } from "./internal/chunking.ts"
import { type HashAhead, hashAhead } from "./internal/hashAhead.ts"
import {
  applyDeltaSpans,
  applyManifestDelta,
  Codec,
  CodecError,
  commonEnds,
  compressChunk,
  decodeManifest,
  decodePatch,
  decompressChunk,
  encodeManifest,
  encodeManifestDelta,
  encodePatch,
  joinPieces,
  renderSpans,
  type Span,
  spansLength,
  spliceSpans,
  wholeSpans,
  writeSpans
} from "./internal/snapshotCodec.ts"
import type { Connection } from "./Sqlite.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * What the store holds for a hash: the verified bytes, the fact that retention pruned them,
 * or nothing.
 *
 * @category models
 * @since 0.1.0
 */
export type Lookup =
  | { readonly _tag: "Stored"; readonly bytes: Uint8Array }
  | { readonly _tag: "Pruned"; readonly prunedAt: string }
  | { readonly _tag: "Missing" }

/**
 * Whether the store can give a hash's bytes (`stored`), had them until retention dropped them
 * (`pruned`), or never had them (`missing`).
 *
 * @category models
 * @since 0.1.0
 */
export const SnapshotState = Schema.Literals(["stored", "pruned", "missing"])

/**
 * @category models
 * @since 0.1.0
 */
export type SnapshotState = typeof SnapshotState.Type

/**
 * What a retention pass did: snapshots marked pruned, chunks removed and the bytes they held.
 *
 * @category models
 * @since 0.1.0
 */
export const PruneCounts = Schema.Struct({
  snapshots: Schema.Int,
  chunks: Schema.Int,
  bytes: Schema.Int
})

/**
 * @category models
 * @since 0.1.0
 */
export type PruneCounts = typeof PruneCounts.Type

/**
 * How much of the first release's `blobs` table one step moved (`moved`), left in place
 * because the bytes do not match their hash (`damaged`: reads keep reporting them corrupt), and
 * the last rowid it looked at (undefined when nothing was left after `after`).
 *
 * @category models
 * @since 0.1.0
 */
export interface MoveStep {
  readonly moved: number
  readonly damaged: number
  readonly last: number | undefined
}

/**
 * Chunk bytes kept in memory by chunk hash, within a byte budget (least recently used go
 * first). A chunk's hash names the same bytes in every database, so an entry never goes stale;
 * only bytes a read verified enter it.
 *
 * @category models
 * @since 0.1.0
 */
export interface ChunkCache {
  readonly get: (key: string) => Uint8Array | undefined
  readonly set: (key: string, bytes: Uint8Array) => void
}

/**
 * An empty `ChunkCache` holding at most `budgetBytes` of chunk bytes.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeChunkCache = (budgetBytes: number): ChunkCache => {
  const entries = new Map<string, Uint8Array>()
  let held = 0
  return {
    get: (key) => {
      const bytes = entries.get(key)
      if (bytes !== undefined) {
        // Map order is insertion order: re-inserting marks it most recently used.
        entries.delete(key)
        entries.set(key, bytes)
      }
      return bytes
    },
    set: (key, bytes) => {
      if (bytes.byteLength > budgetBytes || entries.has(key)) return
      // A view into a larger buffer (a chunk of a new file's bytes) would keep all of it alive.
      entries.set(key, bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice())
      held += bytes.byteLength
      for (const [k, v] of entries) {
        if (held <= budgetBytes) break
        entries.delete(k)
        held -= v.byteLength
      }
    }
  }
}

// -------------------------------------------------------------------------------------
// schema
// -------------------------------------------------------------------------------------

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

// Manifest edits of manifest edits, up to this many: reading a manifest then costs at most this
// many row reads of a few bytes; past it a manifest is stored whole again. Chunks written by
// the first chunked release were deltas of deltas bounded the same way (read, never written).
const MAX_CHUNK_DEPTH = 64
const MAX_MANIFEST_DEPTH = 64
// A chunk is stored as a patch of the whole chunk below the one it replaces while the patch is
// at most this share of it (or this floor): every version of a chunk edited again and again
// carries all its edits since that whole chunk, so past the bound it is stored whole again.
const PATCH_SHARE = 1 / 16
const PATCH_FLOOR = 256

const SQL = {
  snapshot: "SELECT id, size, base, depth, manifest, pruned_at FROM snapshots WHERE hash = ?",
  snapshotById: "SELECT id, size, base, depth, manifest, pruned_at FROM snapshots WHERE id = ?",
  snapshotState: "SELECT id, pruned_at FROM snapshots WHERE hash = ?",
  insertSnapshot: "INSERT INTO snapshots (hash, size, base, depth, manifest) VALUES (?, ?, ?, ?, ?)",
  restoreSnapshot: "UPDATE snapshots SET size = ?, base = ?, depth = ?, manifest = ?, pruned_at = NULL WHERE id = ?",
  chunkId: "SELECT id FROM chunks WHERE hash = ?",
  chunkSizes: "SELECT id, size FROM chunks WHERE id IN (SELECT value FROM json_each(?))",
  chunkHash: "SELECT hash FROM chunks WHERE id = ?",
  // The chunks with the given ids and every delta base below them (UNION: each row once, and a
  // damaged table with a cycle still ends).
  chunkClosure: `WITH RECURSIVE need(id) AS (
      SELECT value FROM json_each(?)
      UNION SELECT c.base FROM chunks c JOIN need ON c.id = need.id WHERE c.codec IN (2, 3) AND c.base IS NOT NULL
    )
    SELECT c.id, c.hash, c.size, c.codec, c.base, c.depth, c.pack, c.pack_at FROM need JOIN chunks c ON c.id = need.id`,
  chunkBodies: "SELECT id, data FROM chunk_bodies WHERE id IN (SELECT value FROM json_each(?))",
  insertChunk: "INSERT INTO chunks (hash, size, codec, base, depth, pack, pack_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
  insertBody: "INSERT INTO chunk_bodies (id, data) VALUES (?, ?)",
  legacyBlob: "SELECT size, bytes FROM blobs WHERE hash = ?",
  legacyAny: "SELECT 1 AS present FROM blobs LIMIT 1",
  legacyAfter: "SELECT rowid AS row, hash, size FROM blobs WHERE rowid > ? ORDER BY rowid LIMIT ?",
  legacyBytes: "SELECT bytes FROM blobs WHERE rowid = ?",
  legacyDelete: "DELETE FROM blobs WHERE rowid = ?",
  snapshotLinks: "SELECT id, hash, base, pruned_at FROM snapshots",
  wholeManifest: "UPDATE snapshots SET base = NULL, depth = 0, manifest = ? WHERE id = ?",
  prune: "UPDATE snapshots SET pruned_at = ?, base = NULL, depth = 0, manifest = ? WHERE id = ?",
  chunkLinks: "SELECT id, base, pack FROM chunks",
  bodySizes: "SELECT id, length(data) AS bytes FROM chunk_bodies",
  deleteBody: "DELETE FROM chunk_bodies WHERE id = ?",
  deleteChunk: "DELETE FROM chunks WHERE id = ?"
} as const

interface SnapshotRow {
  readonly id: number
  readonly size: number
  readonly base: number | null
  readonly depth: number
  readonly manifest: Uint8Array
  readonly pruned_at: string | null
}

interface ChunkMeta {
  readonly id: number
  readonly hash: Uint8Array
  readonly size: number
  readonly codec: number
  readonly base: number | null
  readonly depth: number
  /** The `chunk_bodies` row holding a raw chunk's bytes with others', at byte `pack_at`; null: its own row. */
  readonly pack: number | null
  readonly pack_at: number
}

// -------------------------------------------------------------------------------------
// internals
// -------------------------------------------------------------------------------------

/** A chunk's address: the 32 bytes of its sha256 (the shared `sha256`, hex decoded). */
const chunkKey = (hash: Sha256Hash): Buffer => Buffer.from(hash.slice("sha256:".length), "hex")

const EMPTY = new Uint8Array(0)

const view = (b: Uint8Array): Uint8Array => new Uint8Array(b.buffer, b.byteOffset, b.byteLength)

const corrupt = (operation: string, hash: string, detail: string, cause?: unknown): StoreError =>
  new StoreError({ operation, reason: "Corrupt", detail: `snapshot ${hash}: ${detail}`, cause })

/**
 * The chunk ids of a snapshot, following its manifest's base chain (down to a snapshot `memo`
 * already holds, when given).
 */
const manifestOf = (c: Connection, row: SnapshotRow, memo?: ReadonlyMap<number, ReadonlyArray<number>>): Array<number> => {
  const chain: Array<SnapshotRow> = [row]
  let known = memo?.get(row.id)
  let at = row
  while (known === undefined && at.base !== null) {
    if (chain.length > MAX_MANIFEST_DEPTH + 1) throw new CodecError({ detail: "a manifest's base chain is longer than allowed" })
    known = memo?.get(at.base)
    if (known !== undefined) break
    const base = c.get<SnapshotRow>(SQL.snapshotById, at.base)
    if (base === undefined) throw new CodecError({ detail: `the manifest's base snapshot #${at.base} is missing` })
    chain.push(base)
    at = base
  }
  if (known !== undefined && memo?.has(row.id) === true) return [...known]
  let ids = known !== undefined ? [...known] : decodeManifest(view(chain.pop()!.manifest))
  for (let i = chain.length - 1; i >= 0; i--) ids = applyManifestDelta(ids, view(chain[i]!.manifest))
  return ids
}

/** The cache key of a chunk: its 32-byte hash in hex. */
const cacheKey = (hash: Uint8Array): string => byteView(hash).toString("hex")

/** How a chunk's bytes are rebuilt: spans of the bytes of chunk `root` (whole, or cached). */
interface Plan {
  readonly root: number
  readonly spans: ReadonlyArray<Span>
}

/** The chunks of one read: their rows, how each is rebuilt, and the bytes of the roots it needs. */
interface Resolved {
  readonly metas: ReadonlyMap<number, ChunkMeta>
  readonly plans: ReadonlyMap<number, Plan>
  /** Roots at hand (raw or cached), and the compressed ones once `rootOf` decompressed them. */
  readonly roots: Map<number, Uint8Array>
  /** The compressed bodies of the other roots, decompressed on first use (see `rootOf`). */
  readonly packed: ReadonlyMap<number, Uint8Array>
  /** The roots this read decompressed, with their cache keys. */
  readonly decompressed: Map<number, string>
}

const isWhole = (meta: ChunkMeta): boolean => meta.codec === Codec.raw || meta.codec === Codec.lz4

/**
 * How to rebuild chunks by id, in two queries: the rows of the chunks and of every base below
 * them (one recursive query), then the bodies the cache does not make unnecessary. A patch is
 * one hop from a whole chunk; a delta chain of the first chunked release is composed into spans
 * of its root. With `shortcut`, a chunk the cache holds is its own root (reads); without, roots
 * are always whole chunks of the table (writes: a patch must name a stored base).
 */
const resolve = (c: Connection, ids: ReadonlyArray<number>, cache: ChunkCache | undefined, shortcut: boolean): Resolved => {
  const unique = [...new Set(ids)]
  const metas = new Map(c.all<ChunkMeta>(SQL.chunkClosure, JSON.stringify(unique)).map((m) => [m.id, m]))
  const roots = new Map<number, Uint8Array>()
  const bodiesOf = new Map<number, Uint8Array>()
  const seen = new Set<number>()
  const wanted: Array<number> = []
  for (const id of unique) {
    // Down the chain until a chunk already seen, cached bytes, or a whole chunk.
    let at: number | null = id
    for (let depth = 0; at !== null && !seen.has(at); depth++) {
      if (depth > MAX_CHUNK_DEPTH + 1) throw new CodecError({ detail: `chunk ${id}'s delta chain is longer than allowed` })
      const meta = metas.get(at)
      if (meta === undefined) throw new CodecError({ detail: `chunk ${at} is missing` })
      seen.add(at)
      const whole = isWhole(meta)
      const cached = whole || shortcut ? cache?.get(cacheKey(meta.hash)) : undefined
      if (cached !== undefined) {
        roots.set(at, cached)
        break
      }
      wanted.push(at)
      if (whole) break
      if (meta.codec !== Codec.delta && meta.codec !== Codec.patch) throw new CodecError({ detail: `chunk ${at} has unknown codec ${meta.codec}` })
      if (meta.base === null) throw new CodecError({ detail: `chunk ${at} is a delta without a base` })
      at = meta.base
    }
  }
  const bodyIds = [...new Set(wanted.map((id) => metas.get(id)!.pack ?? id))]
  const bodies = bodyIds.length === 0
    ? new Map<number, Uint8Array>()
    : new Map(c.all<{ readonly id: number; readonly data: Uint8Array }>(SQL.chunkBodies, JSON.stringify(bodyIds)).map((b) => [b.id, view(b.data)]))
  const packed = new Map<number, Uint8Array>()
  for (const id of wanted) {
    const meta = metas.get(id)!
    const data = bodyOf(meta, bodies.get(meta.pack ?? id))
    if (meta.codec === Codec.lz4) packed.set(id, data)
    else if (meta.codec === Codec.raw) roots.set(id, data)
    else bodiesOf.set(id, data)
  }
  const plans = new Map<number, Plan>()
  const planOf = (id: number): Plan => {
    const known = plans.get(id)
    if (known !== undefined) return known
    const meta = metas.get(id)!
    let plan: Plan
    if (roots.has(id) || packed.has(id)) plan = { root: id, spans: wholeSpans(meta.size) }
    else if (meta.codec === Codec.patch) {
      const base = metas.get(meta.base!)!
      if (!isWhole(base)) throw new CodecError({ detail: `chunk ${id} is a patch of chunk ${base.id}, which is not whole` })
      plan = { root: base.id, spans: decodePatch(bodiesOf.get(id)!, meta.size, base.size) }
    } else {
      const below = planOf(meta.base!)
      const spans = applyDeltaSpans(below.spans, bodiesOf.get(id)!)
      const length = spansLength(spans)
      if (length !== meta.size) throw new CodecError({ detail: `chunk ${id} rebuilds to ${length} bytes, not ${meta.size}` })
      plan = { root: below.root, spans }
    }
    plans.set(id, plan)
    return plan
  }
  for (const id of unique) planOf(id)
  return { metas, plans, roots, packed, decompressed: new Map() }
}

/**
 * The bytes of a root chunk, decompressed on first use: a read decompresses each chunk just
 * before writing it, while the bytes written before it are being hashed.
 */
const rootOf = (r: Resolved, id: number): Uint8Array => {
  const known = r.roots.get(id)
  if (known !== undefined) return known
  const meta = r.metas.get(id)!
  const bytes = decompressChunk(r.packed.get(id)!, meta.size)
  r.roots.set(id, bytes)
  r.decompressed.set(id, cacheKey(meta.hash))
  return bytes
}

/**
 * A chunk's stored bytes: its body row, or for a raw chunk its stretch of that row (a pack's
 * first chunk owns the row, the others point at it with `pack`).
 */
const bodyOf = (meta: ChunkMeta, body: Uint8Array | undefined): Uint8Array => {
  if (body === undefined) throw new CodecError({ detail: `chunk ${meta.id}'s body is missing` })
  if (meta.codec !== Codec.raw) {
    if (meta.pack !== null) throw new CodecError({ detail: `chunk ${meta.id} is compressed but stored in pack ${meta.pack}` })
    return body
  }
  if (meta.pack_at + meta.size > body.length) {
    throw new CodecError({ detail: `chunk ${meta.id} does not fit in its body (${meta.pack_at + meta.size} of ${body.length} bytes)` })
  }
  return body.subarray(meta.pack_at, meta.pack_at + meta.size)
}

/** A snapshot read whose manifest, chunk rows and bodies are in memory. */
interface Gathered {
  readonly operation: string
  readonly hash: Sha256Hash
  readonly size: number
  readonly ids: ReadonlyArray<number>
  readonly resolved: Resolved
}

/** The manifest, rows and bodies of one stored (unpruned) snapshot; throws `StoreError` Corrupt. */
const gather = (
  c: Connection,
  operation: string,
  hash: Sha256Hash,
  row: SnapshotRow,
  cache: ChunkCache | undefined
): Gathered => {
  try {
    const ids = manifestOf(c, row)
    return { operation, hash, size: row.size, ids, resolved: resolve(c, ids, cache, true) }
  } catch (e) {
    if (e instanceof CodecError) throw corrupt(operation, hash, e.detail, e)
    throw e
  }
}

/**
 * The rebuilt bytes if they are the snapshot's (size and hash), else `StoreError` Corrupt naming
 * the first chunk that does not match its own hash when one does not. Verified as a whole, each
 * of its chunks holds the bytes its hash names: the compressed whole chunks it contains as they
 * are enter the cache (not a patch's base: a damaged stretch the patch replaced would go
 * unnoticed by this read).
 */
const verified = (g: Gathered, out: Uint8Array, digest: Sha256Hash, cache: ChunkCache | undefined): Uint8Array => {
  if (out.length !== g.size || digest !== g.hash) {
    let at = 0
    const bad = g.ids.find((id) => {
      const meta = g.resolved.metas.get(id)!
      const got = out.subarray(at, at + meta.size)
      at += meta.size
      return got.length !== meta.size || !chunkKey(sha256(got)).equals(view(meta.hash))
    })
    throw corrupt(
      g.operation,
      g.hash,
      bad === undefined
        ? `its chunks reassemble to bytes that do not match its hash or size (${out.length} of ${g.size} bytes)`
        : `chunk ${bad} does not match its hash`
    )
  }
  if (cache !== undefined) {
    for (const id of new Set(g.ids)) {
      const key = g.resolved.decompressed.get(id)
      if (key !== undefined) cache.set(key, g.resolved.roots.get(id)!)
    }
  }
  return view(out)
}

/**
 * Rebuilds and verifies a gathered snapshot: each chunk written into its place in one buffer,
 * and hashed ahead (see `hashAhead`) while the next ones are decompressed and written.
 */
const finish = (g: Gathered, cache: ChunkCache | undefined): Uint8Array => {
  const { metas, plans } = g.resolved
  const only = g.ids.length === 1 ? plans.get(g.ids[0]!)! : undefined
  let out: Uint8Array
  let hashing: HashAhead | undefined
  try {
    if (only !== undefined) out = renderSpans(rootOf(g.resolved, only.root), only.spans)
    else {
      out = Buffer.allocUnsafe(g.ids.reduce((n, id) => n + metas.get(id)!.size, 0))
      hashing = hashAhead(out.length)
      let at = 0
      for (const id of g.ids) {
        const plan = plans.get(id)!
        at = writeSpans(out, at, rootOf(g.resolved, plan.root), plan.spans)
        hashing.advance(out, at)
      }
    }
  } catch (e) {
    if (e instanceof CodecError) throw corrupt(g.operation, g.hash, e.detail, e)
    throw e
  }
  return verified(g, out, hashing === undefined ? sha256(out) : hashing.digest(out), cache)
}

/** A new chunk's body as chosen before it is written. */
type Body =
  | { readonly codec: typeof Codec.patch; readonly base: number; readonly data: Uint8Array }
  | { readonly codec: typeof Codec.lz4; readonly data: Uint8Array }
  | { readonly codec: typeof Codec.raw }

/** A patch chosen against `candidate`, with the hashes that tell whether its ids still name the same chunks. */
interface ChosenPatch {
  readonly end: number
  readonly candidate: number
  /** The candidate's and, when a patch was made, its base's chunk hashes (undefined: the candidate could not be read). */
  readonly keys: ReadonlyArray<Uint8Array> | undefined
  readonly patch: { readonly base: number; readonly data: Uint8Array } | undefined
}

/**
 * The part of storing one snapshot that needs no write lock, by a piece's start offset: the cut
 * points (and the base boundaries they were made against), each piece's chunk hash, its
 * compressed body, its patch against a candidate. Each entry is a function of bytes, or says
 * which chunks it was made against, so a use checks it still applies.
 */
interface Work {
  cuts: { readonly baseCuts: ReadonlyArray<number> | undefined; readonly result: Cuts } | undefined
  readonly keys: Map<number, { readonly end: number; readonly key: Buffer }>
  readonly compressed: Map<number, { readonly end: number; readonly body: { readonly codec: Codec; readonly data: Uint8Array } }>
  readonly patches: Map<number, ChosenPatch>
}

/** Cut points, with the base chunk each repeats when they were found from an edit (else `kept` is undefined). */
type Cuts = EditCuts | { readonly cuts: ReadonlyArray<number>; readonly kept?: undefined }

const emptyWork = (): Work => ({ cuts: undefined, keys: new Map(), compressed: new Map(), patches: new Map() })

/**
 * A new chunk as a patch of the whole chunk below `candidate` (the chunk it replaces): the
 * candidate's own spans with the stretch where the two differ replaced. No patch when the
 * candidate cannot be rebuilt, the patch would carry more than its share of the chunk, or it
 * does not rebuild `piece` from the base's stored bytes (a damaged base only costs the patch).
 */
const patchOf = (c: Connection, candidate: number, piece: Uint8Array, start: number, cache: ChunkCache | undefined): ChosenPatch => {
  const end = start + piece.length
  let plan: Plan
  let root: Uint8Array
  let keys: Array<Uint8Array>
  try {
    const resolved = resolve(c, [candidate], cache, false)
    plan = resolved.plans.get(candidate)!
    root = rootOf(resolved, plan.root)
    keys = [resolved.metas.get(candidate)!.hash, resolved.metas.get(plan.root)!.hash]
  } catch (e) {
    if (e instanceof CodecError) return { end, candidate, keys: undefined, patch: undefined }
    throw e
  }
  const before = renderSpans(root, plan.spans)
  const { prefix, suffix } = commonEnds(before, piece)
  const spans = spliceSpans(plan.spans, prefix, before.length - suffix, piece.subarray(prefix, piece.length - suffix))
  const data = encodePatch(spans)
  const fits = data.length <= Math.max(PATCH_FLOOR, Math.floor(piece.length * PATCH_SHARE))
  return fits && sameBytes(renderSpans(root, spans), piece)
    ? { end, candidate, keys, patch: { base: plan.root, data } }
    : { end, candidate, keys: keys.slice(0, 1), patch: undefined }
}

/** Whether the chunks `ids` still have the hashes `keys` (a prepared patch's candidate and base). */
const stillNamed = (c: Connection, ids: ReadonlyArray<number>, keys: ReadonlyArray<Uint8Array>): boolean =>
  ids.every((id, i) => {
    const row = c.get<{ readonly hash: Uint8Array }>(SQL.chunkHash, id)
    return row !== undefined && sameBytes(row.hash, keys[i]!)
  })

/** `patchOf`, or the one `work` holds for the same piece and candidate when its chunks are still the ones it was made against. */
const patchFor = (c: Connection, candidate: number, piece: Uint8Array, start: number, cache: ChunkCache | undefined, work: Work): ChosenPatch["patch"] => {
  const known = work.patches.get(start)
  if (known !== undefined && known.end === start + piece.length && known.candidate === candidate && known.keys !== undefined) {
    const ids = known.patch === undefined ? [candidate] : [candidate, known.patch.base]
    if (stillNamed(c, ids, known.keys)) return known.patch
  }
  const chosen = patchOf(c, candidate, piece, start, cache)
  work.patches.set(start, chosen)
  return chosen.patch
}

/**
 * Whether new chunks of one snapshot are worth compressing: after two incompressible chunks in
 * a row (random or already compressed content), only every 16th is tried, so a binary rewrite
 * does not pay the compressor's full cost on every chunk.
 */
interface Writing {
  misses: number
  /**
   * Raw chunks of one snapshot share one body row (a pack, up to `PACK_BYTES`), whose id is the
   * first one's: one row per chunk would cost each a partly filled page, which made a file of
   * fresh random bytes 2% larger than storing it whole.
   */
  pack: { first: number | undefined; readonly pieces: Array<Uint8Array>; at: number }
}

const PACK_BYTES = 4 * 1024 * 1024

const shouldTry = (state: Writing): boolean => state.misses < 2 || state.misses % 16 === 0

/**
 * The body of a new chunk: a patch of the whole chunk below `candidate` when that is small, else
 * whole (compressed when that pays, or raw).
 */
const chooseBody = (
  c: Connection,
  piece: Uint8Array,
  start: number,
  candidate: number | undefined,
  state: Writing,
  cache: ChunkCache | undefined,
  work: Work
): Body => {
  const patch = candidate === undefined ? undefined : patchFor(c, candidate, piece, start, cache, work)
  if (patch !== undefined) return { codec: Codec.patch, ...patch }
  if (!shouldTry(state)) {
    state.misses++
    return { codec: Codec.raw }
  }
  const end = start + piece.length
  const known = work.compressed.get(start)
  let body = known?.end === end ? known.body : undefined
  if (body === undefined) {
    body = compressChunk(piece)
    work.compressed.set(start, { end, body })
  }
  if (body.codec === Codec.raw) {
    state.misses++
    return { codec: Codec.raw }
  }
  state.misses = 0
  return { codec: Codec.lz4, data: body.data }
}

/** Writes the pending pack's body row. */
const flushPack = (c: Connection, state: Writing): void => {
  const { pack } = state
  if (pack.first !== undefined) c.run(SQL.insertBody, pack.first, joinPieces(pack.pieces))
  state.pack = { first: undefined, pieces: [], at: 0 }
}

/** Writes one new chunk with its chosen body; returns its id. A raw chunk joins the pending pack. */
const writeChunk = (c: Connection, key: Buffer, piece: Uint8Array, body: Body, state: Writing): number => {
  if (body.codec === Codec.patch) return insertRow(c, key, piece.length, Codec.patch, body.base, 1, body.data)
  if (body.codec === Codec.lz4) return insertRow(c, key, piece.length, Codec.lz4, null, 0, body.data)
  if (state.pack.at + piece.length > PACK_BYTES) flushPack(c, state)
  const { pack } = state
  const id = c.get<{ readonly id: number }>(SQL.insertChunk, key, piece.length, Codec.raw, null, 0, pack.first ?? null, pack.at)!.id
  pack.first ??= id
  pack.pieces.push(piece)
  pack.at += piece.length
  return id
}

/** A chunk's row and its own body row; returns its id. */
const insertRow = (c: Connection, key: Buffer, size: number, codec: Codec, base: number | null, depth: number, data: Uint8Array): number => {
  const id = c.get<{ readonly id: number }>(SQL.insertChunk, key, size, codec, base, depth, null, 0)!.id
  c.run(SQL.insertBody, id, data)
  return id
}

/**
 * The boundaries of the base version's chunks `baseIds`, from their sizes; undefined when a
 * chunk is missing.
 */
const baseCutsOf = (c: Connection, baseIds: ReadonlyArray<number>): Array<number> | undefined => {
  const sizes = new Map<number, number>()
  for (const row of c.all<{ readonly id: number; readonly size: number }>(SQL.chunkSizes, JSON.stringify(baseIds))) sizes.set(row.id, row.size)
  const cuts: Array<number> = []
  let end = 0
  for (const id of baseIds) {
    const size = sizes.get(id)
    if (size === undefined) return undefined
    end += size
    cuts.push(end)
  }
  return cuts
}

const sameNumbers = (a: ReadonlyArray<number> | undefined, b: ReadonlyArray<number> | undefined): boolean =>
  a === b || (a !== undefined && b !== undefined && a.length === b.length && a.every((n, i) => n === b[i]))

/**
 * The cut points of `bytes`. Given its base version's chunks and bytes, only the edited stretch
 * is scanned (storing a one-line edit of a 5 MB file then takes about 3 ms instead of 18),
 * unless the base's chunks do not cover its bytes or were cut by other rules (the first chunked
 * release's): then, as without a base, the whole version. `knownCuts` are the base's boundaries
 * when it is not stored yet (planned by its own `prepare`).
 */
const cutsOf = (
  c: Connection,
  bytes: Uint8Array,
  baseIds: ReadonlyArray<number> | undefined,
  baseBytes: Uint8Array | undefined,
  work: Work,
  knownCuts?: ReadonlyArray<number>
): Cuts => {
  const baseCuts = baseIds === undefined || baseBytes === undefined ? undefined : knownCuts ?? baseCutsOf(c, baseIds)
  if (work.cuts !== undefined && sameNumbers(work.cuts.baseCuts, baseCuts)) return work.cuts.result
  const result = (baseCuts === undefined ? undefined : cutPointsAfterEdit(baseBytes!, baseCuts, bytes)) ?? { cuts: cutPoints(bytes) }
  work.cuts = { baseCuts, result }
  return result
}

/** Where `walkChunks` sends a snapshot's pieces: `put` stores them, `prepare` only works them out. */
interface Sink {
  /** The id of the stored chunk with this hash, if any. */
  readonly find: (key: Buffer) => number | undefined
  /** Stores a new chunk (or, preparing, stands one in); returns its id. */
  readonly add: (key: Buffer, piece: Uint8Array, start: number, candidate: number | undefined) => number
}

/**
 * The chunk ids of `bytes`, cut at `cuts`, in order. Chunks already stored (anywhere) are
 * reused (those `cuts.kept` says repeat a chunk of `baseIds` without hashing them); a new one is
 * paired with the chunk of `baseIds` at the same place (after the last chunk both share) as its
 * patch candidate.
 */
const walkChunks = (
  bytes: Uint8Array,
  hash: Sha256Hash,
  baseIds: ReadonlyArray<number> | undefined,
  cuts: Cuts,
  sink: Sink,
  work: Work
): Array<number> => {
  const position = new Map<number, number>()
  baseIds?.forEach((id, i) => {
    if (!position.has(id)) position.set(id, i)
  })
  const ids: Array<number> = []
  let anchor = -1
  let gap = 0
  let start = 0
  for (const [k, cut] of cuts.cuts.entries()) {
    const piece = bytes.subarray(start, cut)
    const at = start
    start = cut
    const kept = cuts.kept?.[k] ?? -1
    if (baseIds !== undefined && kept >= 0) {
      ids.push(baseIds[kept]!)
      anchor = kept
      gap = 0
      continue
    }
    const key = keyOf(piece, at, cuts.cuts.length === 1 ? hash : undefined, work)
    const found = sink.find(key)
    if (found !== undefined) {
      ids.push(found)
      const inBase = position.get(found)
      if (inBase !== undefined) {
        anchor = inBase
        gap = 0
      } else gap++
      continue
    }
    ids.push(sink.add(key, piece, at, baseIds?.[anchor + 1 + gap]))
    gap++
  }
  return ids
}

/** A piece's chunk hash (a one-chunk snapshot's is the snapshot's own, `whole`). */
const keyOf = (piece: Uint8Array, start: number, whole: Sha256Hash | undefined, work: Work): Buffer => {
  if (whole !== undefined) return chunkKey(whole)
  const known = work.keys.get(start)
  if (known !== undefined && known.end === start + piece.length) return known.key
  const key = chunkKey(sha256(piece))
  work.keys.set(start, { end: start + piece.length, key })
  return key
}

const writing = (): Writing => ({ misses: 0, pack: { first: undefined, pieces: [], at: 0 } })

/**
 * The stored, unpruned base snapshot's row and chunk ids (a damaged manifest only costs the
 * sharing: its own reads report it).
 */
const baseOf = (c: Connection, hash: Sha256Hash, base: Sha256Hash | undefined): { readonly row: SnapshotRow | undefined; readonly ids: Array<number> | undefined } => {
  const row = base === undefined || base === hash ? undefined : c.get<SnapshotRow>(SQL.snapshot, base)
  if (row === undefined || row.pruned_at !== null) return { row: undefined, ids: undefined }
  try {
    return { row, ids: manifestOf(c, row) }
  } catch (e) {
    if (!(e instanceof CodecError)) throw e
    return { row: undefined, ids: undefined }
  }
}

// -------------------------------------------------------------------------------------
// reads
// -------------------------------------------------------------------------------------

/**
 * Whether a snapshot's bytes are here, pruned, or unknown (no content is read). A row of the
 * first release's `blobs` table not moved yet counts as stored.
 *
 * @category constructors
 * @since 0.1.0
 */
export const stateOf = (c: Connection, hash: Sha256Hash): SnapshotState => {
  const row = c.get<{ readonly pruned_at: string | null }>(SQL.snapshotState, hash)
  if (row !== undefined) return row.pruned_at === null ? "stored" : "pruned"
  return c.get(SQL.legacyBlob, hash) === undefined ? "missing" : "stored"
}

/**
 * Reads one snapshot, verified: its bytes, `Pruned`, or `Missing`. Throws a `StoreError`
 * (`Corrupt`, naming the snapshot and, when it can tell, the chunk) when the stored content
 * does not rebuild the bytes its hash names. With a `cache`, chunks it holds are not read or
 * decompressed again, and the chunks of a verified read enter it.
 *
 * @category constructors
 * @since 0.1.0
 */
export const read = (c: Connection, operation: string, hash: Sha256Hash, cache?: ChunkCache): Lookup => {
  const row = c.get<SnapshotRow>(SQL.snapshot, hash)
  if (row !== undefined) {
    return row.pruned_at === null
      ? { _tag: "Stored", bytes: finish(gather(c, operation, hash, row, cache), cache) }
      : { _tag: "Pruned", prunedAt: row.pruned_at }
  }
  // Not moved yet (a database of the first release being migrated, or read by a process that
  // does not migrate): the old row, checked the same way.
  const legacy = c.get<{ readonly size: number; readonly bytes: Uint8Array }>(SQL.legacyBlob, hash)
  if (legacy === undefined) return { _tag: "Missing" }
  const bytes = view(legacy.bytes)
  if (bytes.byteLength !== legacy.size || sha256(bytes) !== hash) {
    throw corrupt(operation, hash, "its bytes do not match its hash or size")
  }
  return { _tag: "Stored", bytes }
}

// -------------------------------------------------------------------------------------
// writes
// -------------------------------------------------------------------------------------

/**
 * How `put` may store a snapshot: `base`, a stored snapshot the bytes were edited from (the
 * previous version of the file), lets new chunks be patches of its chunks and the manifest an
 * edit of its manifest; `baseBytes`, that version's bytes when the caller has them, spare
 * cutting and hashing the chunks the edit left alone; a `cache` keeps the new chunks' bytes for
 * the next version's patches; `prepared`, the same call's `prepare`, spares the work it did.
 *
 * @category models
 * @since 0.1.0
 */
export interface PutOptions {
  readonly base?: Sha256Hash | undefined
  readonly baseBytes?: Uint8Array | undefined
  readonly cache?: ChunkCache | undefined
  readonly prepared?: Prepared | undefined
}

/**
 * The work of storing a snapshot done before the write lock (see `prepare`). Opaque.
 *
 * @category models
 * @since 0.1.0
 */
export interface Prepared {
  readonly hash: Sha256Hash
  readonly base: Sha256Hash | undefined
  /** The chunk ids it would get (new chunks below zero) and its cut points; undefined when already stored. */
  readonly planned: { readonly ids: ReadonlyArray<number>; readonly cuts: ReadonlyArray<number> } | undefined
  /** @internal */
  readonly work: Work
}

/**
 * Does the CPU-heavy part of `put(c, bytes, hash, options)` without writing: cutting the bytes
 * into chunks, hashing them, compressing the new ones or making their patches. Run it outside
 * the write transaction and give the result to `put`: a new 5 MB file then holds the write
 * lock for the inserts only. `put` uses each result only where the database still agrees (the
 * same base boundaries, patch bases with the same hashes; which chunks exist is always looked
 * up again), so a preparation made stale by another writer costs time, never correctness.
 * When the base is not stored yet but is being stored in the same transaction first, give its
 * preparation as `basePrepared`: the edit is then cut against it, and the patches of the
 * chunks it changes are left to `put` (they need the base's chunks stored).
 *
 * @category constructors
 * @since 0.1.0
 */
export const prepare = (
  c: Connection,
  bytes: Uint8Array,
  hash: Sha256Hash,
  options: Omit<PutOptions, "prepared"> & { readonly basePrepared?: Prepared | undefined } = {}
): Prepared => {
  const work = emptyWork()
  const existing = c.get<{ readonly pruned_at: string | null }>(SQL.snapshotState, hash)
  if (existing !== undefined && existing.pruned_at === null) return { hash, base: options.base, planned: undefined, work }
  const stored = baseOf(c, hash, options.base)
  const pending = stored.ids === undefined && options.basePrepared?.hash === options.base ? options.basePrepared?.planned : undefined
  const baseIds = stored.ids ?? pending?.ids
  const cuts = cutsOf(c, bytes, baseIds, options.baseBytes, work, pending?.cuts)
  // New chunks stand in under ids below zero, so a piece repeated within the file is planned once.
  const planned = new Map<string, number>()
  const state = writing()
  const ids = walkChunks(bytes, hash, baseIds, cuts, {
    find: (key) => c.get<{ readonly id: number }>(SQL.chunkId, key)?.id ?? planned.get(cacheKey(key)),
    add: (key, piece, start, candidate) => {
      if (candidate === undefined || candidate >= 0) chooseBody(c, piece, start, candidate, state, options.cache, work)
      const id = -1 - planned.size
      planned.set(cacheKey(key), id)
      return id
    }
  }, work)
  return { hash, base: options.base, planned: { ids, cuts: cuts.cuts }, work }
}

/**
 * Stores `bytes` under `hash` (their sha256, computed by the caller) unless already stored; a
 * pruned snapshot gets its content back. See `PutOptions`. Call inside a transaction.
 *
 * @category constructors
 * @since 0.1.0
 */
export const put = (c: Connection, bytes: Uint8Array, hash: Sha256Hash, options: PutOptions = {}): void => {
  const existing = c.get<{ readonly id: number; readonly pruned_at: string | null }>(SQL.snapshotState, hash)
  if (existing !== undefined && existing.pruned_at === null) return
  const { prepared, cache } = options
  const work = prepared !== undefined && prepared.hash === hash && prepared.base === options.base ? prepared.work : emptyWork()
  const base = baseOf(c, hash, options.base)
  const cuts = cutsOf(c, bytes, base.ids, options.baseBytes, work)
  const state = writing()
  const ids = walkChunks(bytes, hash, base.ids, cuts, {
    find: (key) => c.get<{ readonly id: number }>(SQL.chunkId, key)?.id,
    add: (key, piece, start, candidate) => {
      const id = writeChunk(c, key, piece, chooseBody(c, piece, start, candidate, state, cache, work), state)
      // A whole chunk is there for the next version's patch of it, a patched one for reads of
      // this version, neither read back from the table (its key is its bytes' hash).
      cache?.set(cacheKey(key), piece)
      return id
    }
  }, work)
  flushPack(c, state)
  const whole = encodeManifest(ids)
  // An edit of the base's manifest only when it is smaller (never for a one-chunk file): the
  // fewer manifest deltas, the shorter the chains reads follow.
  const baseRow = base.row
  const edit = baseRow !== undefined && base.ids !== undefined && baseRow.depth < MAX_MANIFEST_DEPTH ? encodeManifestDelta(base.ids, ids) : undefined
  const asDelta = baseRow !== undefined && edit !== undefined && edit.length < whole.length
  const manifest = asDelta ? edit : whole
  const baseId = asDelta ? baseRow.id : null
  const depth = asDelta ? baseRow.depth + 1 : 0
  if (existing === undefined) c.run(SQL.insertSnapshot, hash, bytes.byteLength, baseId, depth, manifest)
  else c.run(SQL.restoreSnapshot, bytes.byteLength, baseId, depth, manifest, existing.id)
}

// -------------------------------------------------------------------------------------
// migration of the first release's blobs
// -------------------------------------------------------------------------------------

/**
 * Whether the first release's `blobs` table still holds rows (a read: cheap at every open).
 *
 * @category constructors
 * @since 0.1.0
 */
export const hasLegacyBlobs = (c: Connection): boolean => c.get(SQL.legacyAny) !== undefined

/**
 * One step of the in-place migration: moves the `blobs` rows after rowid `after` (up to
 * `limits.rows` rows and about `limits.bytes` bytes) into the snapshot store and deletes them.
 * `bases` maps a snapshot to the one it was edited from (from the records), used when that one
 * has moved already. A row whose bytes do not match its hash stays where it is. Call inside a
 * transaction: a step is all or nothing, so a killed process leaves whole steps done and the
 * next open continues.
 *
 * @category constructors
 * @since 0.1.0
 */
export const moveLegacyBlobs = (
  c: Connection,
  bases: ReadonlyMap<string, Sha256Hash>,
  after: number,
  limits: { readonly rows: number; readonly bytes: number }
): MoveStep => {
  const rows = c.all<{ readonly row: number; readonly hash: Sha256Hash; readonly size: number }>(SQL.legacyAfter, after, limits.rows)
  let moved = 0
  let damaged = 0
  let last: number | undefined
  let taken = 0
  for (const r of rows) {
    if (last !== undefined && taken + r.size > limits.bytes) break
    const blob = c.get<{ readonly bytes: Uint8Array }>(SQL.legacyBytes, r.row)
    last = r.row
    if (blob === undefined) continue
    const bytes = view(blob.bytes)
    taken += bytes.byteLength
    if (bytes.byteLength !== r.size || sha256(bytes) !== r.hash) {
      damaged++
      continue
    }
    const base = bases.get(r.hash)
    put(c, bytes, r.hash, { base: base !== undefined && stateOf(c, base) === "stored" ? base : undefined })
    c.run(SQL.legacyDelete, r.row)
    moved++
  }
  return { moved, damaged, last }
}

// -------------------------------------------------------------------------------------
// retention
// -------------------------------------------------------------------------------------

/**
 * Marks the given stored snapshots pruned at `at` (their hash and size stay), then removes
 * every chunk no unpruned snapshot needs, directly or as the base of a delta it needs. An
 * unpruned snapshot whose manifest is an edit of a pruned one's gets a whole manifest first, so
 * pruned manifests are needed by nothing and are emptied. Call inside a transaction.
 *
 * @category constructors
 * @since 0.1.0
 */
export const prune = (c: Connection, operation: string, hashes: Iterable<Sha256Hash>, at: string): PruneCounts => {
  const rows = c.all<{ readonly id: number; readonly hash: string; readonly base: number | null; readonly pruned_at: string | null }>(
    SQL.snapshotLinks
  )
  const byHash = new Map(rows.map((r) => [r.hash, r]))
  const baseOf = new Map(rows.map((r) => [r.id, r.base]))
  const going = new Set<number>()
  for (const hash of hashes) {
    const r = byHash.get(hash)
    if (r !== undefined && r.pruned_at === null) going.add(r.id)
  }
  // Bases are mostly the snapshots just before: a few hundred recent manifests spare most chains.
  const memo = new Map<number, ReadonlyArray<number>>()
  const readManifest = (id: number): Array<number> => {
    const row = c.get<SnapshotRow>(SQL.snapshotById, id)!
    try {
      const ids = manifestOf(c, row, memo)
      memo.set(id, ids)
      if (memo.size > 512) memo.delete(memo.keys().next().value!)
      return ids
    } catch (e) {
      // Never delete what an unreadable manifest might need: stop and say which one.
      if (e instanceof CodecError) throw new StoreError({ operation, reason: "Corrupt", detail: `snapshot #${id}: ${e.detail}`, cause: e })
      throw e
    }
  }
  const live = new Set<number>()
  const links = new Map<number, { readonly base: number | null; readonly pack: number | null }>()
  for (const l of c.all<{ readonly id: number; readonly base: number | null; readonly pack: number | null }>(SQL.chunkLinks)) {
    links.set(l.id, { base: l.base, pack: l.pack })
  }
  for (const r of rows) {
    if (r.pruned_at !== null || going.has(r.id)) continue
    const ids = readManifest(r.id)
    let chain = r.base
    while (chain !== null && !going.has(chain)) chain = baseOf.get(chain) ?? null
    if (chain !== null) c.run(SQL.wholeManifest, encodeManifest(ids), r.id)
    for (const id of ids) {
      for (let k: number | null = id; k !== null && !live.has(k); k = links.get(k)?.base ?? null) live.add(k)
    }
  }
  for (const id of going) c.run(SQL.prune, at, EMPTY, id)
  let chunks = 0
  for (const id of links.keys()) if (!live.has(id)) chunks += c.run(SQL.deleteChunk, id)
  // A body row goes when no live chunk reads it (a pack stays while one of its chunks lives).
  const liveBodies = new Set([...live].map((id) => links.get(id)?.pack ?? id))
  let bytes = 0
  for (const b of c.all<{ readonly id: number; readonly bytes: number }>(SQL.bodySizes)) {
    if (liveBodies.has(b.id)) continue
    c.run(SQL.deleteBody, b.id)
    bytes += b.bytes
  }
  return { snapshots: going.size, chunks, bytes }
}
