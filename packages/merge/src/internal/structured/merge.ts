/**
 * The three-way merge of syntax trees: matched nodes whose texts differ are merged child list by
 * child list, equal subtrees are taken whole as text. A child list is aligned per side by text
 * (kept children), each side's changes are hunks between kept children, and hunks of the two
 * sides that touch the same children are settled: one side unchanged takes the other, equal
 * changes converge, both sides inserting at one place in an order-insensitive sequence keeps
 * ours' then theirs' elements, changes of the same children recurse pairwise, and the rest is
 * a conflict narrowed to those children. Output pieces are the sides' own text: each emitted
 * child keeps the whitespace before it from the side it comes from. Pure.
 */
import type { SyntaxNode } from "../../Syntax.ts"
import { bindsReadBy, childrenOf, identityOf, type LanguageTable, type Sequence } from "../languages.ts"
import { type Hunk, hunksOf, match, overlaps } from "./align.ts"

/** A region both sides changed differently: each side's text of it, from the line's start. */
export interface ConflictPiece {
  ours: string
  base: string
  theirs: string
}

/** A piece of the merged text. */
export type Piece = string | ConflictPiece

/** One parsed side: its text (without a byte order mark) and its tree's root. */
export interface Parsed {
  readonly text: string
  readonly root: SyntaxNode
}

/** The three parsed sides. */
type Sides = { readonly base: Parsed; readonly ours: Parsed; readonly theirs: Parsed }

/** What the merge needs besides the trees; `timedOut` is set once `expired` said so. */
export interface Context {
  readonly table: LanguageTable
  readonly expired: () => boolean
  steps: number
  timedOut: boolean
  depth: number
}

// Deeper than this the merge does not descend (a long operator chain nests a node per
// operand): the conflict is left to an enclosing element, never to the call stack.
const maxDepth = 200

/**
 * One child of a list as merged: its node with the tokens bound to it (a `;` ending it, the
 * `|` before a union arm) in `lead` and `trail`, the layout before it, and its whole text.
 * `element` marks an element of a comma-separated list (commas are regenerated between them).
 */
interface Item {
  readonly node: SyntaxNode
  readonly gap: string
  readonly lead: string
  readonly trail: string
  readonly text: string
  readonly end: number
  readonly element: boolean
}

const slice = (side: Parsed, node: SyntaxNode): string => side.text.slice(node.startIndex, node.endIndex)

/** The three-way merge of a piece of layout: theirs when ours kept base's, else ours. */
export const merge3 = (base: string, ours: string, theirs: string): string => ours === base ? theirs : ours

const isComma = (node: SyntaxNode): boolean => !node.isNamed && node.type === ","
const opening = new Set(["{", "[", "("])
const closing = new Set(["}", "]", ")"])
// Where a trailing comma changes the meaning (a one-element Python tuple), commas stay content.
const commasMatter = new Set(["tuple", "parenthesized_expression", "expression_list", "pattern_list"])

/**
 * Whether `children` form a bracketed comma-separated list (exactly one comma between two
 * elements, none before the first), and whether a comma follows the last element.
 */
const commaShape = (ctx: Context, node: SyntaxNode, children: ReadonlyArray<SyntaxNode>): { readonly trailing: boolean; readonly commas: boolean } | undefined => {
  const first = children[0]
  const last = children[children.length - 1]
  if (commasMatter.has(node.type) || first === undefined || last === undefined || children.length < 2) return undefined
  if (first.isNamed || last.isNamed || !opening.has(first.type) || !closing.has(last.type)) return undefined
  let element = false
  let comma = false
  let commas = false
  for (let i = 1; i < children.length - 1; i++) {
    const child = children[i]!
    if (isComma(child)) {
      if (!element || comma) return undefined
      comma = true
      commas = true
    } else if (!ctx.table.comment.has(child.type)) {
      if (element && !comma) return undefined
      element = true
      comma = false
    }
  }
  return { trailing: comma, commas }
}

