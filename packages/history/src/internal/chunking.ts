/**
 * Content-defined chunking of snapshot bytes (FastCDC-style normalized chunking over a gear
 * rolling hash): the boundaries depend only on the bytes near them, so a local edit moves one
 * or two boundaries and every other chunk of the file stays byte-identical, and is stored once.
 *
 * The gear table and the size bounds are part of the storage format in spirit: changing them
 * never breaks reading (chunks are addressed by their own hash), it only stops new versions
 * from sharing chunks with old ones (the first chunked release cut 4x smaller chunks: a file's
 * first version written by this one shares nothing with its older versions, and is stored
 * whole once).
 */
import { sameBytes } from "@forkjoin/patch/Bytes"

// The sizes, measured in the snapshot-storage ADR: an edited chunk is stored as a patch, so a
// larger chunk costs a write little, while a read pays per chunk (a row, a body, a decompression
// call and its allocation): reading a 4.65 MB file back took 12-13 ms with 32 KiB chunks, 8-10
// ms with 128 KiB, about the same with 256 KiB (which stored 40% more).
/** No boundary closer than this to the previous one (bytes): below it the hash is not even computed. */
export const MIN_CHUNK = 32 * 1024
/** The target average chunk size (bytes). */
export const AVG_CHUNK = 128 * 1024
/** A chunk is cut here when no boundary was found (bytes). */
export const MAX_CHUNK = 512 * 1024

// 256 pseudo-random 32-bit words from a fixed seed (mulberry32), generated once: a fixed table
// keeps boundaries identical across processes and releases.
const GEAR: Uint32Array = (() => {
  const table = new Uint32Array(256)
  let a = 0x9e3779b9
  for (let i = 0; i < 256; i++) {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    table[i] = (t ^ (t >>> 14)) >>> 0
  }
  return table
})()

// `h = (h << 1) + gear[byte]`: bit k of h depends on the last k + 1 bytes, so masks test the top
// bits (a 32-byte window). Normalized chunking: a stricter mask (2 more bits) before the
// average size and a looser one (2 fewer) after it, which narrows the spread of chunk sizes.
const BITS = Math.log2(AVG_CHUNK)
const MASK_STRICT = (((1 << (BITS + 2)) - 1) << (32 - BITS - 2)) | 0
const MASK_LOOSE = (((1 << (BITS - 2)) - 1) << (32 - BITS + 2)) | 0

/**
 * The end of the chunk of `bytes` that starts at `start` (below `bytes.length`): it depends only
 * on `start` and the bytes from there to the cut (and on the input's end when that comes first).
 */
const nextCut = (bytes: Uint8Array, start: number): number => {
  const end = Math.min(bytes.length, start + MAX_CHUNK)
  if (end - start <= MIN_CHUNK) return end
  const normal = Math.min(end, start + AVG_CHUNK)
  let h = 0
  let i = start + MIN_CHUNK
  for (; i < normal; i++) {
    h = ((h << 1) + GEAR[bytes[i]!]!) | 0
    if ((h & MASK_STRICT) === 0) return i + 1
  }
  for (; i < end; i++) {
    h = ((h << 1) + GEAR[bytes[i]!]!) | 0
    if ((h & MASK_LOOSE) === 0) return i + 1
  }
  return end
}

/**
 * The end offsets of the chunks of `bytes`, ascending; the last one is `bytes.length`. Empty
 * input has no chunks; input up to `MIN_CHUNK` bytes is one chunk.
 */
export const cutPoints = (bytes: Uint8Array): Array<number> => {
  const cuts: Array<number> = []
  for (let start = 0; start < bytes.length;) {
    start = nextCut(bytes, start)
    cuts.push(start)
  }
  return cuts
}

/**
 * Whether `cut` can end the chunk of `bytes` starting at `start`: a size within the bounds, and
 * the rolling hash's mask met at its last byte, or the largest size, or the input's end. (Not
 * that no earlier byte met it: checking that is the scan this spares.)
 */
const plausibleCut = (bytes: Uint8Array, start: number, cut: number): boolean => {
  const size = cut - start
  if (size <= 0 || size > MAX_CHUNK) return false
  if (cut === bytes.length || size === MAX_CHUNK) return true
  if (size <= MIN_CHUNK) return false
  // A byte leaves the hash 32 steps after it entered (each step shifts it one bit).
  let h = 0
  for (let i = Math.max(start + MIN_CHUNK, cut - 32); i < cut; i++) h = ((h << 1) + GEAR[bytes[i]!]!) | 0
  return (h & (cut - 1 < start + AVG_CHUNK ? MASK_STRICT : MASK_LOOSE)) === 0
}

/** The cut points of an edited version, and which chunks of the version before it repeats. */
export interface EditCuts {
  /** As `cutPoints(after)` returns them. */
  readonly cuts: ReadonlyArray<number>
  /** For each chunk of `after`, the index of the chunk of `before` with the same bytes, or -1. */
  readonly kept: ReadonlyArray<number>
}

/**
 * The cut points of `after`, an edit of `before` cut at `beforeCuts`, scanning only where the
 * two differ: the chunks `after` keeps at its start keep their boundaries, and once a boundary
 * of `after` lands where a run of chunks it keeps at its end starts, the rest follow `before`'s.
 * The same cuts as `cutPoints(after)` when `beforeCuts` are `cutPoints(before)`; undefined when
 * they cannot be (they do not cover `before`, or a boundary is not one this chunker makes).
 */
export const cutPointsAfterEdit = (before: Uint8Array, beforeCuts: ReadonlyArray<number>, after: Uint8Array): EditCuts | undefined => {
  const count = beforeCuts.length
  if (count === 0 || beforeCuts[count - 1] !== before.length) return undefined
  const startOf = (k: number): number => (k === 0 ? 0 : beforeCuts[k - 1]!)
  for (let k = 0; k < count; k++) {
    if (!plausibleCut(before, startOf(k), beforeCuts[k]!)) return undefined
  }
  const cuts: Array<number> = []
  const kept: Array<number> = []
  // The chunks kept at the start (not `before`'s last: where it ends depended on its end).
  let first = 0
  for (; first < count - 1; first++) {
    const end = beforeCuts[first]!
    if (end > after.length || !sameBytes(before.subarray(startOf(first), end), after.subarray(startOf(first), end))) break
    cuts.push(end)
    kept.push(first)
  }
  const resumeAt = startOf(first)
  // The chunks kept at the end, shifted by the change in length, past the ones kept at the start.
  const shift = after.length - before.length
  const resync = new Map<number, number>()
  for (let k = count - 1; k >= first; k--) {
    const from = startOf(k) + shift
    if (from < resumeAt || !sameBytes(before.subarray(startOf(k), beforeCuts[k]), after.subarray(from, beforeCuts[k]! + shift))) break
    resync.set(from, k)
  }
  for (let at = resumeAt; at < after.length;) {
    const k = resync.get(at)
    if (k !== undefined) {
      for (let j = k; j < count; j++) {
        cuts.push(beforeCuts[j]! + shift)
        kept.push(j)
      }
      break
    }
    at = nextCut(after, at)
    cuts.push(at)
    kept.push(-1)
  }
  return { cuts, kept }
}
