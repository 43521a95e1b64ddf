/**
 * The byte encodings of the snapshot store (`SnapshotStore.ts`): compressed chunk bodies (LZ4), chunk
 * deltas, and manifests (a snapshot's list of chunk ids, whole or as an edit of its base's
 * list). Pure functions over bytes: no SQL, no hashing. Every decoder throws `CodecError` on
 * input it cannot decode, so the store can report the snapshot as corrupt, never wrong bytes.
 */
import { byteView } from "@forkjoin/patch/Bytes"
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
  /** A delta against the chunk's `base` (see `applyDeltaSpans`): written by the first chunked release, still read. */
  delta: 2,
  /** Spans of the whole chunk `base` and literal bytes (see `encodePatch`): always one hop. */
  patch: 3
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

/** The body of a new chunk: LZ4-compressed when that pays, else raw. */
export const compressChunk = (bytes: Uint8Array): { readonly codec: Codec; readonly data: Uint8Array } => {
  if (bytes.length === 0) return { codec: Codec.raw, data: bytes }
  const packed = lz4().compressSync(byteView(bytes))
  return packed.length <= bytes.length * WORTH ? { codec: Codec.lz4, data: packed } : { codec: Codec.raw, data: bytes }
}

/**
 * The bytes of an LZ4 chunk body, which must decompress to exactly `expectedLength` bytes (its
 * length prefix is checked first: damaged data must not allocate more than the chunk claims).
 */
export const decompressChunk = (data: Uint8Array, expectedLength: number): Uint8Array => {
  const input = announced(data, expectedLength)
  let out: Uint8Array
  try {
    out = lz4().uncompressSync(input)
  } catch (e) {
    throw undecodable(e)
  }
  return decompressed(out, expectedLength)
}

const announced = (data: Uint8Array, expectedLength: number): Buffer => {
  const input = byteView(data)
  if (input.length < 4 || input.readUInt32LE(0) !== expectedLength) {
    throw new CodecError({ detail: `a compressed chunk does not announce its ${expectedLength} bytes` })
  }
  return input
}

const undecodable = (e: unknown): CodecError =>
  new CodecError({ detail: `a compressed chunk does not decompress (${e instanceof Error ? e.message : String(e)})`, cause: e })

