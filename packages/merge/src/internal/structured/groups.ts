/**
 * Grouping both sides' hunks of a child list into the runs settled together: hunks that touch
 * the same children (transitively), in an ordered list also changes side by side where one
 * binds a name the other mentions, and the order of groups starting at one element of an
 * order-insensitive sequence. Pure.
 */
import { bindsReadBy, type Sequence } from "../languages.ts"
import { overlaps } from "./align.ts"
import type { Context, SideHunk, Sides } from "./context.ts"
import { isSeparator, type Item } from "./items.ts"
import { insertable } from "./sequence.ts"

/**
 * The groups of `hunks` (sorted by base position) to settle one by one, in output order.
 * `ordered` says the list is ordered (statements, arguments, array elements).
 */
export const groupsOf = (
  ctx: Context,
  sides: Sides,
  base: ReadonlyArray<Item>,
  ours: ReadonlyArray<Item>,
  theirs: ReadonlyArray<Item>,
  hunks: ReadonlyArray<SideHunk>,
  sequence: Sequence | undefined,
  ordered: boolean
): Array<Array<SideHunk>> => {
  // In an ordered list (statements, arguments, array elements) two sides' changes touch also
  // when no element neither side changed lies between them (diff3 wants an unchanged line
  // between hunks) and one binds a name the other mentions: `const p = f(a)` changed by one
  // side, `g(p)` right after it by the other. Not between two changes of an order-insensitive
  // sequence's own elements, nor for a change that already meets the other side's elsewhere.
  const lonely = (h: SideHunk): boolean => !hunks.some((g) => g.ours !== h.ours && overlaps(g, h))
  const versions = (h: SideHunk) => [
    ...base.slice(h.start, h.end).map((item) => ({ node: item.node, text: sides.base.text })),
    ...(h.ours ? ours : theirs).slice(h.sideStart, h.sideEnd).map((item) => ({ node: item.node, text: h.ours ? sides.ours.text : sides.theirs.text }))
  ]
  const orderedHunk = (h: SideHunk): boolean => {
    if (sequence === undefined) return true
    const side = h.ours ? ours : theirs
    const text = h.ours ? sides.ours.text : sides.theirs.text
    return !insertable(ctx, sequence, base.slice(h.start, h.end), sides.base.text) || !insertable(ctx, sequence, side.slice(h.sideStart, h.sideEnd), text)
  }
  const adjacent = (a: SideHunk, b: SideHunk): boolean => {
    const [first, second] = a.end <= b.start ? [a, b] : [b, a]
    for (let i = first.end; i < second.start; i++) if (base[i]!.node.isNamed) return false
    return true
  }
  // `binder` binds a name `reader` mentions, and the reader's side left the binding as it was.
  const unseenBinding = (binder: SideHunk, reader: SideHunk): boolean => lonely(binder) && bindsReadBy(versions(binder), versions(reader))
  const touch = (g: SideHunk, h: SideHunk): boolean =>
    g.ours !== h.ours && (overlaps(g, h) ||
      (ordered && (orderedHunk(g) || orderedHunk(h)) && adjacent(g, h) && (unseenBinding(g, h) || unseenBinding(h, g))))
  // Groups of hunks that touch the same children (transitively).
  const groups: Array<Array<SideHunk>> = []
  for (const h of hunks) {
    const current = groups[groups.length - 1]
    if (current !== undefined && current.some((g) => touch(g, h))) current.push(h)
    else groups.push([h])
  }
  // In an order-insensitive sequence written one element a line (imports, members), theirs'
  // insertion before an element ours replaced follows ours' replacement: ours' edits first
  // where both start at one element. Not where separators travel with the inserted elements:
  // they were written for the place before the element.
  if (sequence !== undefined) {
    for (let i = 0; i + 1 < groups.length; i++) {
      const first = groups[i]!
      const next = groups[i + 1]!
      const at = first[0]!.start
      if (
        first.every((h) => !h.ours && h.start === at && h.end === at && insertable(ctx, sequence, theirs.slice(h.sideStart, h.sideEnd), sides.theirs.text) &&
          theirs.slice(h.sideStart, h.sideEnd).every((item) => !isSeparator(item.node))) &&
        next.some((h) => h.ours && h.start === at && h.end > at)
      ) {
        groups[i] = next
        groups[i + 1] = first
        i++
      }
    }
  }
  return groups
}
