/**
 * The syntax trees a syntax-aware merge reads, as the merge's pure core sees them: which
 * languages have a grammar, which language a path is in, and the small node shape (a structural
 * subset of a tree-sitter node) every parser provides. Does not own loading grammars
 * (`Grammars`) nor merging by tree (`StructuredMerge`). Pure.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * A language the merge can parse: TypeScript (`.ts`, `.mts`, `.cts`), TSX (`.tsx`), JavaScript
 * with JSX (`.js`, `.jsx`, `.mjs`, `.cjs`), Python (`.py`, `.pyi`) and JSON (`.json`).
 *
 * @category models
 * @since 0.1.0
 */
export const Language = Schema.Literals(["typescript", "tsx", "javascript", "python", "json"])

/**
 * @category models
 * @since 0.1.0
 */
export type Language = typeof Language.Type

const byExtension: ReadonlyMap<string, Language> = new Map([
  ["ts", "typescript"],
  ["mts", "typescript"],
  ["cts", "typescript"],
  ["tsx", "tsx"],
  ["js", "javascript"],
  ["jsx", "javascript"],
  ["mjs", "javascript"],
  ["cjs", "javascript"],
  ["py", "python"],
  ["pyi", "python"],
  ["json", "json"]
])

/**
 * The language of a path by its extension (case-insensitive), or `undefined` when none of the
 * grammars covers it. A declaration file (`.d.ts`) is TypeScript.
 *
 * @category constructors
 * @since 0.1.0
 */
export const languageOfPath = (path: string): Language | undefined => {
  const name = path.slice(path.lastIndexOf("/") + 1)
  const dot = name.lastIndexOf(".")
  return dot <= 0 ? undefined : byExtension.get(name.slice(dot + 1).toLowerCase())
}

/**
 * One node of a concrete syntax tree. Offsets are UTF-16 code units into the parsed string,
 * `endIndex` exclusive; `children` lists named and anonymous children (punctuation, keywords) in
 * order; `fieldNameForChild(i)` names the grammar field child `i` fills (`name`, `body`, ...).
 * `hasError` is true when the node or a descendant is an error or a missing token.
 *
 * @category models
 * @since 0.1.0
 */
export interface SyntaxNode {
  readonly type: string
  readonly startIndex: number
  readonly endIndex: number
  readonly isNamed: boolean
  readonly hasError: boolean
  readonly children: ReadonlyArray<SyntaxNode>
  readonly fieldNameForChild: (index: number) => string | null
}

/**
 * A parsed text. Its nodes stay valid until `dispose` (a tree-sitter tree lives in WebAssembly
 * memory); whoever parsed it disposes it once, after its last read.
 *
 * @category models
 * @since 0.1.0
 */
export interface SyntaxTree {
  readonly root: SyntaxNode
  readonly dispose: () => void
}

/**
 * A loaded grammar. `parse` is synchronous and returns `undefined` when `expired` said so
 * during the parse (the time budget of one file); a text that does not parse still gets a tree,
 * whose root `hasError`. With `previous` (a tree this parser made, of a similar text, not yet
 * disposed), the parse reuses what did not change (the parser finds the edits itself); the tree
 * is the same as without it, and `previous` stays valid.
 *
 * @category models
 * @since 0.1.0
 */
export interface SyntaxParser {
  readonly language: Language
  readonly parse: (text: string, expired?: () => boolean, previous?: SyntaxTree) => SyntaxTree | undefined
}
