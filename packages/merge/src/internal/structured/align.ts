/**
 * Aligning two lists of syntax-tree children by their text: which base child each side kept
 * (a longest common subsequence), and the hunks a side changed between kept children. Pure.
 */

/** A change of one side: base children `[start, end)` became the side's `[sideStart, sideEnd)`. */
export interface Hunk {
  readonly start: number
  readonly end: number
  readonly sideStart: number
  readonly sideEnd: number
}

// Above this many cells the middle of two lists is not aligned (one hunk): a bound on memory
// and time for lists rewritten wholesale, which would conflict anyway.
const maxCells = 1 << 20

/**
 * For each base index, the index of the equal side element it is matched with, or -1. Matches
 * are increasing and keep the most `weight` (by default one per element: a longest common
 * subsequence); weighing elements over punctuation keeps `a , b` aligned on `b` rather than
 * on a second comma. `undefined` when `expired` says the budget is spent.
 */
export const match = (
  base: ReadonlyArray<string>,
  side: ReadonlyArray<string>,
  expired: () => boolean,
  weight: (baseIndex: number) => number = () => 1
): Int32Array | undefined => {
  const n = base.length
  const m = side.length
  const result = new Int32Array(n).fill(-1)
  let head = 0
  while (head < n && head < m && base[head] === side[head]) {
    result[head] = head
    head++
  }
  let tail = 0
  while (tail < n - head && tail < m - head && base[n - 1 - tail] === side[m - 1 - tail]) {
    result[n - 1 - tail] = m - 1 - tail
    tail++
  }
  const rows = n - head - tail
  const cols = m - head - tail
  if (rows === 0 || cols === 0 || (rows + 1) * (cols + 1) > maxCells) return result
  // lengths[i][j]: the LCS of base[head+i..] and side[head+j..] (suffix form: recover forwards).
  const width = cols + 1
  const lengths = new Uint32Array((rows + 1) * width)
  for (let i = rows - 1; i >= 0; i--) {
    if ((i & 63) === 0 && expired()) return undefined
    const b = base[head + i]
    for (let j = cols - 1; j >= 0; j--) {
      const skip = Math.max(lengths[(i + 1) * width + j]!, lengths[i * width + j + 1]!)
      lengths[i * width + j] = b === side[head + j] ? Math.max(skip, lengths[(i + 1) * width + j + 1]! + weight(head + i)) : skip
    }
  }
  let i = 0
  let j = 0
  while (i < rows && j < cols) {
    if (base[head + i] === side[head + j] && lengths[i * width + j] === lengths[(i + 1) * width + j + 1]! + weight(head + i)) {
      result[head + i] = head + j
      i++
      j++
    } else if (lengths[(i + 1) * width + j]! >= lengths[i * width + j + 1]!) i++
    else j++
  }
  slideDown(result, base, side)
  return result
}

/**
 * Moves each pure insertion (and pure deletion) as far down as equal texts allow, so the same
 * edit gets the same place whichever way the alignment found it: inserting `; x` after `a` and
 * `x ;` after `a ;` are one insertion, before the list's end. Then both sides' insertions at
 * the end of a sequence meet at one place.
 */
const slideDown = (matched: Int32Array, base: ReadonlyArray<string>, side: ReadonlyArray<string>): void => {
  const n = matched.length
  let previousSide = -1
  for (let i = 0; i < n; i++) {
    const s = matched[i]!
    if (s === -1) continue
    // Insertion of side[previousSide + 1 .. s) before base[i].
    let at = i
    let from = previousSide + 1
    let to = s
    while (to > from && at < n && matched[at] === to && side[from] === base[at]) {
      matched[at] = from
      from++
      to++
      at++
      if (at < n && matched[at] !== to) break
    }
    previousSide = matched[i]!
  }
  // Deletions: base[i .. j) unmatched between matched neighbours with adjacent side indices.
  for (let i = 0; i < n; i++) {
    if (matched[i] !== -1) continue
    let j = i
    while (j < n && matched[j] === -1) j++
    const before = i === 0 ? -1 : matched[i - 1]!
    let start = i
    let end = j
    while (end < n && matched[end] === before + 1 + (start - i) && base[start] === base[end]) {
      // Keep base[start] (matched where base[end] was) and delete base[end] instead.
      matched[start] = matched[end]!
      matched[end] = -1
      start++
      end++
    }
    i = end - 1
  }
}

/** The maximal runs of unmatched base and side elements between matched ones. */
export const hunksOf = (matched: Int32Array, sideLength: number): ReadonlyArray<Hunk> => {
  const hunks: Array<Hunk> = []
  let previousBase = -1
  let previousSide = -1
  for (let i = 0; i <= matched.length; i++) {
    const s = i < matched.length ? matched[i]! : sideLength
    if (s === -1) continue
    if (i - previousBase > 1 || s - previousSide > 1) {
      hunks.push({ start: previousBase + 1, end: i, sideStart: previousSide + 1, sideEnd: s })
    }
    previousBase = i
    previousSide = s
  }
  return hunks
}

/**
 * Whether two hunks (of different sides) touch the same base children: overlapping ranges,
 * two insertions at one place, or an insertion strictly inside the other's range. Changes that
 * only meet at a boundary do not.
 */
export const overlaps = (a: { readonly start: number; readonly end: number }, b: { readonly start: number; readonly end: number }): boolean => {
  const aEmpty = a.start === a.end
  const bEmpty = b.start === b.end
  if (aEmpty && bEmpty) return a.start === b.start
  if (aEmpty) return b.start < a.start && a.start < b.end
  if (bEmpty) return a.start < b.start && b.start < a.end
  return a.start < b.end && b.start < a.end
}
