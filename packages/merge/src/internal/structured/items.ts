/**
 * The children of a list as the merge handles them (`Item`): each child with the tokens bound
 * to it and the layout before it, the commas of a comma-separated list left out to be
 * regenerated, and the shape of such a list. Pure.
 */
import type { SyntaxNode } from "../../Syntax.ts"
import type { Context, Parsed } from "./context.ts"

/**
 * One child of a list as merged: its node with the tokens bound to it (a `;` ending it, the
 * `|` before a union arm) in `lead` and `trail`, the layout before it, and its whole text.
 * `element` marks an element of a comma-separated list (commas are regenerated between them).
 */
export interface Item {
  readonly node: SyntaxNode
  readonly gap: string
  readonly lead: string
  readonly trail: string
  readonly text: string
  readonly end: number
  readonly element: boolean
}

const isComma = (node: SyntaxNode): boolean => !node.isNamed && node.type === ","
const opening = new Set(["{", "[", "("])
const closing = new Set(["}", "]", ")"])
// Where a trailing comma changes the meaning (a one-element Python tuple), commas stay content.
const commasMatter = new Set(["tuple", "parenthesized_expression", "expression_list", "pattern_list"])

/**
 * Whether `children` form a bracketed comma-separated list (exactly one comma between two
 * elements, none before the first), and whether a comma follows the last element.
 */
export const commaShape = (ctx: Context, node: SyntaxNode, children: ReadonlyArray<SyntaxNode>): { readonly trailing: boolean; readonly commas: boolean } | undefined => {
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
export const itemsOf = (ctx: Context, side: Parsed, node: SyntaxNode, children: ReadonlyArray<SyntaxNode>, commas: boolean): Array<Item> => {
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

/** The layout after a list's last item, up to the list's end. */
export const trailingOf = (side: Parsed, node: SyntaxNode, items: ReadonlyArray<Item>): string =>
  side.text.slice(items.length === 0 ? node.startIndex : items[items.length - 1]!.end, node.endIndex)

/** Whether a node is a separator token (`,`, `;`, `|`). */
export const isSeparator = (node: SyntaxNode): boolean => !node.isNamed && (node.type === "," || node.type === ";" || node.type === "|")
