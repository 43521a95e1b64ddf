/**
 * Order-insensitive sequences (imports, members, keys): which items both sides may insert at
 * one place, the merge of both sides' insertions there, and the elements both sides inserted
 * (at different places) to keep once. Pure.
 */
import type { SyntaxNode } from "../../Syntax.ts"
import { identityOf, type Sequence } from "../languages.ts"
import type { Context, Parsed, SideHunk } from "./context.ts"
import { isSeparator, type Item } from "./items.ts"
import { rewraps, untyped } from "./rewrap.ts"

/** Whether `items` may be inserted by both sides at one place of `sequence`. */
export const insertable = (ctx: Context, sequence: Sequence, items: ReadonlyArray<Item>, text: string): boolean =>
  items.every((item) => sequence.member(item.node, text) || ctx.table.comment.has(item.node.type) || isSeparator(item.node))

/**
 * Both sides' insertions at one place of an order-insensitive sequence: ours', then theirs'
 * elements that ours did not insert too (an element with an identity ours inserted with the
 * same text is one element; with another text it is a conflict: `undefined`).
 */
export const bothInsertions = (
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

/**
 * Theirs' inserted elements that ours inserted too, elsewhere in the sequence, with the same
 * text: their indices in theirs' children, each with one separator beside it, to leave out
 * (the element is ours' insertion, once). `undefined` when one identity was inserted with
 * different texts: the sequence cannot be merged here.
 */
export const insertedByBoth = (
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
