/**
 * Content-defined chunking and the snapshot store's encodings: cut points cover the input within
 * the size bounds and resynchronise after a local edit; patches (and the first chunked release's
 * deltas), manifests and manifest deltas round-trip; LZ4 bodies decompress back exactly; damaged
 * encodings are refused.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { AVG_CHUNK, cutPoints, cutPointsAfterEdit, MAX_CHUNK, MIN_CHUNK } from "../src/internal/chunking.ts"
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
  literalBytes,
  renderSpans,
  type Span,
  spliceSpans,
  wholeSpans
} from "../src/internal/snapshotCodec.ts"
import { prng } from "../../../test/support/random.ts"
import { noise } from "./snapshotBytes.ts"

/** Seeded text of `n` bytes: lines of pseudo-random words, like source code. */
const text = (seed: number, n: number): Uint8Array => {
  const next = prng(seed).uint32
  const words = ["const", "value", "return", "if", "index", "buffer", "=>", "(", ")", "{", "}", "await", "result"]
  let s = ""
  while (s.length < n) {
    s += `${"  ".repeat(next() % 4)}${words[next() % words.length]} ${words[next() % words.length]}${next() % 1000}\n`
  }
  return new TextEncoder().encode(s.slice(0, n))
}


const chunksOf = (bytes: Uint8Array): Array<string> => {
  const out: Array<string> = []
  let start = 0
  for (const cut of cutPoints(bytes)) {
    out.push(Buffer.from(bytes.subarray(start, cut)).toString("latin1"))
    start = cut
  }
  return out
}

describe("cutPoints", () => {
  it("covers the input in ascending chunks within the size bounds", () => {
    for (const size of [0, 1, MIN_CHUNK, MIN_CHUNK + 1, AVG_CHUNK, 3 * MAX_CHUNK + 17, 1_000_000]) {
      const bytes = text(size, size)
      const cuts = cutPoints(bytes)
      assert.strictEqual(cuts.length === 0 ? 0 : cuts[cuts.length - 1], size)
      let start = 0
      cuts.forEach((cut, i) => {
        assert.isAbove(cut, start)
        assert.isAtMost(cut - start, MAX_CHUNK)
        // Only the last chunk may be shorter than the minimum.
        if (i < cuts.length - 1) assert.isAtLeast(cut - start, MIN_CHUNK)
        start = cut
      })
    }
  })

  it("averages near the target size on text, and cuts incompressible bytes too", () => {
    const bytes = text(7, 2_000_000)
    const average = bytes.length / cutPoints(bytes).length
    assert.isAbove(average, AVG_CHUNK * 0.75)
    assert.isBelow(average, AVG_CHUNK * 1.75)
    assert.isAbove(cutPoints(noise(1, 1_000_000)).length, 1_000_000 / MAX_CHUNK)
  })

  it("a local edit changes at most a few chunks: the rest are identical (property)", () => {
    const base = text(11, 400_000)
    const before = new Set(chunksOf(base))
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: base.length - 1 }),
        fc.integer({ min: 0, max: 200 }),
        fc.uint8Array({ minLength: 0, maxLength: 200 }),
        (at, removed, inserted) => {
          const edited = new Uint8Array([...base.subarray(0, at), ...inserted, ...base.subarray(Math.min(base.length, at + removed))])
          const after = chunksOf(edited)
          const fresh = after.filter((c) => !before.has(c)).length
          // The edited chunk, a boundary it moved, and the chunk after: never the whole file.
          return fresh <= 3
        }
      ),
      { numRuns: 60, seed: 14 }
    )
  })
})

