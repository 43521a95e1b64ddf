/**
 * Writing the snapshot store: cutting a version into content-defined chunks, reusing the ones
 * stored anywhere, storing each new one as a patch of the chunk it replaces, compressed, or raw
 * in a shared pack, and its manifest whole or as an edit of its base's. `prepare` does the CPU
 * work before the write lock, `put` writes.
 *
 * @since 0.1.0
 */
import { sameBytes, sha256 } from "@forkjoin/patch/Bytes"
import type { Sha256Hash } from "@forkjoin/schema"
import { cutPoints, cutPointsAfterEdit, type EditCuts } from "../chunking.ts"
import {
  Codec,
  CodecError,
  commonEnds,
  compressChunk,
  encodeManifest,
  encodeManifestDelta,
  encodePatch,
  joinPieces,
  renderSpans,
  spliceSpans
} from "../snapshotCodec.ts"
import type { Connection } from "../../Sqlite.ts"
import { type ChunkCache, cacheKey } from "./cache.ts"
import { type Plan, resolve, rootOf } from "./chunks.ts"
import { chunkKey, manifestOf, MAX_MANIFEST_DEPTH, type SnapshotRow, snapshotSql } from "./rows.ts"

// A chunk is stored as a patch of the whole chunk below the one it replaces while the patch is
// at most this share of it (or this floor): every version of a chunk edited again and again
// carries all its edits since that whole chunk, so past the bound it is stored whole again.
const PATCH_SHARE = 1 / 16
const PATCH_FLOOR = 256

const SQL = {
  ...snapshotSql,
  insertSnapshot: "INSERT INTO snapshots (hash, size, base, depth, manifest) VALUES (?, ?, ?, ?, ?)",
  restoreSnapshot: "UPDATE snapshots SET size = ?, base = ?, depth = ?, manifest = ?, pruned_at = NULL WHERE id = ?",
  chunkId: "SELECT id FROM chunks WHERE hash = ?",
  chunkSizes: "SELECT id, size FROM chunks WHERE id IN (SELECT value FROM json_each(?))",
  chunkHash: "SELECT hash FROM chunks WHERE id = ?",
  insertChunk: "INSERT INTO chunks (hash, size, codec, base, depth, pack, pack_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
  insertBody: "INSERT INTO chunk_bodies (id, data) VALUES (?, ?)"
} as const

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
export interface Work {
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
