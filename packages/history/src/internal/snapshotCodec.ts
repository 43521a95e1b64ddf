/**
 * The byte encodings of the snapshot store (`SnapshotStore.ts`): compressed chunk bodies (LZ4), chunk
 * deltas, and manifests (a snapshot's list of chunk ids, whole or as an edit of its base's
 * list). Pure functions over bytes: no SQL, no hashing. Every decoder throws `CodecError` on
 * input it cannot decode, so the store can report the snapshot as corrupt, never wrong bytes.
 */
import * as Schema from "effect/Schema"
import { createRequire } from "node:module"

/** Input that is not what its encoder produces (the store reports it as a corrupt snapshot). */
export class CodecError extends Schema.TaggedError<CodecError>()("CodecError", {
  detail: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return this.detail
  }
}

// -------------------------------------------------------------------------------------
// chunk bodies
// -------------------------------------------------------------------------------------

/** How a chunk's `data` holds its bytes. */
export const Codec = {
  /** The bytes themselves (incompressible content). */
  raw: 0,
  /** An LZ4 block after its decompressed length (4 bytes, little-endian), see `decompressChunk`. */
  lz4: 1,
  /** A delta against the chunk's `base` (see `applyDelta`). */
  delta: 2
} as const

/** One of `Codec`'s values. */
export type Codec = typeof Codec[keyof typeof Codec]

// LZ4, measured in the snapshot-storage ADR against deflate levels 1 and 6, brotli and snappy:
// reads are bound by decompression, and LZ4 decompresses the 4.65 MB bench text in 3.5 ms
// where inflate takes 16-20 ms; it compresses 3x faster than deflate level 1, for 30% more
// bytes (the store's target is on bytes after deltas, where the difference is small).
// A chunk is stored compressed only when that saves at least an eighth of it.
const WORTH = 7 / 8

interface Lz4 {
  readonly compressSync: (data: Buffer) => Buffer
  readonly uncompressSync: (data: Buffer) => Buffer
}

let lz4Binding: Lz4 | undefined
// Loaded on first use, not at import: the native addon costs ~5 ms to load, which commands
// that never touch snapshot bytes (and the CLI's start) should not pay. Resolved from this
// module's location: `import.meta.url` in ES modules (sources, the library bundle), the
// bundle's `__filename` in the CLI's CommonJS bundle (where `import.meta` is empty).
const lz4 = (): Lz4 => (lz4Binding ??= createRequire(import.meta.url ?? __filename)("lz4-napi") as Lz4)

const asBuffer = (bytes: Uint8Array): Buffer => Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)

/** The body of a new chunk: LZ4-compressed when that pays, else raw. */
export const compressChunk = (bytes: Uint8Array): { readonly codec: Codec; readonly data: Uint8Array } => {
  if (bytes.length === 0) return { codec: Codec.raw, data: bytes }
  const packed = lz4().compressSync(asBuffer(bytes))
  return packed.length <= bytes.length * WORTH ? { codec: Codec.lz4, data: packed } : { codec: Codec.raw, data: bytes }
}

/**
 * The bytes of an LZ4 chunk body, which must decompress to exactly `expectedLength` bytes (its
 * length prefix is checked first: damaged data must not allocate more than the chunk claims).
 */
export const decompressChunk = (data: Uint8Array, expectedLength: number): Uint8Array => {
  if (data.length < 4 || asBuffer(data).readUInt32LE(0) !== expectedLength) {
    throw new CodecError({ detail: `a compressed chunk does not announce its ${expectedLength} bytes` })
  }
  let out: Uint8Array
  try {
    out = lz4().uncompressSync(asBuffer(data))
  } catch (e) {
    throw new CodecError({ detail: `a compressed chunk does not decompress (${e instanceof Error ? e.message : String(e)})`, cause: e })
  }
  if (out.length !== expectedLength) throw new CodecError({ detail: `a compressed chunk decompresses to ${out.length} bytes, not ${expectedLength}` })
  return out
}

// -------------------------------------------------------------------------------------
// chunk deltas
// -------------------------------------------------------------------------------------

/**
 * The delta of `target` against `base` when it is small: the lengths of their common prefix and
 * suffix, then the bytes between (`varint prefix, varint suffix, middle`). A chunk a local edit
 * touched differs from the chunk it replaced in one stretch; anything else is stored whole.
 * Undefined when the middle is over `maxMiddle` bytes.
 */
export const makeDelta = (base: Uint8Array, target: Uint8Array, maxMiddle: number): Uint8Array | undefined => {
  const limit = Math.min(base.length, target.length)
  let prefix = 0
  while (prefix < limit && base[prefix] === target[prefix]) prefix++
  let suffix = 0
  const rest = limit - prefix
  while (suffix < rest && base[base.length - 1 - suffix] === target[target.length - 1 - suffix]) suffix++
  const middle = target.length - prefix - suffix
  if (middle > maxMiddle) return undefined
  const head: Array<number> = []
  pushVarint(head, prefix)
  pushVarint(head, suffix)
  const out = new Uint8Array(head.length + middle)
  out.set(head, 0)
  out.set(target.subarray(prefix, prefix + middle), head.length)
  return out
}

/** The bytes a delta makes of `base`. */
export const applyDelta = (base: Uint8Array, delta: Uint8Array): Uint8Array => joinPieces(applyDeltaPieces([base], delta))

