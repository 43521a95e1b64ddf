/**
 * What the structured merge's modules share: the parsed sides, the merge's context (its table,
 * budget and depth) and one side's hunk of a child list. Types only.
 */
import type { LanguageTable } from "../languages.ts"
import type { SyntaxNode } from "../../Syntax.ts"
import type { Hunk } from "./align.ts"

/** One parsed side: its text (without a byte order mark) and its tree's root. */
export interface Parsed {
  readonly text: string
  readonly root: SyntaxNode
}

/** The three parsed sides. */
export type Sides = { readonly base: Parsed; readonly ours: Parsed; readonly theirs: Parsed }

/** What the merge needs besides the trees; `timedOut` is set once `expired` said so. */
export interface Context {
  readonly table: LanguageTable
  readonly expired: () => boolean
  steps: number
  timedOut: boolean
  depth: number
}

/** One side's change of a child list: a hunk between kept children, and whose it is. */
export interface SideHunk extends Hunk {
  readonly ours: boolean
}
