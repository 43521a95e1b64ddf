/**
 * Wrapping and unwrapping: telling when one side put a node inside a new one (`export`, a
 * decorator, `cond && (f)`) or took it out, and which three nodes then merge in its place. Pure.
 */
import type { SyntaxNode } from "../../Syntax.ts"
import type { Parsed, Sides } from "./context.ts"

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
export const rewraps = (a: SyntaxNode, b: SyntaxNode): boolean =>
  a.type !== b.type && (wrappedIn(b, a.type) !== undefined || wrappedIn(a, b.type) !== undefined)

// An identity without the node kind `identityOf` puts first.
export const untyped = (id: string | undefined): string | undefined => id === undefined ? undefined : id.slice(id.indexOf("\u0000"))

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
export const rewrapOf = (
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