describe("cutPointsAfterEdit", () => {
  /** `bytes` with each of `edits` (at, removed, inserted) applied, from the last place to the first. */
  const edited = (bytes: Uint8Array, edits: ReadonlyArray<readonly [number, number, Uint8Array]>): Uint8Array => {
    let out = bytes
    for (const [at, removed, inserted] of [...edits].sort((a, b) => b[0] - a[0])) {
      const from = Math.min(at, out.length)
      out = Buffer.concat([out.subarray(0, from), inserted, out.subarray(Math.min(out.length, from + removed))])
    }
    return out
  }

  /** The chunks `kept` names have the bytes of the chunks of `before` they name. */
  const keptMatch = (before: Uint8Array, after: Uint8Array, cuts: ReadonlyArray<number>, kept: ReadonlyArray<number>): boolean => {
    const beforeCuts = cutPoints(before)
    return kept.every((k, i) => {
      if (k < 0) return true
      const from = i === 0 ? 0 : cuts[i - 1]!
      const was = before.subarray(k === 0 ? 0 : beforeCuts[k - 1]!, beforeCuts[k]!)
      return Buffer.from(after.subarray(from, cuts[i]!)).equals(Buffer.from(was))
    })
  }

  it("cuts an edited version exactly as a full scan does, reusing the chunks it keeps (property)", () => {
    const bases = [text(21, 1_500_000), noise(22, 900_000), text(23, 3 * MAX_CHUNK + 5), text(24, MIN_CHUNK + 10)]
    const pool = text(27, 2 * MAX_CHUNK)
    const bigInsert = fc.integer({ min: 0, max: 2 * MAX_CHUNK }).map((n) => pool.subarray(0, n))
    const insert = fc.oneof(fc.uint8Array({ maxLength: 300 }), bigInsert)
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: bases.length - 1 }),
        fc.array(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 0, max: 3 * AVG_CHUNK }), insert), { minLength: 1, maxLength: 3 }),
        (which, picks) => {
          const before = bases[which]!
          const after = edited(before, picks.map(([where, removed, inserted]) => [Math.floor(where * before.length), removed, inserted] as const))
          const got = cutPointsAfterEdit(before, cutPoints(before), after)
          if (got === undefined) return false
          return JSON.stringify(got.cuts) === JSON.stringify(cutPoints(after)) && got.kept.length === got.cuts.length &&
            keptMatch(before, after, got.cuts, got.kept)
        }
      ),
      { numRuns: 120, seed: 14 }
    )
  })

  it("scans only the edited stretch of a one-line edit, and handles the edges", () => {
    const before = text(25, 2_000_000)
    const beforeCuts = cutPoints(before)
    const line = new TextEncoder().encode("  one more line\n")
    const middle = edited(before, [[1_000_000, 0, line]])
    const got = cutPointsAfterEdit(before, beforeCuts, middle)!
    assert.deepStrictEqual(got.cuts, cutPoints(middle))
    // Every chunk but the edited one (and a boundary it moved) is kept.
    assert.isAtMost(got.kept.filter((k) => k < 0).length, 2)
    assert.isAtLeast(got.kept.filter((k) => k >= 0).length, beforeCuts.length - 2)
    for (const after of [before, new Uint8Array(0), before.subarray(0, 10), before.subarray(1), edited(before, [[0, 0, line]]), Buffer.concat([before, line]), before.subarray(0, beforeCuts[3]!)]) {
      assert.deepStrictEqual(cutPointsAfterEdit(before, beforeCuts, after)!.cuts, cutPoints(after))
    }
    // Whole chunks removed: the chunks after them follow at once.
    const removed = Buffer.concat([before.subarray(0, beforeCuts[2]!), before.subarray(beforeCuts[5]!)])
    const dropped = cutPointsAfterEdit(before, beforeCuts, removed)!
    assert.deepStrictEqual(dropped.cuts, cutPoints(removed))
    assert.notInclude(dropped.kept, -1)
  })

  it("refuses cut points this chunker would not make, or that do not cover the bytes", () => {
    const before = text(26, 600_000)
    const after = edited(before, [[300_000, 5, new TextEncoder().encode("x")]])
    const fixed = Array.from({ length: Math.ceil(before.length / 40_000) }, (_, i) => Math.min(before.length, (i + 1) * 40_000))
    assert.isUndefined(cutPointsAfterEdit(before, fixed, after))
    assert.isUndefined(cutPointsAfterEdit(before, cutPoints(before).slice(0, -1), after))
    assert.isUndefined(cutPointsAfterEdit(before, [], after))
  })
})

