/**
 * Finding a key or member name that appears twice in one object, dict, class, interface or
 * enum of a parsed text. Descends only into nodes `visit` accepts, so a caller skips the
 * subtrees it already knows (text copied whole from a side). Pure.
 */
import type { SyntaxNode } from "../../Syntax.ts"
import { childrenOf, type LanguageTable } from "../languages.ts"

/** One repeated key: which sequence kind, the key, and the offsets of its first two occurrences. */
export interface Duplicate {
  readonly kind: string
  readonly key: string
  readonly first: number
  readonly second: number
}

/**
 * The repeated keys under `root` (at most one per key and sequence), or `undefined` once
 * `expired` says the budget is spent. `visit(node)` false skips a node and its subtree.
 */
export const duplicatesIn = (
  table: LanguageTable,
  root: SyntaxNode,
  text: string,
  visit: (node: SyntaxNode) => boolean,
  expired: () => boolean
): ReadonlyArray<Duplicate> | undefined => {
  const found: Array<Duplicate> = []
  const stack: Array<{ readonly node: SyntaxNode; readonly parentType: string | undefined }> = [{ node: root, parentType: undefined }]
  let steps = 0
  while (stack.length > 0) {
    if ((++steps & 255) === 0 && expired()) return undefined
    const { node, parentType } = stack.pop()!
    if (!visit(node)) continue
    const children = childrenOf(table, node)
    const sequence = table.sequence(node, parentType)
    if (sequence !== undefined) {
      const seen = new Map<string, number>()
      const reported = new Set<string>()
      for (const child of children) {
        if (!sequence.member(child, text)) continue
        const key = sequence.unique(child, text)
        if (key === undefined) continue
        const at = seen.get(key)
        if (at === undefined) seen.set(key, child.startIndex)
        else if (!reported.has(key)) {
          reported.add(key)
          found.push({ kind: sequence.kind, key, first: at, second: child.startIndex })
        }
      }
    }
    for (let i = children.length - 1; i >= 0; i--) {
      const child = children[i]!
      if (child.isNamed) stack.push({ node: child, parentType: node.type })
    }
  }
  return found
}

/** The 1-based line of UTF-16 offset `at` in `text`. */
export const lineAt = (text: string, at: number): number => {
  let line = 1
  for (let i = text.indexOf("\n"); i !== -1 && i < at; i = text.indexOf("\n", i + 1)) line++
  return line
}