/** The list's items; in a comma-separated list the commas are left out (regenerated). */
const itemsOf = (ctx: Context, side: Parsed, node: SyntaxNode, children: ReadonlyArray<SyntaxNode>, commas: boolean): Array<Item> => {
  const items: Array<Item> = []
  const text = side.text
  let previousEnd = node.startIndex
  let pipe: SyntaxNode | undefined
  for (let i = 0; i < children.length; i++) {
    const child = children[i]!
    if (commas && isComma(child)) {
      previousEnd = child.endIndex
      continue
    }
    if (!child.isNamed && child.type === "|" && ctx.table.flattened.has(node.type) && pipe === undefined && i + 1 < children.length) {
      pipe = child
      continue
    }
    const before = items[items.length - 1]
    if (!child.isNamed && child.type === ";" && before !== undefined && before.node.isNamed && before.trail === "") {
      items[items.length - 1] = { ...before, trail: text.slice(before.node.endIndex, child.endIndex), text: text.slice(before.end - before.text.length, child.endIndex), end: child.endIndex }
      previousEnd = child.endIndex
      continue
    }
    const start = pipe?.startIndex ?? child.startIndex
    items.push({
      node: child,
      gap: text.slice(previousEnd, start),
      lead: text.slice(start, child.startIndex),
      trail: "",
      text: text.slice(start, child.endIndex),
      end: child.endIndex,
      element: commas && i > 0 && i < children.length - 1 && !ctx.table.comment.has(child.type)
    })
    pipe = undefined
    previousEnd = child.endIndex
  }
  return items
}

const trailingOf = (side: Parsed, node: SyntaxNode, items: ReadonlyArray<Item>): string =>
  side.text.slice(items.length === 0 ? node.startIndex : items[items.length - 1]!.end, node.endIndex)

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

// At most this many nodes of a wrapper are looked through for the element it wraps.
const maxWrapperNodes = 256

/**
 * The node of `kind` that `node` wraps: the only one of that kind among its descendants that
 * no other of that kind encloses, with its parent's type; `undefined` when there is none,
 * more than one, or the wrapper is too large to look through.
 */
const wrappedIn = (node: SyntaxNode, kind: string): { readonly node: SyntaxNode; readonly parentType: string } | undefined => {
  let found: { readonly node: SyntaxNode; readonly parentType: string } | undefined
  const stack: Array<SyntaxNode> = [node]
  let visited = 0
  while (stack.length > 0) {
    const parent = stack.pop()!
    for (const child of parent.children) {
      if (++visited > maxWrapperNodes) return undefined
      if (child.type === kind) {
        if (found !== undefined) return undefined
        found = { node: child, parentType: parent.type }
      } else if (child.children.length > 0) stack.push(child)
    }
  }
  return found
}

/** Whether one of two nodes of different kinds wraps a node of the other's kind (`wrappedIn`). */
const rewraps = (a: SyntaxNode, b: SyntaxNode): boolean =>
  a.type !== b.type && (wrappedIn(b, a.type) !== undefined || wrappedIn(a, b.type) !== undefined)

// An identity without the node kind `identityOf` puts first.
const untyped = (id: string | undefined): string | undefined => id === undefined ? undefined : id.slice(id.indexOf("\u0000"))

/** Whether `b` (in `bText`) is a version of `a` (in `aText`): the same text, or a named child's text kept. */
const kin = (a: SyntaxNode, aText: string, b: SyntaxNode, bText: string): boolean => {
  if (aText.slice(a.startIndex, a.endIndex) === bText.slice(b.startIndex, b.endIndex)) return true
  const texts = new Set(a.children.filter((c) => c.isNamed).map((c) => aText.slice(c.startIndex, c.endIndex)))
  return b.children.some((c) => c.isNamed && texts.has(bText.slice(c.startIndex, c.endIndex)))
}

