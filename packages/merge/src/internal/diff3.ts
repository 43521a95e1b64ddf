/**
 * The adapter over the diff library (node-diff3, see adrs/20261130-diff3.md). A `Diff3` takes
 * base, ours and theirs as lines and returns merged runs and conflict blocks.
 *
 * node-diff3's LCS (Hunt–McIlroy with a linear candidate scan) is quadratic in the lines it
 * sees and much worse on code, whose `}` and blank lines repeat: 10,000 lines take seconds. So
 * it only ever sees short gaps: `anchored` cuts the three files at sync points (lines unique in
 * each file, in the same order everywhere) and merges only the segments both sides changed;
 * there `nodeDiff3` runs the diff3 region walk (a port of node-diff3's `diff3MergeRegions`) over
 * two-way diffs that are cut the same way (patience-style: lines unique in both, then
 * recursively inside each gap) before node-diff3's `diffIndices` runs on what is left, within
 * a step budget (a gap over it is one changed region: a coarser diff, never a wrong one).
 * Knows nothing about bytes or rendering.
 */
import { diff3Merge, diffIndices, type MergeRegion } from "node-diff3"

/** A run of merged lines, or a region both sides changed differently (`baseIndex` is 0-based). */
export type Block =
  | { readonly _tag: "Ok"; readonly lines: ReadonlyArray<string> }
  | {
    readonly _tag: "Conflict"
    readonly baseIndex: number
    readonly base: ReadonlyArray<string>
    readonly ours: ReadonlyArray<string>
    readonly theirs: ReadonlyArray<string>
  }

/** A three-way line merge; identical changes on both sides are not conflicts. */
export type Diff3 = (base: ReadonlyArray<string>, ours: ReadonlyArray<string>, theirs: ReadonlyArray<string>) => Array<Block>

/** The shape of `diff3Merge` in node-diff3 and of the `diff3` package's export: `(a, o, b)`. */
export type LibraryMerge = (a: Array<string>, o: Array<string>, b: Array<string>) => Array<MergeRegion<string>>

/** A `Diff3` from a library's whole merge returning node-diff3's `{ ok } | { conflict }` regions. */
export const fromLibrary = (merge: LibraryMerge): Diff3 => (base, ours, theirs) => {
  const blocks: Array<Block> = []
  for (const region of merge(ours.slice(), base.slice(), theirs.slice())) {
    if (region.ok !== undefined) blocks.push({ _tag: "Ok", lines: region.ok })
    else if (region.conflict !== undefined) {
      const c = region.conflict
      blocks.push({ _tag: "Conflict", baseIndex: c.oIndex, base: c.o, ours: c.a, theirs: c.b })
    }
  }
  return blocks
}

/** node-diff3's own `diff3Merge` on the whole files (false conflicts excluded): the bench's baseline. */
export const libraryNodeDiff3: Diff3 = fromLibrary((a, o, b) => diff3Merge(a, o, b, { excludeFalseConflicts: true }))

// ---------------------------------------------------------------------------------------------
// Unique-line chains (sync points and two-way anchors)

/** A half-open range `[from, to)` of lines. */
interface Range {
  readonly lines: ReadonlyArray<string>
  readonly from: number
  readonly to: number
}

/** Indices (into `keys`) of a longest strictly increasing subsequence of `keys` (patience sorting). */
const longestIncreasing = (keys: ReadonlyArray<number>): Array<number> => {
  const tails: Array<number> = []
  const previous = new Array<number>(keys.length)
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!
    let lo = 0
    let hi = tails.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (keys[tails[mid]!]! < k) lo = mid + 1
      else hi = mid
    }
    previous[i] = lo > 0 ? tails[lo - 1]! : -1
    tails[lo] = i
  }
  const out = new Array<number>(tails.length)
  let n = tails.length - 1
  for (let i = n === -1 ? -1 : tails[n]!; i !== -1; i = previous[i]!) out[n--] = i
  return out
}

