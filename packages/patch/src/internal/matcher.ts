/**
 * Codex `seek_sequence`: four passes (exact, trim_end, trim, normalise), each scanning every
 * position before the next pass starts.
 *
 * First-match searches (Codex) scan forward from the cursor, which is linear over chunks in
 * file order. Ambiguity detection (native) must also know whether a *second* match exists
 * anywhere after the cursor; for that a pass buckets every line by a hash of its key (typed
 * arrays, no per-line allocation; positions ascending inside a bucket), so a search verifies
 * only the candidates of the pattern line with the smallest bucket, from the cursor on. A plan
 * that makes only a few searches scans forward instead: cheaper than indexing every line.
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

// FNV-1a over the length, the first 4 and the last 16 UTF-16 units, two units per step: cheap
// on long lines, and a collision only costs one more string comparison.
const hashRange = (s: string, from: number, to: number): number => {
  let h = Math.imul(0x811c9dc5 ^ (to - from), 16777619)
  if (to - from > 20) {
    h = Math.imul(h ^ (s.charCodeAt(from) | (s.charCodeAt(from + 1) << 16)), 16777619)
    h = Math.imul(h ^ (s.charCodeAt(from + 2) | (s.charCodeAt(from + 3) << 16)), 16777619)
  }
  let k = to - from > 20 ? to - 16 : from
  for (; k + 1 < to; k += 2) h = Math.imul(h ^ (s.charCodeAt(k) | (s.charCodeAt(k + 1) << 16)), 16777619)
  if (k < to) h = Math.imul(h ^ s.charCodeAt(k), 16777619)
  return h >>> 0
}

/**
 * The lines of a file as offsets into its text: pass-0 comparisons and hashing read the one
 * flat string, so no per-line string is allocated unless a whitespace-tolerant pass runs.
 */
export interface LineSource {
  readonly text: string
  readonly n: number
  readonly offsets: Int32Array
  readonly lens: Int32Array
}

/**
 * The bucket of every line's pass-0 key, hashed in place in the one flat string (the hot loop of
 * a large native plan). A function of its own: inside the index's constructor the same loop ran
 * about twice as slow.
 */
const textBuckets = (source: LineSource, mask: number): Int32Array => {
  const { text, offsets, lens, n } = source
  const buckets = new Int32Array(n)
  for (let i = 0; i < n; i++) {
    const from = offsets[i]!
    buckets[i] = hashRange(text, from, from + lens[i]!) & mask
  }
  return buckets
}

/** Line positions grouped by bucket (a counting sort: positions stay ascending inside a bucket). */
const grouped = (buckets: Int32Array, size: number): { readonly starts: Int32Array; readonly positions: Int32Array } => {
  const n = buckets.length
  const starts = new Int32Array(size + 1)
  for (let i = 0; i < n; i++) starts[buckets[i]! + 1]!++
  for (let b = 0; b < size; b++) starts[b + 1]! += starts[b]!
  const fill = starts.slice(0, size)
  const positions = new Int32Array(n)
  for (let i = 0; i < n; i++) positions[fill[buckets[i]!]!++] = i
  return { starts, positions }
}

/** Bucketed line positions of one pass (CSR: bucket b is positions[starts[b] .. starts[b + 1])). */
class PassIndex {
  readonly mask: number
  readonly starts: Int32Array
  readonly positions: Int32Array

  constructor(keys: ReadonlyArray<string> | undefined, source: LineSource) {
    let size = 16
    while (size < source.n) size <<= 1
    const mask = size - 1
    this.mask = mask
    const buckets = keys === undefined ? textBuckets(source, mask) : Int32Array.from(keys, (key) => hashRange(key, 0, key.length) & mask)
    const { starts, positions } = grouped(buckets, size)
    this.starts = starts
    this.positions = positions
  }

  /** Bounds of the bucket that would hold `key`. */
  bucket(key: string): readonly [number, number] {
    const b = hashRange(key, 0, key.length) & this.mask
    return [this.starts[b]!, this.starts[b + 1]!]
  }
}

// Up to this many searches, scanning forward from the cursor costs less than indexing every line
// once (measured on a 100,000-line file: a scan 0.7-3 ms, the index 7-15 ms).
const DIRECT_SEARCHES = 4

/** Lines of one file, with lazily built per-pass keys and indexes. */
export class Matcher {
  private readonly keyed: Array<ReadonlyArray<string> | undefined> = [undefined, undefined, undefined, undefined]
  private readonly indexes: Array<PassIndex | undefined> = [undefined, undefined, undefined, undefined]
  private readonly direct: boolean

  /** `searches`: how many `find` calls the caller expects (few: no index is built). */
  constructor(private readonly src: LineSource, searches = Infinity) {
    this.direct = searches <= DIRECT_SEARCHES
  }

  /** Keys of a whitespace-tolerant pass (1..3), materialized on first use. */
  private keysOf(pass: number): ReadonlyArray<string> {
    let keys = this.keyed[pass]
    if (keys === undefined) {
      const { text, offsets, lens } = this.src
      const fn = PASSES[pass]!
      keys = Array.from({ length: this.src.n }, (_, i) => fn(text.slice(offsets[i]!, offsets[i]! + lens[i]!)))
      this.keyed[pass] = keys
    }
    return keys
  }

  private index(pass: number): PassIndex {
    let ix = this.indexes[pass]
    if (ix === undefined) {
      ix = new PassIndex(pass === 0 ? undefined : this.keysOf(pass), this.src)
      this.indexes[pass] = ix
    }
    return ix
  }

  private matchesAt(pass: number, pk: ReadonlyArray<string>, i: number): boolean {
    if (pass === 0) {
      const { text, offsets, lens } = this.src
      for (let k = 0; k < pk.length; k++) {
        const p = pk[k]!
        if (lens[i + k] !== p.length || !text.startsWith(p, offsets[i + k]!)) return false
      }
      return true
    }
    const keys = this.keysOf(pass)
    for (let k = 0; k < pk.length; k++) if (keys[i + k] !== pk[k]) return false
    return true
  }

  /**
   * Finds `pattern` at or after `start` (only at the last possible position when `eof`),
   * returning the first pass with any match and up to `limit` positions of that pass.
   */
  find(pattern: ReadonlyArray<string>, start: number, eof: boolean, limit: number): Found | undefined {
    const n = this.src.n
    const m = pattern.length
    if (m === 0) return { pass: 0, positions: [start] }
    if (m > n) return undefined
    for (let pass = 0; pass < PASSES.length; pass++) {
      const pk = pass === 0 ? pattern : pattern.map(PASSES[pass]!)
      if (eof) {
        // Upstream tries only the last position for an End-of-File chunk, even before the cursor.
        if (this.matchesAt(pass, pk, n - m)) return { pass, positions: [n - m] }
        continue
      }
      if (limit === 1 || this.direct) {
        // A forward scan from the cursor: the first match wins (Codex), linear over in-order
        // chunks; or, for a few searches, every match up to `limit`.
        const found: Array<number> = []
        for (let i = start; i + m <= n && found.length < limit; i++) if (this.matchesAt(pass, pk, i)) found.push(i)
        if (found.length > 0) return { pass, positions: found }
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
        if (this.matchesAt(pass, pk, i)) {
          found.push(i)
          if (found.length >= limit) break
        }
      }
      if (found.length > 0) return { pass, positions: found }
    }
    return undefined
  }
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
