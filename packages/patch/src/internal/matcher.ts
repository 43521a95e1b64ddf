/**
 * Codex `seek_sequence`: four passes (exact, trim_end, trim, normalise), each scanning every
 * position before the next pass starts.
 *
 * First-match searches (Codex) scan forward from the cursor, which is linear over chunks in
 * file order. Ambiguity detection (native) must also know whether a *second* match exists
 * anywhere after the cursor; for that a pass buckets every line by a hash of its key (typed
 * arrays, no per-line allocation; positions ascending inside a bucket), so a search verifies
 * only the candidates of the pattern line with the smallest bucket, from the cursor on.
 */
import { normalise, trim, trimEnd } from "./rustText.ts"

const PASSES: ReadonlyArray<(s: string) => string> = [(s) => s, trimEnd, trim, normalise]

/** Names of the passes, for error messages. */
export const passNames = ["exact", "trim_end", "trim", "normalise"] as const

/** The pass that matched and the match positions (0-based, ascending, at most `limit`). */
export interface Found {
  readonly pass: number
  readonly positions: ReadonlyArray<number>
}

// FNV-1a over the length and the last 32 UTF-16 units, two units per step: cheap on long
// lines, and a collision only costs one more string comparison.
const hashRange = (s: string, from: number, to: number): number => {
  let h = Math.imul(0x811c9dc5 ^ (to - from), 16777619)
  let k = to - from > 32 ? to - 32 : from
  for (; k + 1 < to; k += 2) h = Math.imul(h ^ (s.charCodeAt(k) | (s.charCodeAt(k + 1) << 16)), 16777619)
  if (k < to) h = Math.imul(h ^ s.charCodeAt(k), 16777619)
  return h >>> 0
}

/** Where the pass-0 keys sit in the file text: hashing one flat string beats hashing slices. */
export interface KeySource {
  readonly text: string
  readonly offsets: Int32Array
}

/** Bucketed line positions of one pass (CSR: bucket b is positions[starts[b] .. starts[b + 1])). */
class PassIndex {
  readonly mask: number
  readonly starts: Int32Array
  readonly positions: Int32Array

  constructor(keys: ReadonlyArray<string>, source: KeySource | undefined) {
    const n = keys.length
    let size = 16
    while (size < n) size <<= 1
    this.mask = size - 1
    const bucketOf = new Int32Array(n)
    const starts = new Int32Array(size + 1)
    const mask = this.mask
    if (source === undefined) {
      for (let i = 0; i < n; i++) {
        const key = keys[i]!
        const b = hashRange(key, 0, key.length) & mask
        bucketOf[i] = b
        starts[b + 1]!++
      }
    } else {
      // Same hash as hashRange, inlined over one flat string: the hot loop of a large native plan.
      const text = source.text
      const offsets = source.offsets
      for (let i = 0; i < n; i++) {
        const from = offsets[i]!
        const to = from + keys[i]!.length
        let h = Math.imul(0x811c9dc5 ^ (to - from), 16777619)
        let k = to - from > 32 ? to - 32 : from
        for (; k + 1 < to; k += 2) h = Math.imul(h ^ (text.charCodeAt(k) | (text.charCodeAt(k + 1) << 16)), 16777619)
        if (k < to) h = Math.imul(h ^ text.charCodeAt(k), 16777619)
        const b = (h >>> 0) & mask
        bucketOf[i] = b
        starts[b + 1]!++
      }
    }
    for (let b = 0; b < size; b++) starts[b + 1]! += starts[b]!
    const fill = starts.slice(0, size)
    const positions = new Int32Array(n)
    for (let i = 0; i < n; i++) positions[fill[bucketOf[i]!]!++] = i
    this.starts = starts
    this.positions = positions
  }

  /** Bounds of the bucket that would hold `key`. */
  bucket(key: string): readonly [number, number] {
    const b = hashRange(key, 0, key.length) & this.mask
    return [this.starts[b]!, this.starts[b + 1]!]
  }
}

/** Lines of one file, with lazily built per-pass keys and indexes. */
export class Matcher {
  private readonly keyed: Array<ReadonlyArray<string> | undefined> = [undefined, undefined, undefined, undefined]
  private readonly indexes: Array<PassIndex | undefined> = [undefined, undefined, undefined, undefined]

  /** `source` locates the lines in their text, to hash pass-0 keys fast (optional). */
  constructor(readonly lines: ReadonlyArray<string>, private readonly source?: KeySource) {}

  private keysOf(pass: number): ReadonlyArray<string> {
    if (pass === 0) return this.lines
    let keys = this.keyed[pass]
    if (keys === undefined) {
      keys = this.lines.map(PASSES[pass]!)
      this.keyed[pass] = keys
    }
    return keys
  }

  private index(pass: number): PassIndex {
    let ix = this.indexes[pass]
    if (ix === undefined) {
      ix = new PassIndex(this.keysOf(pass), pass === 0 ? this.source : undefined)
      this.indexes[pass] = ix
    }
    return ix
  }

  /**
   * Finds `pattern` at or after `start` (only at the last possible position when `eof`),
   * returning the first pass with any match and up to `limit` positions of that pass.
   */
  find(pattern: ReadonlyArray<string>, start: number, eof: boolean, limit: number): Found | undefined {
    const n = this.lines.length
    const m = pattern.length
    if (m === 0) return { pass: 0, positions: [start] }
    if (m > n) return undefined
    for (let pass = 0; pass < PASSES.length; pass++) {
      const pk = pass === 0 ? pattern : pattern.map(PASSES[pass]!)
      const keys = this.keysOf(pass)
      if (eof) {
        // Upstream tries only the last position for an End-of-File chunk, even before the cursor.
        if (matchesAt(keys, pk, n - m)) return { pass, positions: [n - m] }
        continue
      }
      if (limit === 1) {
        const first = pk[0]!
        for (let i = start; i + m <= n; i++) {
          if (keys[i] === first && matchesAt(keys, pk, i)) return { pass, positions: [i] }
        }
        continue
      }
      const ix = this.index(pass)
      let best = 0
      let lo = 0
      let hi = 0
      let fewest = Infinity
      for (let j = 0; j < m && fewest > 0; j++) {
        const [a, b] = ix.bucket(pk[j]!)
        if (b - a < fewest) {
          fewest = b - a
          best = j
          lo = a
          hi = b
        }
      }
      const found: Array<number> = []
      for (let x = lowerBound(ix.positions, lo, hi, start + best); x < hi; x++) {
        const i = ix.positions[x]! - best
        if (i + m > n) break
        if (matchesAt(keys, pk, i)) {
          found.push(i)
          if (found.length >= limit) break
        }
      }
      if (found.length > 0) return { pass, positions: found }
    }
    return undefined
  }
}

const matchesAt = (keys: ReadonlyArray<string>, pk: ReadonlyArray<string>, i: number): boolean => {
  for (let k = 0; k < pk.length; k++) if (keys[i + k] !== pk[k]) return false
  return true
}

const lowerBound = (list: Int32Array, from: number, to: number, value: number): number => {
  let lo = from
  let hi = to
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (list[mid]! < value) lo = mid + 1
    else hi = mid
  }
  return lo
}