/**
 * Lines that occur exactly once in every range, as one index per range, increasing in all of
 * them: a longest chain by the second range, then by each further one (as patience diff picks
 * its anchors). Ordered by the first range.
 */
export const uniqueChain = (ranges: ReadonlyArray<Range>): Array<Array<number>> => {
  const [first, ...rest] = ranges
  if (first === undefined) return []
  const k = ranges.length
  const size = first.to - first.from
  // Distinct lines of the first range get ids in first-occurrence order; per range and id, a
  // count and the last index (flat arrays: no allocation per line).
  const ids = new Map<string, number>()
  const count = new Int32Array(k * size)
  const last = new Int32Array(k * size)
  for (let i = first.from; i < first.to; i++) {
    const line = first.lines[i]!
    let id = ids.get(line)
    if (id === undefined) {
      id = ids.size
      ids.set(line, id)
    }
    count[id]!++
    last[id] = i
  }
  rest.forEach((r, j) => {
    const row = (j + 1) * size
    for (let i = r.from; i < r.to; i++) {
      const id = ids.get(r.lines[i]!)
      if (id !== undefined) {
        count[row + id]!++
        last[row + id] = i
      }
    }
  })
  // Ids are in first-range order, so the unique lines are too.
  let chain: Array<number> = []
  for (let id = 0; id < ids.size; id++) {
    let unique = true
    for (let j = 0; j < k && unique; j++) unique = count[j * size + id] === 1
    if (unique) chain.push(id)
  }
  for (let j = 1; j < k; j++) {
    const row = j * size
    const current = chain
    chain = longestIncreasing(current.map((id) => last[row + id]!)).map((i) => current[i]!)
  }
  return chain.map((id) => {
    const at = new Array<number>(k)
    for (let j = 0; j < k; j++) at[j] = last[j * size + id]!
    return at
  })
}

// ---------------------------------------------------------------------------------------------
// Two-way diff

/** A changed region: `oLength` base lines at `oStart` became `xLength` lines at `xStart`. */
interface Hunk {
  readonly oStart: number
  readonly oLength: number
  readonly xStart: number
  readonly xLength: number
}

/** Gaps nested deeper than this go to node-diff3 whole (a bound on recursion, never hit by real files). */
const MAX_DEPTH = 16

/**
 * node-diff3's LCS visits, for each line of `o`, every equal line of `x` and rescans its
 * candidate list for each: about (matching pairs + lines) × LCS length steps (1–2 ns each
 * here). Above this budget (~20–40 ms) a gap is not given to it.
 */
export const LCS_BUDGET = 20_000_000

/** The step estimate above for `o[o0, o1)` against `x[x0, x1)`. */
export const lcsCost = (o: ReadonlyArray<string>, o0: number, o1: number, x: ReadonlyArray<string>, x0: number, x1: number): number => {
  const inX = new Map<string, number>()
  for (let i = x0; i < x1; i++) inX.set(x[i]!, (inX.get(x[i]!) ?? 0) + 1)
  let pairs = 0
  let matchable = 0
  for (let i = o0; i < o1; i++) {
    const c = inX.get(o[i]!) ?? 0
    pairs += c
    if (c > 0) matchable++
  }
  return (pairs + (o1 - o0)) * Math.min(matchable, x1 - x0)
}

