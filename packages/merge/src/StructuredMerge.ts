/**
 * The syntax-aware three-way merge of one text (base = the child's preimage, ours = the live
 * file, theirs = the child's postimage), and the structural checks every clean two-sided merge
 * passes. Works on the trees a `SyntaxParser` gives; the result is the inputs' own text
 * re-spliced, never a printed tree. Pure and total: anything it cannot merge within its bounds
 * is a value (`Fallback` or `Conflict`), never an exception.
 *
 * @since 0.1.0
 */
import { tableOf } from "./internal/languages.ts"
import { type Duplicate, duplicatesIn, lineAt } from "./internal/structured/duplicates.ts"
import { type Context, merge3, mergeNode, type Parsed, type Piece } from "./internal/structured/merge.ts"
import { markerLine } from "./internal/textMerge.ts"
import type { SyntaxNode, SyntaxParser, SyntaxTree } from "./Syntax.ts"
import type { MarkerLabels } from "./TextMerge.ts"

const BOM = "\uFEFF"

/** Inputs longer than this many UTF-8 bytes are not parsed: the line merge's result stands. */
export const maxBytes = 1024 * 1024

const utf8Length = (text: string): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) bytes += 1
    else if (c < 0x800) bytes += 2
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < text.length) {
      bytes += 4
      i++
    } else bytes += 3
  }
  return bytes
}

const tooLarge = (texts: ReadonlyArray<string>): boolean =>
  texts.some((t) => t.length > maxBytes || utf8Length(t) > maxBytes)

const hasBom = (text: string): boolean => text.startsWith(BOM)
const withoutBom = (text: string): string => hasBom(text) ? text.slice(1) : text

// Parses every text or none: a spent budget (undefined) disposes what was parsed already. With
// `previous` (a tree of a similar text, e.g. base's for a side) the parses reuse it; with
// `chained`, each text after the first reuses the first one's tree.
const parseAll = (
  parser: SyntaxParser,
  texts: ReadonlyArray<string>,
  expired: () => boolean,
  previous?: SyntaxTree,
  chained = false
): Array<SyntaxTree> | undefined => {
  const trees: Array<SyntaxTree> = []
  for (const text of texts) {
    const tree = parser.parse(text, expired, chained ? trees[0] ?? previous : previous)
    if (tree === undefined) {
      for (const t of trees) t.dispose()
      return undefined
    }
    trees.push(tree)
  }
  return trees
}

const disposeAll = (trees: ReadonlyArray<SyntaxTree>): void => {
  for (const t of trees) t.dispose()
}

const dominantEol = (text: string): string => {
  const crlf = text.split("\r\n").length - 1
  const lf = text.split("\n").length - 1 - crlf
  return crlf > lf ? "\r\n" : "\n"
}

// A conflict's markers need lines of their own: the piece before ends one, the piece after
// starts the next (or the text ends).
const rendered = (pieces: ReadonlyArray<Piece>, labels: MarkerLabels, eol: string): { text: string; conflicts: number } | undefined => {
  let text = ""
  let conflicts = 0
  let pendingLineEnd = false
  for (const piece of pieces) {
    if (typeof piece === "string") {
      if (piece === "") continue
      if (pendingLineEnd && piece[0] !== "\n" && piece[0] !== "\r") return undefined
      pendingLineEnd = false
      text += piece
      continue
    }
    if (pendingLineEnd || (text !== "" && !text.endsWith("\n"))) return undefined
    conflicts++
    const block = (marker: string, body: string) => `${marker}${eol}${body === "" ? "" : `${body}${eol}`}`
    text += block(markerLine("<<<<<<<", labels.ours), piece.ours) + block(markerLine("|||||||", labels.base), piece.base) +
      block("=======", piece.theirs) + markerLine(">>>>>>>", labels.theirs)
    pendingLineEnd = true
  }
  if (pendingLineEnd) text += eol
  return { text, conflicts }
}

// Whether a node's text is copied whole from `side` (then its keys were the side's own). It is
// looked for first where it would be if the texts differ only by insertions and deletions
// (at most the length difference away), then anywhere.
const copiedFrom = (side: string, text: string, node: SyntaxNode): boolean => {
  const piece = text.slice(node.startIndex, node.endIndex)
  const near = Math.max(0, node.startIndex - Math.abs(text.length - side.length) - 1024)
  if (side.startsWith(piece, near) || side.indexOf(piece, near) !== -1) return true
  return near > 0 && side.lastIndexOf(piece, near) !== -1
}