/**
 * A delta applied to bytes held as pieces (views, in order), giving pieces again: a chain of
 * deltas is composed without building each intermediate version, then joined once.
 */
export const applyDeltaPieces = (pieces: ReadonlyArray<Uint8Array>, delta: Uint8Array): Array<Uint8Array> => {
  const reader = { at: 0 }
  const prefix = readVarint(delta, reader)
  const suffix = readVarint(delta, reader)
  const length = pieces.reduce((n, p) => n + p.length, 0)
  if (prefix + suffix > length) throw new CodecError({ detail: `a chunk delta keeps ${prefix + suffix} bytes of a ${length}-byte base` })
  return [...slicePieces(pieces, 0, prefix), delta.subarray(reader.at), ...slicePieces(pieces, length - suffix, length)]
}

/** The views of `pieces` covering bytes `from` (inclusive) to `to` (exclusive) of their concatenation. */
const slicePieces = (pieces: ReadonlyArray<Uint8Array>, from: number, to: number): Array<Uint8Array> => {
  const out: Array<Uint8Array> = []
  let at = 0
  for (const p of pieces) {
    const start = Math.max(from, at)
    const end = Math.min(to, at + p.length)
    if (start < end) out.push(p.subarray(start - at, end - at))
    at += p.length
    if (at >= to) break
  }
  return out
}

/** The concatenation of pieces in one new array. */
export const joinPieces = (pieces: ReadonlyArray<Uint8Array>): Uint8Array => {
  if (pieces.length === 1) return pieces[0]!
  const out = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of pieces) {
    out.set(p, at)
    at += p.length
  }
  return out
}

// -------------------------------------------------------------------------------------
// manifests
// -------------------------------------------------------------------------------------

/** A whole manifest: the count, then each chunk id as a zigzag difference from the previous one. */
export const encodeManifest = (ids: ReadonlyArray<number>): Uint8Array => {
  const out: Array<number> = []
  pushVarint(out, ids.length)
  pushIds(out, ids)
  return Uint8Array.from(out)
}

/** The chunk ids of a whole manifest. */
export const decodeManifest = (bytes: Uint8Array): Array<number> => {
  const reader = { at: 0 }
  const ids = readIds(bytes, reader, readVarint(bytes, reader))
  if (reader.at !== bytes.length) throw new CodecError({ detail: "a manifest has trailing bytes" })
  return ids
}

/**
 * A manifest as one splice of its base's ids: keep the common prefix and suffix, replace what is
 * between (`varint at, varint removed, varint count, ids`).
 */
export const encodeManifestDelta = (base: ReadonlyArray<number>, ids: ReadonlyArray<number>): Uint8Array => {
  const limit = Math.min(base.length, ids.length)
  let prefix = 0
  while (prefix < limit && base[prefix] === ids[prefix]) prefix++
  let suffix = 0
  while (suffix < limit - prefix && base[base.length - 1 - suffix] === ids[ids.length - 1 - suffix]) suffix++
  const inserted = ids.slice(prefix, ids.length - suffix)
  const out: Array<number> = []
  pushVarint(out, prefix)
  pushVarint(out, base.length - prefix - suffix)
  pushVarint(out, inserted.length)
  pushIds(out, inserted)
  return Uint8Array.from(out)
}

/** The chunk ids a manifest delta makes of its base's ids. */
export const applyManifestDelta = (base: ReadonlyArray<number>, delta: Uint8Array): Array<number> => {
  const reader = { at: 0 }
  const at = readVarint(delta, reader)
  const removed = readVarint(delta, reader)
  const inserted = readIds(delta, reader, readVarint(delta, reader))
  if (reader.at !== delta.length || at + removed > base.length) throw new CodecError({ detail: "a manifest delta does not fit its base" })
  return [...base.slice(0, at), ...inserted, ...base.slice(at + removed)]
}

// -------------------------------------------------------------------------------------
// varints
// -------------------------------------------------------------------------------------

// Unsigned LEB128 for non-negative safe integers (division, not bit operations: ids may pass 2^31).
const pushVarint = (out: Array<number>, value: number): void => {
  let v = value
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80)
    v = Math.floor(v / 0x80)
  }
  out.push(v)
}

const readVarint = (bytes: Uint8Array, reader: { at: number }): number => {
  let value = 0
  let scale = 1
  for (;;) {
    if (reader.at >= bytes.length) throw new CodecError({ detail: "a varint runs past the end of its field" })
    const b = bytes[reader.at++]!
    value += (b & 0x7f) * scale
    if (b < 0x80) return value
    scale *= 0x80
    if (scale > 2 ** 56) throw new CodecError({ detail: "a varint is too long" })
  }
}

const pushIds = (out: Array<number>, ids: ReadonlyArray<number>): void => {
  let previous = 0
  for (const id of ids) {
    const d = id - previous
    pushVarint(out, d >= 0 ? d * 2 : -d * 2 - 1)
    previous = id
  }
}

const readIds = (bytes: Uint8Array, reader: { at: number }, count: number): Array<number> => {
  if (count > bytes.length - reader.at) throw new CodecError({ detail: `a manifest claims ${count} chunks in ${bytes.length - reader.at} bytes` })
  const ids: Array<number> = []
  let previous = 0
  for (let i = 0; i < count; i++) {
    const z = readVarint(bytes, reader)
    previous += z % 2 === 0 ? z / 2 : -(z + 1) / 2
    ids.push(previous)
  }
  return ids
}