const diffRange = (o: ReadonlyArray<string>, o0: number, o1: number, x: ReadonlyArray<string>, x0: number, x1: number, depth: number, out: Array<Hunk>): void => {
  while (o0 < o1 && x0 < x1 && o[o0] === x[x0]) {
    o0++
    x0++
  }
  while (o0 < o1 && x0 < x1 && o[o1 - 1] === x[x1 - 1]) {
    o1--
    x1--
  }
  if (o0 === o1 || x0 === x1) {
    if (o0 < o1 || x0 < x1) out.push({ oStart: o0, oLength: o1 - o0, xStart: x0, xLength: x1 - x0 })
    return
  }
  const anchors = depth < MAX_DEPTH ? uniqueChain([{ lines: o, from: o0, to: o1 }, { lines: x, from: x0, to: x1 }]) : []
  if (anchors.length === 0) {
    // Too costly for node-diff3 (only repeated lines left, e.g. generated or data files): the
    // whole gap is one changed region. Coarser than a minimal diff, so at worst a conflict git
    // would not report; never a wrong merge.
    if (lcsCost(o, o0, o1, x, x0, x1) > LCS_BUDGET) {
      out.push({ oStart: o0, oLength: o1 - o0, xStart: x0, xLength: x1 - x0 })
      return
    }
    for (const h of diffIndices(o.slice(o0, o1), x.slice(x0, x1))) {
      out.push({ oStart: o0 + h.buffer1[0], oLength: h.buffer1[1], xStart: x0 + h.buffer2[0], xLength: h.buffer2[1] })
    }
    return
  }
  for (const [ao, ax] of anchors) {
    diffRange(o, o0, ao!, x, x0, ax!, depth + 1, out)
    o0 = ao! + 1
    x0 = ax! + 1
  }
  diffRange(o, o0, o1, x, x0, x1, depth + 1, out)
}

/**
 * The changed regions from `o` to `x`, in order; two hunks always have an unchanged line
 * between them (the region walk below relies on it).
 */
export const diffLines = (o: ReadonlyArray<string>, x: ReadonlyArray<string>): Array<Hunk> => {
  const out: Array<Hunk> = []
  diffRange(o, 0, o.length, x, 0, x.length, 0, out)
  return out
}

// ---------------------------------------------------------------------------------------------
// Three-way regions

const sameLines = (xs: ReadonlyArray<string>, ys: ReadonlyArray<string>): boolean => {
  if (xs.length !== ys.length) return false
  for (let i = 0; i < xs.length; i++) if (xs[i] !== ys[i]) return false
  return true
}

/**
 * The diff3 region walk of node-diff3's `diff3MergeRegions` + `diff3Merge` (Khanna, Kunal and
 * Pierce, "A Formal Investigation of Diff3"), over any two-way diff: hunks of both sides sorted
 * by base position; hunks that overlap or touch form one region; a region with one hunk takes
 * that side, a region with both sides is a conflict unless both wrote the same lines.
 */
export const regions = (
  diff: (o: ReadonlyArray<string>, x: ReadonlyArray<string>) => ReadonlyArray<Hunk>
): Diff3 => (base, ours, theirs) => {
  const hunks = [
    ...diff(base, ours).map((h) => ({ ...h, ours: true })),
    ...diff(base, theirs).map((h) => ({ ...h, ours: false }))
  ].sort((a, b) => a.oStart - b.oStart)
  const blocks: Array<Block> = []
  let ok: Array<string> = []
  const take = (xs: ReadonlyArray<string>, from: number, to: number) => {
    for (let i = from; i < to; i++) ok.push(xs[i]!)
  }
  let at = 0
  for (let i = 0; i < hunks.length;) {
    const first = hunks[i]!
    const start = first.oStart
    let end = start + first.oLength
    let j = i + 1
    // Touching counts as overlapping (as in git): `<=`.
    while (j < hunks.length && hunks[j]!.oStart <= end) {
      end = Math.max(end, hunks[j]!.oStart + hunks[j]!.oLength)
      j++
    }
    take(base, at, start)
    if (j === i + 1) take(first.ours ? ours : theirs, first.xStart, first.xStart + first.xLength)
    else {
      // Each side's span: its hunks' extent, widened by the base lines the other side's hunks add.
      const span = (mine: boolean, xs: ReadonlyArray<string>) => {
        let xFrom = xs.length
        let xTo = -1
        let oFrom = base.length
        let oTo = -1
        for (let h = i; h < j; h++) {
          const hunk = hunks[h]!
          if (hunk.ours !== mine) continue
          xFrom = Math.min(xFrom, hunk.xStart)
          xTo = Math.max(xTo, hunk.xStart + hunk.xLength)
          oFrom = Math.min(oFrom, hunk.oStart)
          oTo = Math.max(oTo, hunk.oStart + hunk.oLength)
        }
        // A side without a hunk here kept the base lines (cannot happen when the two-way diff
        // keeps a side's hunks apart, but the walk stays total).
        return xTo === -1 ? base.slice(start, end) : xs.slice(xFrom + (start - oFrom), xTo + (end - oTo))
      }
      const o = span(true, ours)
      const t = span(false, theirs)
      if (sameLines(o, t)) for (const line of o) ok.push(line)
      else {
        if (ok.length > 0) blocks.push({ _tag: "Ok", lines: ok })
        ok = []
        blocks.push({ _tag: "Conflict", baseIndex: start, base: base.slice(start, end), ours: o, theirs: t })
      }
    }
    at = end
    i = j
  }
  take(base, at, base.length)
  if (ok.length > 0) blocks.push({ _tag: "Ok", lines: ok })
  return blocks
}

