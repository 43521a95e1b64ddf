/**
 * The three-way merge of syntax trees, walked node by node: matched nodes whose texts differ
 * are merged child list by child list, equal subtrees are taken whole as text. A child list is
 * aligned per side by text (kept children), each side's changes are hunks between kept
 * children (`hunks.ts`), and hunks of the two sides that touch the same children (`groups.ts`)
 * are settled here: one side unchanged takes the other, equal changes converge, both sides
 * inserting at one place in an order-insensitive sequence keeps ours' then theirs' elements
 * (`sequence.ts`), changes of the same children recurse pairwise (also through a wrapper one
 * side added or removed, `rewrap.ts`), and the rest is a conflict narrowed to those children.
 * The output is the sides' own text (`output.ts`). Pure.
 */
import type { SyntaxNode } from "../../Syntax.ts"
import { childrenOf, identityOf } from "../languages.ts"
import { hunksOf, match, overlaps } from "./align.ts"
import type { Context, Parsed, SideHunk, Sides } from "./context.ts"
import { groupsOf } from "./groups.ts"
import { refine } from "./hunks.ts"
import { commaShape, type Item, itemsOf, trailingOf } from "./items.ts"
import { merge3, Output, type Piece } from "./output.ts"
import { rewrapOf } from "./rewrap.ts"
import { bothInsertions, insertable, insertedByBoth } from "./sequence.ts"

export type { Context, Parsed } from "./context.ts"
export { merge3, type Piece } from "./output.ts"

// Deeper than this the merge does not descend (a long operator chain nests a node per
// operand): the conflict is left to an enclosing element, never to the call stack.
const maxDepth = 200

const slice = (side: Parsed, node: SyntaxNode): string => side.text.slice(node.startIndex, node.endIndex)

const tick = (ctx: Context): boolean => {
  if (ctx.timedOut) return true
  if ((++ctx.steps & 31) === 0 && ctx.expired()) ctx.timedOut = true
  return ctx.timedOut
}

/**
 * Merges three matched nodes; `undefined` when they conflict in a way that cannot be narrowed
 * below this node (the caller narrows it to a child of its own, or gives up), or the budget
 * is spent (`ctx.timedOut`).
 */
export const mergeNode = (
  ctx: Context,
  sides: { readonly base: Parsed; readonly ours: Parsed; readonly theirs: Parsed },
  b: SyntaxNode,
  o: SyntaxNode,
  t: SyntaxNode,
  parentType: string | undefined
): Array<Piece> | undefined => {
  const bs = slice(sides.base, b)
  const os = slice(sides.ours, o)
  const ts = slice(sides.theirs, t)
  if (os === ts || ts === bs) return [os]
  if (os === bs) return [ts]
  if (tick(ctx)) return undefined
  if (b.type !== o.type || b.type !== t.type) return rewrapped(ctx, sides, b, o, t, parentType)
  const bc = childrenOf(ctx.table, b)
  const oc = childrenOf(ctx.table, o)
  const tc = childrenOf(ctx.table, t)
  if (bc.length === 0 || oc.length === 0 || tc.length === 0 || ctx.depth >= maxDepth) return undefined
  ctx.depth++
  const merged = mergeList(ctx, sides, { b, o, t, bc, oc, tc }, parentType)
  ctx.depth--
  return merged
}

/**
 * The merge of three matched nodes of different kinds: where one side wrapped or unwrapped
 * the element the other changed in place (`rewrapOf`), the element's merge inside the wrapping
 * side's wrapper. Only a clean merge of the element; else `undefined`, as for other kinds.
 */
const rewrapped = (ctx: Context, sides: Sides, b: SyntaxNode, o: SyntaxNode, t: SyntaxNode, parentType: string | undefined): Array<Piece> | undefined => {
  const r = rewrapOf(sides, b, o, t, parentType)
  if (r === undefined) return undefined
  const merged = mergeNode(ctx, sides, r.b, r.o, r.t, r.parentType)
  if (merged === undefined || merged.some((p) => typeof p !== "string")) return undefined
  return [r.before, ...merged, r.after]
}