/**
 * The keys repeated in `merged` that neither `ours` nor `theirs` repeats in a sequence of the
 * same kind; `undefined` when the budget is spent.
 */
const newDuplicates = (
  parser: SyntaxParser,
  merged: Parsed,
  ours: string,
  theirs: string,
  expired: () => boolean
): ReadonlyArray<Duplicate> | undefined => {
  const table = tableOf(parser.language)
  // Small nodes are cheaper to descend than to look up.
  const visit = (node: SyntaxNode) =>
    node.endIndex - node.startIndex < 64 || !(copiedFrom(ours, merged.text, node) || copiedFrom(theirs, merged.text, node))
  const found = duplicatesIn(table, merged.root, merged.text, visit, expired)
  if (found === undefined || found.length === 0) return found
  const trees = parseAll(parser, [ours, theirs], expired)
  if (trees === undefined) return undefined
  const before = new Set<string>()
  for (const [i, tree] of trees.entries()) {
    const text = i === 0 ? ours : theirs
    const own = duplicatesIn(table, tree.root, text, () => true, expired)
    if (own === undefined) {
      disposeAll(trees)
      return undefined
    }
    for (const d of own) before.add(`${d.kind}\u0000${d.key}`)
  }
  disposeAll(trees)
  return found.filter((d) => !before.has(`${d.kind}\u0000${d.key}`))
}

// A key is shown whole up to a line's worth: a conflict's text stays readable.
const shown = (key: string): string => key.length <= 80 ? key : `${key.slice(0, 77)}...`

const describeDuplicate = (d: Duplicate, text: string): string =>
  `the key ${shown(d.key)} appears twice in one ${d.kind} (lines ${lineAt(text, d.first)} and ${lineAt(text, d.second)}), though neither side has it twice`

/**
 * What the structured merge of three texts gives:
 * - `Merged`: `text` is the merged file, which parses without error nodes;
 * - `Conflict`: some element changed differently on both sides; `text` is the merge with
 *   markers around those elements only, `elements` how many there are;
 * - `Fallback`: the structured merge does not apply (`why`: an input over the size bound, an
 *   input that does not parse, the time budget spent, nothing it knows how to merge); the
 *   caller keeps the line merge's result.
 *
 * @category models
 * @since 0.1.0
 */
export type StructuredMerge =
  | { readonly _tag: "Merged"; readonly text: string }
  | { readonly _tag: "Conflict"; readonly text: string; readonly elements: number }
  | { readonly _tag: "Fallback"; readonly why: "too_large" | "parse_error" | "timeout" | "unsupported" }

/**
 * What `mergeStructured` needs: the three texts, a parser of their language, the marker labels
 * of a narrowed conflict, and `expired`, asked now and then, true once the file's time budget
 * is spent.
 *
 * @category models
 * @since 0.1.0
 */
export interface StructuredMergeInput {
  readonly base: string
  readonly ours: string
  readonly theirs: string
  readonly parser: SyntaxParser
  readonly labels: MarkerLabels
  readonly expired: () => boolean
}

/**
 * Merges `theirs` onto `ours` relative to `base` by syntax tree.
 *
 * @category combinators
 * @since 0.1.0
 */