/** The diff3 walk over node-diff3's `diffIndices` as is (no anchors): for differential tests. */
export const regionsOverLibraryDiff: Diff3 = regions((o, x) =>
  diffIndices(o.slice(), x.slice()).map((h) => ({ oStart: h.buffer1[0], oLength: h.buffer1[1], xStart: h.buffer2[0], xLength: h.buffer2[1] }))
)

/** The diff3 walk over anchored two-way diffs (node-diff3's LCS only inside short gaps). */
export const nodeDiff3: Diff3 = regions(diffLines)

// ---------------------------------------------------------------------------------------------
// Three-way sync points

const rangeEquals = (xs: ReadonlyArray<string>, x0: number, x1: number, ys: ReadonlyArray<string>, y0: number, y1: number): boolean => {
  if (x1 - x0 !== y1 - y0) return false
  for (let i = 0; i < x1 - x0; i++) if (xs[x0 + i] !== ys[y0 + i]) return false
  return true
}

/**
 * `inner` run only on the segments between sync points that both sides changed differently;
 * a sync line is unchanged on both sides, so no conflict can span one.
 */
export const anchored = (inner: Diff3): Diff3 => (base, ours, theirs) => {
  const blocks: Array<Block> = []
  let ok: Array<string> = []
  const take = (xs: ReadonlyArray<string>, from: number, to: number) => {
    for (let i = from; i < to; i++) ok.push(xs[i]!)
  }
  const points = uniqueChain([
    { lines: base, from: 0, to: base.length },
    { lines: ours, from: 0, to: ours.length },
    { lines: theirs, from: 0, to: theirs.length }
  ])
  points.push([base.length, ours.length, theirs.length])
  let b0 = 0
  let o0 = 0
  let t0 = 0
  for (const [b1, o1, t1] of points) {
    if (rangeEquals(ours, o0, o1!, base, b0, b1!)) take(theirs, t0, t1!)
    else if (rangeEquals(theirs, t0, t1!, base, b0, b1!) || rangeEquals(ours, o0, o1!, theirs, t0, t1!)) take(ours, o0, o1!)
    else {
      for (const block of inner(base.slice(b0, b1), ours.slice(o0, o1), theirs.slice(t0, t1))) {
        if (block._tag === "Ok") {
          for (const line of block.lines) ok.push(line)
        } else {
          if (ok.length > 0) blocks.push({ _tag: "Ok", lines: ok })
          ok = []
          blocks.push({ ...block, baseIndex: block.baseIndex + b0 })
        }
      }
    }
    // The sentinel point past the end has no line.
    if (b1! < base.length) ok.push(base[b1!]!)
    b0 = b1! + 1
    o0 = o1! + 1
    t0 = t1! + 1
  }
  if (ok.length > 0) blocks.push({ _tag: "Ok", lines: ok })
  return blocks
}