/**
 * Three matched nodes of which one side's is of another kind, where that side wrapped base's
 * node in a new one (`f` became `cond && (f)`, `export function f`, a decorated `def f`) or
 * unwrapped it (the reverse), and the other side kept base's kind: the three nodes to merge in
 * its place (`b`, `o`, `t`, of one kind) and the wrapper's text kept around their merge (the
 * wrapping side's; none after an unwrap). `undefined` for any other difference of kinds: a
 * wrapper holding two or no nodes of the kind, a wrapped node that keeps nothing of base's, or
 * an unwrap where the other side changed the wrapper.
 */
const rewrapOf = (
  sides: Sides,
  b: SyntaxNode,
  o: SyntaxNode,
  t: SyntaxNode,
  parentType: string | undefined
):
  | { readonly b: SyntaxNode; readonly o: SyntaxNode; readonly t: SyntaxNode; readonly parentType: string | undefined; readonly before: string; readonly after: string }
  | undefined =>
{
  const oursChanged = t.type === b.type && o.type !== b.type
  if (!oursChanged && !(o.type === b.type && t.type !== b.type)) return undefined
  const changed = oursChanged ? o : t
  const kept = oursChanged ? t : o
  const changedSide = oursChanged ? sides.ours : sides.theirs
  const keptSide = oursChanged ? sides.theirs : sides.ours
  const triple = (base: SyntaxNode, keptNode: SyntaxNode, changedNode: SyntaxNode) =>
    oursChanged ? { b: base, o: changedNode, t: keptNode } : { b: base, o: keptNode, t: changedNode }
  const inner = wrappedIn(changed, b.type)
  if (inner !== undefined) {
    if (!kin(b, sides.base.text, inner.node, changedSide.text)) return undefined
    const text = changedSide.text
    return {
      ...triple(b, kept, inner.node),
      parentType: inner.parentType,
      before: text.slice(changed.startIndex, inner.node.startIndex),
      after: text.slice(inner.node.endIndex, changed.endIndex)
    }
  }
  const baseInner = wrappedIn(b, changed.type)
  const keptInner = wrappedIn(kept, changed.type)
  if (baseInner === undefined || keptInner === undefined || !kin(baseInner.node, sides.base.text, changed, changedSide.text)) return undefined
  const around = (side: Parsed, node: SyntaxNode, innerNode: SyntaxNode) =>
    [side.text.slice(node.startIndex, innerNode.startIndex), side.text.slice(innerNode.endIndex, node.endIndex)]
  const [bb, ba] = around(sides.base, b, baseInner.node)
  const [kb, ka] = around(keptSide, kept, keptInner.node)
  if (bb !== kb || ba !== ka) return undefined
  return { ...triple(baseInner.node, keptInner.node, changed), parentType, before: "", after: "" }
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

const isSeparator = (node: SyntaxNode): boolean => !node.isNamed && (node.type === "," || node.type === ";" || node.type === "|")

/** Whether `items` may be inserted by both sides at one place of `sequence`. */
const insertable = (ctx: Context, sequence: Sequence, items: ReadonlyArray<Item>, text: string): boolean =>
  items.every((item) => sequence.member(item.node, text) || ctx.table.comment.has(item.node.type) || isSeparator(item.node))

/**
 * Both sides' insertions at one place of an order-insensitive sequence: ours', then theirs'
 * elements that ours did not insert too (an element with an identity ours inserted with the
 * same text is one element; with another text it is a conflict: `undefined`).
 */
const bothInsertions = (
  sides: { readonly ours: Parsed; readonly theirs: Parsed },
  sequence: Sequence,
  ours: ReadonlyArray<Item>,
  theirs: ReadonlyArray<Item>
): Array<Item> | undefined => {
  const oursByKey = new Map<string, string>()
  for (const item of ours) {
    if (!sequence.member(item.node, sides.ours.text)) continue
    const key = sequence.key(item.node, sides.ours.text)
    if (key !== undefined) oursByKey.set(key, item.text)
  }
  // Theirs in units: an element with the separators and comments before it.
  const kept: Array<Item> = [...ours]
  let unit: Array<Item> = []
  for (const item of theirs) {
    unit.push(item)
    if (!sequence.member(item.node, sides.theirs.text)) continue
    const key = sequence.key(item.node, sides.theirs.text)
    const same = key === undefined ? undefined : oursByKey.get(key)
    if (same === undefined) kept.push(...unit)
    else if (same !== item.text) return undefined
    unit = []
  }
  kept.push(...unit)
  return kept
}

interface Lists {
  readonly b: SyntaxNode
  readonly o: SyntaxNode
  readonly t: SyntaxNode
  readonly bc: ReadonlyArray<SyntaxNode>
  readonly oc: ReadonlyArray<SyntaxNode>
  readonly tc: ReadonlyArray<SyntaxNode>
}

interface SideHunk extends Hunk {
  readonly ours: boolean
}

const lastNewline = (gap: string): number => gap.lastIndexOf("\n")

/** One side's text of a conflicting region, from its line's start, commas between its elements. */
const joined = (items: ReadonlyArray<Item>): string => {
  if (items.length === 0) return ""
  const first = items[0]!
  let text = first.gap.slice(lastNewline(first.gap) + 1) + first.text
  let element = first.element
  for (let i = 1; i < items.length; i++) {
    const item = items[i]!
    if (item.element && element) text += ","
    // A comment between two elements does not end the run: the comma goes before it too.
    if (item.element) element = true
    else if (item.node.type !== "comment") element = false
    text += item.gap + item.text
  }
  return text
}

/**
 * The merged list being written: pieces, with a comma put between two elements of a
 * comma-separated list (after a conflict, on each side of it that has text).
 */
class Output {
  readonly pieces: Array<Piece> = []
  private element = false
  private afterElement = -1

  constructor(private readonly comment: ReadonlySet<string>) {}

  put(gap: string, body: ReadonlyArray<Piece>, item: Item): void {
    if (item.element && this.element) this.comma(this.pieces.length)
    this.pieces.push(gap, ...body)
    if (item.element) {
      this.element = true
      this.afterElement = this.pieces.length
    } else if (!this.comment.has(item.node.type)) this.element = false
  }

  items(items: ReadonlyArray<Item>): void {
    for (const item of items) this.put(item.gap, [item.text], item)
  }

  /**
   * A conflict over whole lines: written when the layout before the region ends a line (that a
   * line also ends after it is checked once the whole text is assembled).
   */
  conflict(lead: string, base: ReadonlyArray<Item>, ours: ReadonlyArray<Item>, theirs: ReadonlyArray<Item>): boolean {
    const at = lastNewline(lead)
    if (at === -1) return false
    const element = [...base, ...ours, ...theirs].some((i) => i.element)
    if (element && this.element) this.comma(this.pieces.length)
    this.pieces.push(lead.slice(0, at + 1), { ours: joined(ours), base: joined(base), theirs: joined(theirs) })
    if (element) {
      this.element = true
      this.afterElement = this.pieces.length
    }
    return true
  }

  /** Text after a conflict on its last line (`;`) joins each side of it; false when there is none. */
  extend(gap: string, text: string): boolean {
    const last = this.pieces[this.pieces.length - 1]
    if (last === undefined || typeof last === "string" || gap.includes("\n")) return false
    last.ours += gap + text
    last.base += gap + text
    last.theirs += gap + text
    return true
  }

  /** The trailing comma after the last element. */
  trailingComma(): void {
    if (this.afterElement !== -1) this.comma(this.afterElement)
  }

  private comma(at: number): void {
    const before = this.pieces[at - 1]
    if (before !== undefined && typeof before !== "string") {
      if (before.ours !== "") before.ours += ","
      if (before.base !== "") before.base += ","
      if (before.theirs !== "") before.theirs += ","
    } else {
      this.pieces.splice(at, 0, ",")
      if (this.afterElement >= at) this.afterElement++
    }
  }
}

/**
 * Theirs' inserted elements that ours inserted too, elsewhere in the sequence, with the same
 * text: their indices in theirs' children, each with one separator beside it, to leave out
 * (the element is ours' insertion, once). `undefined` when one identity was inserted with
 * different texts: the sequence cannot be merged here.
 */
const insertedByBoth = (
  sequence: Sequence,
  sides: { readonly ours: Parsed; readonly theirs: Parsed },
  hunks: ReadonlyArray<SideHunk>,
  baseLength: number,
  baseId: (i: number) => string | undefined,
  baseNode: (i: number) => SyntaxNode,
  ours: ReadonlyArray<Item>,
  theirs: ReadonlyArray<Item>
): Set<number> | undefined => {
  const insertedBy = (isOurs: boolean): Map<string, Array<number>> => {
    const items = isOurs ? ours : theirs
    const text = isOurs ? sides.ours.text : sides.theirs.text
    const found = new Map<string, Array<number>>()
    for (const h of hunks) {
      if (h.ours !== isOurs) continue
      for (let i = h.sideStart; i < h.sideEnd; i++) {
        const item = items[i]!
        if (!sequence.member(item.node, text)) continue
        const id = identityOf(sequence, item.node, text)
        if (id !== undefined) found.set(id, [...(found.get(id) ?? []), i])
      }
    }
    return found
  }
  const dropped = new Set<number>()
  const oursInserted = insertedBy(true)
  if (oursInserted.size === 0) return dropped
  const theirsInserted = insertedBy(false)
  const both = [...theirsInserted.keys()].filter((id) => oursInserted.has(id))
  if (both.length === 0) return dropped
  // An identity base has too was moved or changed, not inserted; so was base's element that
  // one side wrapped or unwrapped (`export`, a decorator) under the same key.
  const known = new Set<string>()
  const kinds = new Map<string, Array<SyntaxNode>>()
  for (let i = 0; i < baseLength; i++) {
    const id = baseId(i)
    if (id === undefined) continue
    known.add(id)
    kinds.set(untyped(id)!, [...(kinds.get(untyped(id)!) ?? []), baseNode(i)])
  }
  const rewrapOfBase = (id: string, node: SyntaxNode) => (kinds.get(untyped(id)!) ?? []).some((b) => rewraps(b, node))
  for (const id of both) {
    if (known.has(id) || rewrapOfBase(id, ours[oursInserted.get(id)![0]!]!.node)) continue
    const text = ours[oursInserted.get(id)![0]!]!.text
    for (const i of theirsInserted.get(id)!) {
      if (theirs[i]!.text !== text) return undefined
      dropped.add(i)
      const h = hunks.find((x) => !x.ours && x.sideStart <= i && i < x.sideEnd)!
      if (i - 1 >= h.sideStart && isSeparator(theirs[i - 1]!.node) && !dropped.has(i - 1)) dropped.add(i - 1)
      else if (i + 1 < h.sideEnd && isSeparator(theirs[i + 1]!.node)) dropped.add(i + 1)
    }
  }
  return dropped
}

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
const similarPairs = (
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

/**
 * Splits a changed run into the elements changed in place (paired with their base version by
 * identity, or position by position when the run keeps its length and kinds) and the runs
 * inserted or deleted around them, so the other side's edits next to them do not overlap.
 */
const refine = (
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
  // In an ordered list (statements, arguments, array elements) two sides' changes touch also
  // when no element neither side changed lies between them (diff3 wants an unchanged line
  // between hunks) and one binds a name the other mentions: `const p = f(a)` changed by one
  // side, `g(p)` right after it by the other. Not between two changes of an order-insensitive
  // sequence's own elements, nor for a change that already meets the other side's elsewhere.
  const ordered = ctx.table.ordered.has(lists.b.type)
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
