/**
 * Rebuilding chunks of the snapshot store from their rows: which bodies one read needs (a patch
 * is one hop from a whole chunk, a first chunked release's delta chain is composed into spans of
 * its root) and the bytes of each root, decompressed on first use.
 *
 * @since 0.1.0
 */
import { type ChunkCache, cacheKey } from "./cache.ts"
import { type ChunkMeta, MAX_CHUNK_DEPTH, view } from "./rows.ts"
import { applyDeltaSpans, Codec, CodecError, decodePatch, decompressChunk, type Span, spansLength, wholeSpans } from "../snapshotCodec.ts"
import type { Connection } from "../../Sqlite.ts"

const SQL = {
  // The chunks with the given ids and every delta base below them (UNION: each row once, and a
  // damaged table with a cycle still ends).
  chunkClosure: `WITH RECURSIVE need(id) AS (
      SELECT value FROM json_each(?)
      UNION SELECT c.base FROM chunks c JOIN need ON c.id = need.id WHERE c.codec IN (2, 3) AND c.base IS NOT NULL
    )
    SELECT c.id, c.hash, c.size, c.codec, c.base, c.depth, c.pack, c.pack_at FROM need JOIN chunks c ON c.id = need.id`,
  chunkBodies: "SELECT id, data FROM chunk_bodies WHERE id IN (SELECT value FROM json_each(?))"
} as const

/** How a chunk's bytes are rebuilt: spans of the bytes of chunk `root` (whole, or cached). */
export interface Plan {
  readonly root: number
  readonly spans: ReadonlyArray<Span>
}

/** The chunks of one read: their rows, how each is rebuilt, and the bytes of the roots it needs. */
export interface Resolved {
  readonly metas: ReadonlyMap<number, ChunkMeta>
  readonly plans: ReadonlyMap<number, Plan>
  /** Roots at hand (raw or cached), and the compressed ones once `rootOf` decompressed them. */
  readonly roots: Map<number, Uint8Array>
  /** The compressed bodies of the other roots, decompressed on first use (see `rootOf`). */
  readonly packed: ReadonlyMap<number, Uint8Array>
  /** The roots this read decompressed, with their cache keys. */
  readonly decompressed: Map<number, string>
}

/** Whether a chunk is stored whole (raw or compressed), not as an edit of another. */
export const isWhole = (meta: ChunkMeta): boolean => meta.codec === Codec.raw || meta.codec === Codec.lz4

/**
 * How to rebuild chunks by id, in two queries: the rows of the chunks and of every base below
 * them (one recursive query), then the bodies the cache does not make unnecessary. A patch is
 * one hop from a whole chunk; a delta chain of the first chunked release is composed into spans
 * of its root. With `shortcut`, a chunk the cache holds is its own root (reads); without, roots
 * are always whole chunks of the table (writes: a patch must name a stored base).
 */
export const resolve = (c: Connection, ids: ReadonlyArray<number>, cache: ChunkCache | undefined, shortcut: boolean): Resolved => {
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
export const rootOf = (r: Resolved, id: number): Uint8Array => {
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
