/**
 * The adapter over the diff3 library (node-diff3, see adrs/20261130-diff3.md): a `Diff3`
 * takes base, ours and theirs as lines and returns stable blocks and conflict blocks.
 * `anchored` cuts the three files at sync points (lines unique in each file and in the same
 * order everywhere) and runs the library only between sync points where both sides changed:
 * the library's LCS is quadratic in the lines it sees. Knows nothing about bytes or rendering.
 */
import { diff3Merge, type MergeRegion } from "node-diff3"

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

/** A `Diff3` from a library merge that returns node-diff3's `{ ok } | { conflict }` regions. */
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

/** node-diff3's `diff3Merge` with false conflicts (identical changes) excluded. */
export const nodeDiff3: Diff3 = fromLibrary((a, o, b) => diff3Merge(a, o, b, { excludeFalseConflicts: true }))

interface Occurrence {
  base: number
  ours: number
  theirs: number
  baseAt: number
  oursAt: number
  theirsAt: number
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
  for (let i = tails.length === 0 ? -1 : tails[tails.length - 1]!, n = tails.length - 1; i !== -1; i = previous[i]!, n--) out[n] = i
  return out
}

/**
 * Sync points: `[base, ours, theirs]` line indices of lines that occur exactly once in each
 * file, increasing in all three (a longest chain, as patience diff picks its anchors).
 */
export const syncPoints = (
  base: ReadonlyArray<string>,
  ours: ReadonlyArray<string>,
  theirs: ReadonlyArray<string>
): Array<readonly [number, number, number]> => {
  const seen = new Map<string, Occurrence>()
  const order: Array<Occurrence> = []
  for (let i = 0; i < base.length; i++) {
    const o = seen.get(base[i]!)
    if (o === undefined) {
      const fresh = { base: 1, ours: 0, theirs: 0, baseAt: i, oursAt: -1, theirsAt: -1 }
      seen.set(base[i]!, fresh)
      order.push(fresh)
    } else o.base++
  }
  for (let i = 0; i < ours.length; i++) {
    const o = seen.get(ours[i]!)
    if (o !== undefined) {
      o.ours++
      o.oursAt = i
    }
  }
  for (let i = 0; i < theirs.length; i++) {
    const o = seen.get(theirs[i]!)
    if (o !== undefined) {
      o.theirs++
      o.theirsAt = i
    }
  }
  // `order` is by first base occurrence, so unique lines come in base order.
  const unique = order.filter((o) => o.base === 1 && o.ours === 1 && o.theirs === 1)
  const byOurs = longestIncreasing(unique.map((o) => o.oursAt)).map((i) => unique[i]!)
  return longestIncreasing(byOurs.map((o) => o.theirsAt)).map((i) => {
    const o = byOurs[i]!
    return [o.baseAt, o.oursAt, o.theirsAt] as const
  })
}

const rangeEquals = (xs: ReadonlyArray<string>, x0: number, x1: number, ys: ReadonlyArray<string>, y0: number, y1: number): boolean => {
  if (x1 - x0 !== y1 - y0) return false
  for (let i = 0; i < x1 - x0; i++) if (xs[x0 + i] !== ys[y0 + i]) return false
  return true
}

/**
 * `inner` run only between sync points where both sides changed the base differently; the
 * sync lines themselves are unchanged on both sides, so no conflict can span one.
 */
export const anchored = (inner: Diff3): Diff3 => (base, ours, theirs) => {
  const blocks: Array<Block> = []
  let ok: Array<string> = []
  const take = (xs: ReadonlyArray<string>, from: number, to: number) => {
    for (let i = from; i < to; i++) ok.push(xs[i]!)
  }
  const points = syncPoints(base, ours, theirs)
  points.push([base.length, ours.length, theirs.length])
  let b0 = 0
  let o0 = 0
  let t0 = 0
  for (const [b1, o1, t1] of points) {
    if (rangeEquals(ours, o0, o1, base, b0, b1)) take(theirs, t0, t1)
    else if (rangeEquals(theirs, t0, t1, base, b0, b1) || rangeEquals(ours, o0, o1, theirs, t0, t1)) take(ours, o0, o1)
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
    if (b1 < base.length) ok.push(base[b1]!)
    b0 = b1 + 1
    o0 = o1 + 1
    t0 = t1 + 1
  }
  if (ok.length > 0) blocks.push({ _tag: "Ok", lines: ok })
  return blocks
}