interface Lists {
  readonly b: SyntaxNode
  readonly o: SyntaxNode
  readonly t: SyntaxNode
  readonly bc: ReadonlyArray<SyntaxNode>
  readonly oc: ReadonlyArray<SyntaxNode>
  readonly tc: ReadonlyArray<SyntaxNode>
}

const mergeList = (
  ctx: Context,
  sides: { readonly base: Parsed; readonly ours: Parsed; readonly theirs: Parsed },
  lists: Lists,
  parentType: string | undefined
): Array<Piece> | undefined => {
  const shapes = [commaShape(ctx, lists.b, lists.bc), commaShape(ctx, lists.o, lists.oc), commaShape(ctx, lists.t, lists.tc)]
  const commas = shapes.every((x) => x !== undefined) && shapes.some((x) => x!.commas)
  const base = itemsOf(ctx, sides.base, lists.b, lists.bc, commas)
  const ours = itemsOf(ctx, sides.ours, lists.o, lists.oc, commas)
  const theirs = itemsOf(ctx, sides.theirs, lists.t, lists.tc, commas)
  const baseTexts = base.map((i) => i.text)
  // An element outweighs the punctuation around it, and a longer one a shorter.
  const weight = (i: number) => base[i]!.node.isNamed ? 2 + Math.min(62, base[i]!.text.length) : 1
  const mo = match(baseTexts, ours.map((i) => i.text), ctx.expired, weight)
  const mt = match(baseTexts, theirs.map((i) => i.text), ctx.expired, weight)
  if (mo === undefined || mt === undefined) {
    ctx.timedOut = true
    return undefined
  }
  const sequence = ctx.table.sequence(lists.b, parentType)
  // Identities are read only where needed (a node's fields cost a walk of its children).
  const idCache = new Map<number, string | undefined>()
  const baseId = (i: number): string | undefined => {
    if (!idCache.has(i)) idCache.set(i, identityOf(sequence, base[i]!.node, sides.base.text))
    return idCache.get(i)
  }
  const finer = (matched: Int32Array, items: ReadonlyArray<Item>, text: string, isOurs: boolean): Array<SideHunk> =>
    hunksOf(matched, items.length).flatMap((h) => refine(h, baseId, items, text, sequence, isOurs, base, sides.base.text, ctx))
  const hunks: Array<SideHunk> = [
    ...finer(mo, ours, sides.ours.text, true),
    ...finer(mt, theirs, sides.theirs.text, false)
  ].sort((x, y) => x.start - y.start || (x.end - x.start) - (y.end - y.start) || (x.ours ? -1 : 1))
  const dropped = sequence === undefined ? new Set<number>() : insertedByBoth(sequence, sides, hunks, base.length, baseId, (i) => base[i]!.node, ours, theirs)
  if (dropped === undefined) return undefined
  const ordered = ctx.table.ordered.has(lists.b.type)
  const groups = groupsOf(ctx, sides, base, ours, theirs, hunks, sequence, ordered)
  const out = new Output(ctx.table.comment)
  let position = 0
  const keep = (until: number) => {
    for (; position < until; position++) {
      const item = base[position]!
      const gap = merge3(item.gap, ours[mo[position]!]!.gap, theirs[mt[position]!]!.gap)
      if (item.element || !out.extend(gap, item.text)) out.put(gap, [item.text], item)
    }
  }
  // A side's children for the base range [start, end) of a group it may have hunks in.
  const sideRange = (group: ReadonlyArray<SideHunk>, isOurs: boolean, start: number, end: number): [number, number] => {
    const own = group.filter((h) => h.ours === isOurs)
    const m = isOurs ? mo : mt
    const first = own[0]
    const last = own[own.length - 1]
    if (first === undefined || last === undefined) return start === end ? [0, 0] : [m[start]!, m[end - 1]! + 1]
    return [first.start === start ? first.sideStart : m[start]!, last.end === end ? last.sideEnd : m[end - 1]! + 1]
  }
  for (const group of groups) {
    const start = Math.min(...group.map((h) => h.start))
    const end = Math.max(...group.map((h) => h.end))
    keep(start)
    position = Math.max(position, end)
    const baseItems = base.slice(start, end)
    const hasOurs = group.some((h) => h.ours)
    const hasTheirs = group.some((h) => !h.ours)
    const [os, oe] = sideRange(group, true, start, end)
    const [ts, te] = sideRange(group, false, start, end)
    const oursItems = ours.slice(os, oe)
    const theirsItems = theirs.slice(ts, te).filter((_, i) => !dropped.has(ts + i))
    if (!hasTheirs) {
      out.items(oursItems)
      continue
    }
    if (!hasOurs) {
      out.items(theirsItems)
      continue
    }
    if (oursItems.length === theirsItems.length && oursItems.every((item, i) => item.text === theirsItems[i]!.text)) {
      out.items(oursItems)
      continue
    }
    // Changes that only lie next to each other in an ordered list: a conflict over that run.
    if (ordered && group.some((h) => !group.some((g) => g.ours !== h.ours && overlaps(g, h)))) {
      const lead = oursItems[0]?.gap ?? theirsItems[0]?.gap ?? baseItems[0]?.gap ?? ""
      if (!out.conflict(lead, baseItems, oursItems, theirsItems)) return undefined
      continue
    }
    if (
      start === end && sequence !== undefined && insertable(ctx, sequence, oursItems, sides.ours.text) &&
      insertable(ctx, sequence, theirsItems, sides.theirs.text)
    ) {
      const both = bothInsertions(sides, sequence, oursItems, theirsItems)
      if (both !== undefined) {
        out.items(both)
        continue
      }
    }
    if (
      baseItems.length > 0 && oursItems.length === baseItems.length && theirsItems.length === baseItems.length &&
      baseItems.every((item, i) => {
        const o = oursItems[i]!.node
        const t = theirsItems[i]!.node
        return (item.node.type === o.type && item.node.type === t.type) || rewrapOf(sides, item.node, o, t, lists.b.type) !== undefined
      })
    ) {
      // The same children changed on both sides: merge them pairwise.
      let narrowed = true
      for (let i = 0; i < baseItems.length && narrowed; i++) {
        const bi = baseItems[i]!
        const oi = oursItems[i]!
        const ti = theirsItems[i]!
        const gap = merge3(bi.gap, oi.gap, ti.gap)
        const merged = mergeNode(ctx, sides, bi.node, oi.node, ti.node, lists.b.type)
        if (ctx.timedOut) return undefined
        if (merged !== undefined) out.put(gap, [merge3(bi.lead, oi.lead, ti.lead), ...merged, merge3(bi.trail, oi.trail, ti.trail)], oi)
        else narrowed = out.conflict(gap, [bi], [oi], [ti])
      }
      if (narrowed) continue
      return undefined
    }
    const lead = oursItems[0]?.gap ?? theirsItems[0]?.gap ?? baseItems[0]?.gap ?? ""
    if (!out.conflict(lead, baseItems, oursItems, theirsItems)) return undefined
  }
  keep(base.length)
  if (commas) {
    // A comma after the last element (before the closing bracket) in ours' style, unless ours
    // has no element to show it.
    const trailing = ours.some((i) => i.element) ? shapes[1]!.trailing : theirs.some((i) => i.element) ? shapes[2]!.trailing : shapes[0]!.trailing
    if (trailing) out.trailingComma()
  }
  out.pieces.push(merge3(trailingOf(sides.base, lists.b, base), trailingOf(sides.ours, lists.o, ours), trailingOf(sides.theirs, lists.t, theirs)))
  return out.pieces
}