export const mergeStructured = (input: StructuredMergeInput): StructuredMerge => {
  const { parser, expired } = input
  if (tooLarge([input.base, input.ours, input.theirs])) return { _tag: "Fallback", why: "too_large" }
  if (expired()) return { _tag: "Fallback", why: "timeout" }
  const texts = [withoutBom(input.base), withoutBom(input.ours), withoutBom(input.theirs)]
  const bom = merge3(String(hasBom(input.base)), String(hasBom(input.ours)), String(hasBom(input.theirs))) === "true"
  // Base in full; ours and theirs, and the result below, as edits of a tree already parsed.
  const trees = parseAll(parser, texts, expired, undefined, true)
  if (trees === undefined) return { _tag: "Fallback", why: "timeout" }
  try {
    if (trees.some((t) => t.root.hasError)) return { _tag: "Fallback", why: "parse_error" }
    const [base, ours, theirs] = trees.map((tree, i): Parsed => ({ text: texts[i]!, root: tree.root }))
    const ctx: Context = { table: tableOf(parser.language), expired, steps: 0, timedOut: false, depth: 0 }
    const sides = { base: base!, ours: ours!, theirs: theirs! }
    const pieces = mergeNode(ctx, sides, base!.root, ours!.root, theirs!.root, undefined)
    if (ctx.timedOut) return { _tag: "Fallback", why: "timeout" }
    if (pieces === undefined) return { _tag: "Fallback", why: "unsupported" }
    const around = (side: Parsed, atEnd: boolean) =>
      atEnd ? side.text.slice(side.root.endIndex) : side.text.slice(0, side.root.startIndex)
    const whole = [
      merge3(around(base!, false), around(ours!, false), around(theirs!, false)),
      ...pieces,
      merge3(around(base!, true), around(ours!, true), around(theirs!, true))
    ]
    const out = rendered(whole, input.labels, dominantEol(ours!.text))
    if (out === undefined) return { _tag: "Fallback", why: "unsupported" }
    const text = (bom ? BOM : "") + out.text
    if (out.conflicts > 0) return { _tag: "Conflict", text, elements: out.conflicts }
    // Accepted only if it parses cleanly and repeats no key neither side repeated.
    const check = parseAll(parser, [out.text], expired, trees[1])
    if (check === undefined) return { _tag: "Fallback", why: "timeout" }
    const clean = !check[0]!.root.hasError
    const repeated = clean ? newDuplicates(parser, { text: out.text, root: check[0]!.root }, ours!.text, theirs!.text, expired) : []
    disposeAll(check)
    if (!clean) return { _tag: "Fallback", why: "unsupported" }
    if (repeated === undefined) return { _tag: "Fallback", why: "timeout" }
    if (repeated.length > 0) return { _tag: "Fallback", why: "unsupported" }
    return { _tag: "Merged", text }
  } finally {
    disposeAll(trees)
  }
}

/**
 * The verdict on a clean two-sided merge: `Sound`, or `Broken` when a key or member name now
 * appears twice in one object, class, interface or enum where neither side had it twice
 * (`duplicate_member`), or the merge no longer parses although all three inputs did
 * (`syntax_broken`); `detail` says where, for the conflict's text.
 *
 * @category models
 * @since 0.1.0
 */
export type StructuralCheck =
  | { readonly _tag: "Sound" }
  | { readonly _tag: "Broken"; readonly reason: "duplicate_member" | "syntax_broken"; readonly detail: string }

/**
 * Checks a clean merge `merged` of `base`, `ours` and `theirs`. An input that does not parse or
 * a spent budget gives `Sound`: the check only refuses what it can show is broken.
 *
 * @category combinators
 * @since 0.1.0
 */
export const checkMerged = (input: {
  readonly base: string
  readonly ours: string
  readonly theirs: string
  readonly merged: string
  readonly parser: SyntaxParser
  readonly expired: () => boolean
}): StructuralCheck => {
  const { parser, expired } = input
  const sound: StructuralCheck = { _tag: "Sound" }
  if (expired() || tooLarge([input.base, input.ours, input.theirs, input.merged])) return sound
  const merged = withoutBom(input.merged)
  const parsed = parseAll(parser, [merged], expired)
  if (parsed === undefined) return sound
  const tree = parsed[0]!
  try {
    // Lines of the BOM-less text are the file's lines: the BOM is no line break.
    if (tree.root.hasError) {
      const inputs = parseAll(parser, [input.base, input.ours, input.theirs].map(withoutBom), expired, undefined, true)
      if (inputs === undefined) return sound
      const allParsed = inputs.every((t) => !t.root.hasError)
      disposeAll(inputs)
      if (!allParsed) return sound
      return {
        _tag: "Broken",
        reason: "syntax_broken",
        detail: `the merged file no longer parses (from line ${lineAt(merged, firstError(tree.root))}), although base, ours and theirs all do`
      }
    }
    const repeated = newDuplicates(parser, { text: merged, root: tree.root }, withoutBom(input.ours), withoutBom(input.theirs), expired)
    if (repeated === undefined || repeated.length === 0) return sound
    return { _tag: "Broken", reason: "duplicate_member", detail: describeDuplicate(repeated[0]!, merged) }
  } finally {
    tree.dispose()
  }
}

// The start of the first node in error: descend into the first child that has one.
const firstError = (root: SyntaxNode): number => {
  let node = root
  for (;;) {
    const child = node.children.find((c) => c.hasError || c.type === "ERROR")
    if (child === undefined) return node.startIndex
    node = child
  }
}
