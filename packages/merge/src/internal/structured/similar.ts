/**
 * Pairing the elements without an identity of a changed run, base to side, by their lines:
 * an element changed in place among insertions and deletions around it. Pure.
 */
import type { Item } from "./items.ts"

// Above this many base and side elements compared, a changed run is not searched for similar pairs.
const maxSimilarPairs = 4096

// The non-blank lines of a text, without their indentation, counted.
const lineCounts = (text: string): Map<string, number> => {
  const counts = new Map<string, number>()
  for (const line of text.split("\n")) {
    const t = line.trim()
    if (t !== "") counts.set(t, (counts.get(t) ?? 0) + 1)
  }
  return counts
}

const sizeOf = (lines: ReadonlyMap<string, number>): number => {
  let n = 0
  for (const c of lines.values()) n += c
  return n
}

/**
 * Whether two versions of an element are one element changed: at least half of the longer
 * one's non-blank lines (indentation aside) are lines of the other too.
 */
const similar = (a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): boolean => {
  let common = 0
  for (const [line, count] of a) common += Math.min(count, b.get(line) ?? 0)
  return common > 0 && common * 2 >= Math.max(sizeOf(a), sizeOf(b))
}

/**
 * The elements of a changed run that have no identity, paired base to side (indices into the
 * run) where each is the only element of its kind similar to the other (`similar`): an element
 * changed in place among insertions and deletions around it.
 */
export const similarPairs = (
  base: ReadonlyArray<Item>,
  side: ReadonlyArray<Item>,
  baseIds: ReadonlyArray<string | undefined>,
  sideIds: ReadonlyArray<string | undefined>
): Array<[number, number]> => {
  if (base.length * side.length > maxSimilarPairs) return []
  const candidates = (items: ReadonlyArray<Item>, ids: ReadonlyArray<string | undefined>) =>
    items.map((item, i) => ids[i] === undefined && item.node.isNamed && item.text.includes("\n") ? lineCounts(item.text) : undefined)
  const b = candidates(base, baseIds)
  const s = candidates(side, sideIds)
  const similarTo = base.map((item, i) =>
    s.flatMap((lines, j) => b[i] !== undefined && lines !== undefined && side[j]!.node.type === item.node.type && similar(b[i]!, lines) ? [j] : [])
  )
  const claims = new Map<number, number>()
  for (const js of similarTo) for (const j of js) claims.set(j, (claims.get(j) ?? 0) + 1)
  const pairs: Array<[number, number]> = []
  similarTo.forEach((js, i) => {
    if (js.length === 1 && claims.get(js[0]!) === 1) pairs.push([i, js[0]!])
  })
  return pairs.sort((x, y) => x[0] - y[0])
}