const decompressed = (out: Uint8Array, expectedLength: number): Uint8Array => {
  if (out.length !== expectedLength) throw new CodecError({ detail: `a compressed chunk decompresses to ${out.length} bytes, not ${expectedLength}` })
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
// chunk patches
// -------------------------------------------------------------------------------------

/**
 * One stretch of a chunk rebuilt from a whole base chunk: `length` bytes copied from the base at
 * `from`, or `literal` bytes carried by the patch itself.
 */
export type Span =
  | { readonly from: number; readonly length: number; readonly literal?: undefined }
  | { readonly literal: Uint8Array; readonly from?: undefined }

/** The length of a span. */
const spanLength = (s: Span): number => s.literal === undefined ? s.length : s.literal.length

/** How many bytes `spans` rebuild. */
export const spansLength = (spans: ReadonlyArray<Span>): number => spans.reduce((n, s) => n + spanLength(s), 0)

/** The spans that rebuild a whole chunk of `size` bytes from itself. */
export const wholeSpans = (size: number): Array<Span> => size === 0 ? [] : [{ from: 0, length: size }]

/**
 * `spans` (rebuilding some bytes B) edited to rebuild B with bytes `start` to `end` replaced by
 * `inserted`: the spans before and after are kept (cut where needed), so a chunk edited many
 * times stays one patch of its whole base (one hop on reads) that carries only what differs.
 * Adjacent literals are joined and adjacent copies merged.
 */
export const spliceSpans = (
  spans: ReadonlyArray<Span>,
  start: number,
  end: number,
  inserted: Uint8Array
): Array<Span> => {
  const out: Array<Span> = []
  const push = (s: Span): void => {
    if (spanLength(s) === 0) return
    const last = out[out.length - 1]
    if (last !== undefined && last.literal !== undefined && s.literal !== undefined) {
      out[out.length - 1] = { literal: joinPieces([last.literal, s.literal]) }
    } else if (last !== undefined && last.literal === undefined && s.literal === undefined && last.from + last.length === s.from) {
      out[out.length - 1] = { from: last.from, length: last.length + s.length }
    } else out.push(s)
  }
  let at = 0
  let placed = false
  for (const s of spans) {
    const length = spanLength(s)
    // The part of this span before `start`, then (once) the insertion, then the part after `end`.
    if (at < start) push(cutSpan(s, 0, Math.min(length, start - at)))
    if (!placed && at + length >= start) {
      push({ literal: inserted })
      placed = true
    }
    if (at + length > end) push(cutSpan(s, Math.max(0, end - at), length))
    at += length
  }
  if (!placed) push({ literal: inserted })
  return out
}

/** Bytes `from` to `to` of a span, as a span. */
const cutSpan = (s: Span, from: number, to: number): Span =>
  s.literal === undefined ? { from: s.from + from, length: to - from } : { literal: s.literal.subarray(from, to) }

/** The bytes a patch carries: its literals. */
export const literalBytes = (spans: ReadonlyArray<Span>): number =>
  spans.reduce((n, s) => n + (s.literal === undefined ? 0 : s.literal.length), 0)

/**
 * A patch's bytes: the span count, each span's length doubled (plus one for a literal) and, for a
 * copy, its offset in the base; then every literal's bytes in order.
 */
export const encodePatch = (spans: ReadonlyArray<Span>): Uint8Array => {
  const head: Array<number> = []
  pushVarint(head, spans.length)
  for (const s of spans) {
    if (s.literal === undefined) {
      pushVarint(head, s.length * 2)
      pushVarint(head, s.from)
    } else pushVarint(head, s.literal.length * 2 + 1)
  }
  const out = new Uint8Array(head.length + literalBytes(spans))
  out.set(head, 0)
  let at = head.length
  for (const s of spans) {
    if (s.literal === undefined) continue
    out.set(s.literal, at)
    at += s.literal.length
  }
  return out
}

/**
 * The spans of a patch (literals are views into `bytes`), checked to rebuild exactly `size`
 * bytes from a base of `baseSize` bytes.
 */
export const decodePatch = (bytes: Uint8Array, size: number, baseSize: number): Array<Span> => {
  const reader = { at: 0 }
  const count = readVarint(bytes, reader)
  if (count > bytes.length) throw new CodecError({ detail: `a chunk patch claims ${count} spans in ${bytes.length} bytes` })
  const heads: Array<{ readonly length: number; readonly from: number | undefined }> = []
  let total = 0
  for (let i = 0; i < count; i++) {
    const h = readVarint(bytes, reader)
    const length = Math.floor(h / 2)
    const from = h % 2 === 0 ? readVarint(bytes, reader) : undefined
    if (from !== undefined && from + length > baseSize) {
      throw new CodecError({ detail: `a chunk patch copies bytes ${from}..${from + length} of a ${baseSize}-byte base` })
    }
    heads.push({ length, from })
    total += length
  }
  if (total !== size) throw new CodecError({ detail: `a chunk patch rebuilds ${total} bytes, not ${size}` })
  const spans: Array<Span> = []
  let at = reader.at
  for (const h of heads) {
    if (h.from !== undefined) spans.push({ from: h.from, length: h.length })
    else {
      if (at + h.length > bytes.length) throw new CodecError({ detail: "a chunk patch's literals run past its end" })
      spans.push({ literal: bytes.subarray(at, at + h.length) })
      at += h.length
    }
  }
  if (at !== bytes.length) throw new CodecError({ detail: "a chunk patch has trailing bytes" })
  return spans
}

/** Writes the bytes `spans` rebuild from `base` into `out` at `at`; returns the end offset. */
export const writeSpans = (out: Uint8Array, at: number, base: Uint8Array, spans: ReadonlyArray<Span>): number => {
  let to = at
  for (const s of spans) {
    if (s.literal === undefined) {
      out.set(base.subarray(s.from, s.from + s.length), to)
      to += s.length
    } else {
      out.set(s.literal, to)
      to += s.literal.length
    }
  }
  return to
}

/** The bytes `spans` rebuild from `base`, in a new array (a view of `base` when one span copies all of it). */
export const renderSpans = (base: Uint8Array, spans: ReadonlyArray<Span>): Uint8Array => {
  const only = spans.length === 1 ? spans[0]! : undefined
  if (only !== undefined && only.literal === undefined) return base.subarray(only.from, only.from + only.length)
  const out = new Uint8Array(spansLength(spans))
  writeSpans(out, 0, base, spans)
  return out
}

/**
 * The spans a single-stretch delta makes of `spans`: how the first chunked release's delta
 * chains are read, composed down to their whole root. Its format: the lengths of the prefix and
 * suffix of the base it keeps (varints), then the bytes between.
 */
export const applyDeltaSpans = (spans: ReadonlyArray<Span>, delta: Uint8Array): Array<Span> => {
  const reader = { at: 0 }
  const prefix = readVarint(delta, reader)
  const suffix = readVarint(delta, reader)
  const length = spansLength(spans)
  if (prefix + suffix > length) throw new CodecError({ detail: `a chunk delta keeps ${prefix + suffix} bytes of a ${length}-byte base` })
  return spliceSpans(spans, prefix, length - suffix, delta.subarray(reader.at))
}

/** The lengths of the longest common prefix and suffix of `a` and `b` (not overlapping in either). */
export const commonEnds = (a: Uint8Array, b: Uint8Array): { readonly prefix: number; readonly suffix: number } => {
  const limit = Math.min(a.length, b.length)
  let prefix = 0
  while (prefix < limit && a[prefix] === b[prefix]) prefix++
  let suffix = 0
  const rest = limit - prefix
  while (suffix < rest && a[a.length - 1 - suffix] === b[b.length - 1 - suffix]) suffix++
  return { prefix, suffix }
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
