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
 * The end offsets of the chunks of `bytes`, ascending; the last one is `bytes.length`. Empty
 * input has no chunks; input up to `MIN_CHUNK` bytes is one chunk.
 */
export const cutPoints = (bytes: Uint8Array): Array<number> => {
  const cuts: Array<number> = []
  const n = bytes.length
  let start = 0
  while (start < n) {
    const end = Math.min(n, start + MAX_CHUNK)
    if (end - start <= MIN_CHUNK) {
      cuts.push(end)
      break
    }
    const normal = Math.min(end, start + AVG_CHUNK)
    let h = 0
    let i = start + MIN_CHUNK
    let cut = -1
    for (; i < normal; i++) {
      h = ((h << 1) + GEAR[bytes[i]!]!) | 0
      if ((h & MASK_STRICT) === 0) {
        cut = i + 1
        break
      }
    }
    if (cut < 0) {
      for (; i < end; i++) {
        h = ((h << 1) + GEAR[bytes[i]!]!) | 0
        if ((h & MASK_LOOSE) === 0) {
          cut = i + 1
          break
        }
      }
    }
    if (cut < 0) cut = end
    cuts.push(cut)
    start = cut
  }
  return cuts
}