describe("chunk patches", () => {
  /** One edit as a patch: `target` from `base` through `spans` (what rebuilds the current version). */
  const edit = (base: Uint8Array, spans: ReadonlyArray<Span>, target: Uint8Array): Array<Span> => {
    const current = renderSpans(base, spans)
    const { prefix, suffix } = commonEnds(current, target)
    return spliceSpans(spans, prefix, current.length - suffix, target.subarray(prefix, target.length - suffix))
  }

  it("every version of a chain of edits is one patch of the first, rebuilt exactly through its encoding (property)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.array(fc.uint8Array({ maxLength: 200 }), { minLength: 1, maxLength: 8 }), (first, next) => {
        let spans = wholeSpans(first.length)
        for (const target of next) {
          spans = edit(first, spans, target)
          const decoded = decodePatch(encodePatch(spans), target.length, first.length)
          if (!Buffer.from(renderSpans(first, decoded)).equals(Buffer.from(target))) return false
        }
        return true
      }),
      { numRuns: 400, seed: 14 }
    )
  })

  it("edits at several places of a chunk carry only what they change; the same spot edited again replaces its literal", () => {
    const base = text(3, 16_000)
    let current = base
    let spans = wholeSpans(base.length)
    for (const at of [2_000, 9_000, 14_000]) {
      current = new Uint8Array([...current.subarray(0, at), ...new TextEncoder().encode("one changed line\n"), ...current.subarray(at + 10)])
      spans = edit(base, spans, current)
    }
    assert.strictEqual(literalBytes(spans), 3 * 17)
    assert.isBelow(encodePatch(spans).length, 3 * 17 + 20)
    for (let k = 0; k < 50; k++) {
      current = new Uint8Array([...current.subarray(0, 5_000), ...new TextEncoder().encode(String(k).padStart(3, "0")), ...current.subarray(5_003)])
      spans = edit(base, spans, current)
    }
    assert.strictEqual(literalBytes(spans), 3 * 17 + 3)
    assert.deepStrictEqual(renderSpans(base, decodePatch(encodePatch(spans), current.length, base.length)), current)
  })

  it("reads the first chunked release's delta chains as spans of their root", () => {
    // Its format: varint prefix kept, varint suffix kept, the bytes between.
    const delta = (prefix: number, suffix: number, middle: string) => new Uint8Array([prefix, suffix, ...new TextEncoder().encode(middle)])
    const root = new TextEncoder().encode("abcdefghij")
    let spans = wholeSpans(root.length)
    spans = applyDeltaSpans(spans, delta(3, 3, "XY")) // abcXYhij
    spans = applyDeltaSpans(spans, delta(1, 6, "")) // "a" and the last 6 bytes: acXYhij
    assert.strictEqual(new TextDecoder().decode(renderSpans(root, spans)), "acXYhij")
    assert.throws(() => applyDeltaSpans(spans, delta(5, 5, "")), CodecError)
  })

  it("a damaged patch is refused, never applied", () => {
    const good = encodePatch([{ from: 0, length: 4 }, { literal: new Uint8Array([1, 2]) }, { from: 6, length: 4 }])
    assert.strictEqual(decodePatch(good, 10, 10).length, 3)
    assert.throws(() => decodePatch(good, 10, 9), CodecError) // copies past the base
    assert.throws(() => decodePatch(good, 11, 10), CodecError) // rebuilds another size
    assert.throws(() => decodePatch(good.subarray(0, good.length - 1), 10, 10), CodecError) // literal cut short
    assert.throws(() => decodePatch(new Uint8Array([...good, 0]), 10, 10), CodecError) // trailing bytes
    assert.throws(() => decodePatch(new Uint8Array([0x80]), 0, 0), CodecError)
  })
})

