/**
 * One side's hunks of a child list refined: a changed run split into the elements changed in
 * place and the runs inserted or deleted around them, so the other side's edits next to them
 * do not overlap. Pure.
 */
import { identityOf, type Sequence } from "../languages.ts"
import { type Hunk, match } from "./align.ts"
import type { Context, SideHunk } from "./context.ts"
import type { Item } from "./items.ts"
import { rewraps, untyped } from "./rewrap.ts"
import { insertable } from "./sequence.ts"
import { similarPairs } from "./similar.ts"

/**
 * Splits a changed run into the elements changed in place (paired with their base version by
 * identity, or position by position when the run keeps its length and kinds) and the runs
 * inserted or deleted around them, so the other side's edits next to them do not overlap.
 */
export const refine = (
  hunk: Hunk,
  baseId: (i: number) => string | undefined,
  items: ReadonlyArray<Item>,
  text: string,
  sequence: Sequence | undefined,
  isOurs: boolean,
  base: ReadonlyArray<Item>,
  baseText: string,
  ctx: Context
): Array<SideHunk> => {
  // In an order-insensitive sequence an unpaired run of its elements is their insertion plus
  // each deleted element on its own: the other side may insert between them.
  const elements = (h: Hunk) =>
    sequence !== undefined && insertable(ctx, sequence, base.slice(h.start, h.end), baseText) &&
    insertable(ctx, sequence, items.slice(h.sideStart, h.sideEnd), text)
  const loose = (h: Hunk): Array<SideHunk> =>
    !elements(h) || h.end - h.start === 0 || (h.end - h.start === 1 && h.sideEnd === h.sideStart)
      ? [{ ...h, ours: isOurs }]
      : [
        ...(h.sideEnd > h.sideStart ? [{ start: h.start, end: h.start, sideStart: h.sideStart, sideEnd: h.sideEnd, ours: isOurs }] : []),
        ...Array.from({ length: h.end - h.start }, (_, i) => ({ start: h.start + i, end: h.start + i + 1, sideStart: h.sideEnd, sideEnd: h.sideEnd, ours: isOurs }))
      ]
  const length = hunk.end - hunk.start
  if (length === 0 || hunk.sideEnd === hunk.sideStart) return loose(hunk)
  const sameShape = hunk.sideEnd - hunk.sideStart === length &&
    Array.from({ length }, (_, i) => i).every((i) => {
      const b = base[hunk.start + i]!
      const s = items[hunk.sideStart + i]!
      const id = baseId(hunk.start + i)
      if (b.node.type === s.node.type) return id === undefined || id === identityOf(sequence, s.node, text)
      // Wrapped or unwrapped in place (`export`, a decorator): the same element if its key is.
      return rewraps(b.node, s.node) && (id === undefined || untyped(id) === untyped(identityOf(sequence, s.node, text)))
    })
  let pairs: Array<[number, number]> = []
  if (sameShape) pairs = Array.from({ length }, (_, i) => [hunk.start + i, hunk.sideStart + i])
  else {
    const sideRun = items.slice(hunk.sideStart, hunk.sideEnd)
    const ids: Array<string | undefined> = Array.from({ length }, (_, i) => baseId(hunk.start + i))
    const sideIds: Array<string | undefined> = sideRun.map((item) => identityOf(sequence, item.node, text))
    // Elements without an identity are paired with their most similar counterpart, if any.
    for (const [i, j] of similarPairs(base.slice(hunk.start, hunk.end), sideRun, ids, sideIds)) {
      ids[i] = `\u0002similar${i}`
      sideIds[j] = `\u0002similar${i}`
    }
    for (let i = 0; i < ids.length; i++) ids[i] ??= `\u0001base${i}`
    for (let i = 0; i < sideIds.length; i++) sideIds[i] ??= `\u0001side${i}`
    const m = match(ids as Array<string>, sideIds as Array<string>, () => false)
    if (m === undefined) return loose(hunk)
    m.forEach((s, i) => {
      if (s !== -1) pairs.push([hunk.start + i, hunk.sideStart + s])
    })
  }
  if (pairs.length === 0) return loose(hunk)
  const out: Array<SideHunk> = []
  let b = hunk.start
  let s = hunk.sideStart
  for (const [pb, ps] of pairs) {
    if (pb > b || ps > s) out.push(...loose({ start: b, end: pb, sideStart: s, sideEnd: ps }))
    out.push({ start: pb, end: pb + 1, sideStart: ps, sideEnd: ps + 1, ours: isOurs })
    b = pb + 1
    s = ps + 1
  }
  if (hunk.end > b || hunk.sideEnd > s) out.push(...loose({ start: b, end: hunk.end, sideStart: s, sideEnd: hunk.sideEnd }))
  return out
}