describe("manifests", () => {
  it("whole manifests and manifest deltas round-trip (property), ids past 2^31 included", () => {
    const ids = fc.array(fc.oneof(fc.integer({ min: 1, max: 5000 }), fc.integer({ min: 2 ** 31, max: 2 ** 40 })), { maxLength: 80 })
    fc.assert(
      fc.property(ids, ids, (base, next) => {
        const whole = decodeManifest(encodeManifest(next))
        const edited = applyManifestDelta(base, encodeManifestDelta(base, next))
        return JSON.stringify(whole) === JSON.stringify(next) && JSON.stringify(edited) === JSON.stringify(next)
      }),
      { numRuns: 300, seed: 14 }
    )
  })

  it("a one-chunk change costs a few bytes; damaged manifests are refused", () => {
    const base = Array.from({ length: 300 }, (_, i) => 1000 + i)
    const next = base.map((id, i) => (i === 150 ? 99_999 : id))
    assert.isAtMost(encodeManifestDelta(base, next).length, 8)
    const whole = encodeManifest(base)
    assert.throws(() => decodeManifest(whole.subarray(0, whole.length - 1)), CodecError)
    assert.throws(() => decodeManifest(new Uint8Array([...whole, 0])), CodecError)
    assert.throws(() => applyManifestDelta(base.slice(0, 10), encodeManifestDelta(base, next)), CodecError)
  })
})

describe("compressed chunk bodies", () => {
  it("compressible chunks are LZ4 and decompress back exactly; incompressible bytes stay raw", () => {
    const pieces = [text(1, 20_000), text(2, 5_000), text(3, 128 * 1024)]
    const bodies = pieces.map(compressChunk)
    assert.deepStrictEqual(bodies.map((b) => b.codec), [Codec.lz4, Codec.lz4, Codec.lz4])
    bodies.forEach((b, i) => {
      assert.isBelow(b.data.length, pieces[i]!.length * 7 / 8)
      assert.isTrue(Buffer.from(decompressChunk(b.data, pieces[i]!.length)).equals(Buffer.from(pieces[i]!)))
    })
    assert.strictEqual(compressChunk(noise(2, 20_000)).codec, Codec.raw)
    assert.strictEqual(compressChunk(new Uint8Array(0)).codec, Codec.raw)
  })

  it("a wrongly sized, truncated or garbled body is refused or decodes to other bytes, never past its size", () => {
    const original = text(5, 20_000)
    const body = compressChunk(original).data
    assert.throws(() => decompressChunk(body, 19_999), CodecError)
    assert.throws(() => decompressChunk(body, 20_001), CodecError)
    assert.throws(() => decompressChunk(body.subarray(0, body.length - 3), 20_000), CodecError)
    assert.throws(() => decompressChunk(body.subarray(0, 3), 20_000), CodecError)
    // A body claiming a huge size is refused before anything is allocated for it.
    const lying = Uint8Array.from(body)
    lying.set([0xff, 0xff, 0xff, 0x7f], 0)
    assert.throws(() => decompressChunk(lying, 20_000), CodecError)
    // LZ4 carries no checksum: garbled bytes either fail to decode or decode to other bytes,
    // which the store's hash check then reports (see SnapshotStore.test.ts).
    const garbled = Uint8Array.from(body)
    garbled.fill(0xff, 10, 60)
    let decoded: Uint8Array | undefined
    try {
      decoded = decompressChunk(garbled, 20_000)
    } catch (e) {
      assert.instanceOf(e, CodecError)
    }
    if (decoded !== undefined) assert.isFalse(Buffer.from(decoded).equals(Buffer.from(original)))
  })
})
