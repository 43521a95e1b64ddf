/**
 * The three-way merge of one path's content (SPEC §6.6 step 3): base = the child's preimage,
 * ours = the live file, theirs = the child's postimage; `undefined` means no file. Decides
 * which case a path is in (unchanged, one side, converged, deleted on one side, added on both,
 * binary) and hands text edited on both sides to `TextMerge`; given a parser of the file's
 * language, a line merge that conflicts goes to the syntax-aware merge (`StructuredMerge`), and
 * a clean one must pass its structural checks. Does not own line merging, merging by syntax,
 * conflict records or writing the result. Pure.
 *
 * @since 0.1.0
 */
import { sameBytes } from "@forkjoin/patch/Bytes"
import type { ConflictHunk, ConflictReason } from "@forkjoin/schema/Conflict"
import type { MergeMethod } from "@forkjoin/schema/PatchHistoryRecord"
import { textSide } from "./internal/lines.ts"
import { checkMerged, mergeStructured, type StructuralCheck, type StructuredMerge } from "./StructuredMerge.ts"
import type { Language, SyntaxParser } from "./Syntax.ts"
import { defaultLabels, type MarkerLabels, mergeText, takeTheirs, type TextMerge } from "./TextMerge.ts"

/**
 * One side of a file merge: its bytes, or `undefined` when there is no file.
 *
 * @category models
 * @since 0.1.0
 */
export type Side = Uint8Array | undefined

/**
 * What merging one path gives:
 * - `Unchanged`: theirs equals base, nothing to write;
 * - `TakeTheirs`: ours equals base, theirs is the result (`undefined` deletes);
 * - `Converged`: ours equals theirs, nothing to write;
 * - `AutoMerged`: both changed and the result `bytes` merges them: by lines (`method: "line"`,
 *   hunks that do not overlap) or by syntax tree (`"structured"`, with the `language` parsed);
 * - `Conflict`: a real conflict, held back.
 *
 * @category models
 * @since 0.1.0
 */
export type FileMergeOutcome =
  | { readonly _tag: "Unchanged" }
  | { readonly _tag: "TakeTheirs"; readonly bytes: Side }
  | { readonly _tag: "Converged" }
  | { readonly _tag: "AutoMerged"; readonly bytes: Uint8Array; readonly method: MergeMethod; readonly language?: Language }
  | {
    readonly _tag: "Conflict"
    readonly reason: ConflictReason
    readonly hunks: ReadonlyArray<ConflictHunk>
    readonly text: string
  }

/**
 * A parser of the file's language and the file's time budget (`expired`, asked now and then,
 * true once it is spent): what lets `mergeFile` merge by syntax and check a line merge. The
 * budget bounds the merge by syntax only; the checks always run to the end.
 *
 * @category models
 * @since 0.1.0
 */
export interface SyntaxContext {
  readonly parser: SyntaxParser
  readonly expired: () => boolean
}

/**
 * How long merging one file by syntax may take unless the caller says otherwise: 2 s.
 *
 * @category constructors
 * @since 0.1.0
 */
export const defaultSyntaxBudgetMs = 2_000

/**
 * The `SyntaxContext` of `parser` for one file whose budget (`budgetMs`, default
 * `defaultSyntaxBudgetMs`) starts now, on a clock that reads milliseconds (`nowMillis`): call it
 * when that file's merge starts.
 *
 * @category constructors
 * @since 0.1.0
 */
export const syntaxContext = (parser: SyntaxParser, nowMillis: () => number, budgetMs: number = defaultSyntaxBudgetMs): SyntaxContext => {
  const start = nowMillis()
  return { parser, expired: () => nowMillis() - start >= budgetMs }
}

/**
 * How the explanation of a conflict without hunks names the sides: each as the subject of a
 * sentence (`ours`, `theirs`) and as what a resolution keeps (`oursVersion`, `theirsVersion`).
 *
 * @category models
 * @since 0.1.0
 */
export interface SideNames {
  readonly ours: string
  readonly theirs: string
  readonly oursVersion: string
  readonly theirsVersion: string
}

/**
 * The names when the caller gives none: git's words, `ours` and `theirs`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const defaultSideNames: SideNames = { ours: "ours", theirs: "theirs", oursVersion: "ours", theirsVersion: "theirs" }

/**
 * What `mergeFile` may use beyond the sides: `syntax`, to merge by syntax tree and check clean
 * merges (without it, text is merged by lines only), and `names`, the sides' names in the
 * explanation of a conflict without hunks.
 *
 * @category models
 * @since 0.1.0
 */
export interface MergeFileOptions {
  readonly syntax?: SyntaxContext | undefined
  readonly names?: SideNames | undefined
}

/** One-line explanations of the conflicts that have no hunks: what each side did, what to do. */
const explain = (n: SideNames) => ({
  binary: `${n.ours} and ${n.theirs} both changed this file and a version of it is binary, so it cannot be merged by lines: ` +
    `apply to take ${n.theirsVersion}, discard to keep ${n.oursVersion}, or supply content.`,
  delete_vs_edit: `${n.ours} deleted this file and ${n.theirs} edited it: apply to restore ${n.theirsVersion}, discard to keep it deleted, or supply content.`,
  edit_vs_delete: `${n.ours} edited this file and ${n.theirs} deleted it: apply to delete it, discard to keep ${n.oursVersion}, or supply content.`,
  addedBinary: `${n.ours} and ${n.theirs} both added this file with different binary content: apply to take ${n.theirsVersion}, ` +
    `discard to keep ${n.oursVersion}, or supply content.`,
  addedNoHunk: `${n.ours} and ${n.theirs} both added this file with different bytes but no differing lines (one is empty, or only ` +
    `the byte order mark differs): apply to take ${n.theirsVersion}, discard to keep ${n.oursVersion}, or supply content.`
})

// A checker's detail goes on the explanation's one line.
const oneLine = (s: string): string => s.replace(/\s+/g, " ").trim()

/** Why a clean line merge is held: what the check found, and what each resolution does. */
const explainBroken = (n: SideNames, broken: Extract<StructuralCheck, { _tag: "Broken" }>, language: Language): string =>
  `${n.ours} and ${n.theirs} changed this file in different places, but their changes merged by lines ` +
  (broken.reason === "duplicate_member" ? "name a key or member twice" : `no longer parse as ${language}`) +
  ` (${oneLine(broken.detail)}), and merging them by syntax did not settle it: ` +
  `apply to take ${n.theirsVersion} whole, discard to keep ${n.oursVersion}, or supply content.`

const conflict = (reason: ConflictReason, hunks: ReadonlyArray<ConflictHunk>, text: string): FileMergeOutcome => ({
  _tag: "Conflict",
  reason,
  hunks,
  text
})

const same = (a: Side, b: Side): boolean => a === undefined ? b === undefined : b !== undefined && sameBytes(a, b)

const empty = new Uint8Array(0)
const encoder = new TextEncoder()
const BOM = "\uFEFF"

// A side as the string a parser reads: UTF-8 after its byte order mark (the bit apart).
const decoded = (bytes: Uint8Array): { readonly bom: boolean; readonly text: string } | undefined => {
  const side = textSide(bytes)
  return side === undefined ? undefined : { bom: side.bom, text: side.lines.join("") }
}

// The merge by syntax, a throw (a parser fault) taken as "not applicable": a merge never crashes.
const structured = (
  texts: { readonly base: string; readonly ours: string; readonly theirs: string },
  syntax: SyntaxContext,
  labels: MarkerLabels
): StructuredMerge => {
  try {
    return mergeStructured({ ...texts, parser: syntax.parser, labels, expired: syntax.expired })
  } catch {
    return { _tag: "Fallback", why: "unsupported" }
  }
}

// The structural checks of a clean merge; a parser fault proves nothing broken. They run to
// the end whatever the time budget says (bounded by the inputs' size instead): a budget spent
// on a loaded machine must not turn a repeated key into a clean merge, nor make the answer
// depend on the machine's load.
const never = (): boolean => false
const checked = (
  texts: { readonly base: string; readonly ours: string; readonly theirs: string; readonly merged: string },
  syntax: SyntaxContext
): StructuralCheck => {
  try {
    return checkMerged({ ...texts, parser: syntax.parser, expired: never })
  } catch {
    return { _tag: "Sound" }
  }
}

// Text edited on both sides, with a parser: a conflict is merged by syntax if it can be; a
// clean merge that fails the checks is merged by syntax, else held with the check's reason.
const mergeWithSyntax = (
  sides: { readonly base: Uint8Array; readonly ours: Uint8Array; readonly theirs: Uint8Array },
  line: Extract<TextMerge, { _tag: "Merged" | "Conflict" }>,
  syntax: SyntaxContext,
  labels: MarkerLabels,
  names: SideNames
): FileMergeOutcome => {
  const lineResult: FileMergeOutcome = line._tag === "Merged"
    ? { _tag: "AutoMerged", bytes: line.bytes, method: "line" }
    : conflict("overlapping_edits", line.hunks, line.text)
  const b = decoded(sides.base)
  const o = decoded(sides.ours)
  const t = decoded(sides.theirs)
  if (b === undefined || o === undefined || t === undefined) return lineResult
  const texts = { base: b.text, ours: o.text, theirs: t.text }
  const language = syntax.parser.language
  let broken: Extract<StructuralCheck, { _tag: "Broken" }> | undefined
  if (line._tag === "Merged") {
    const merged = decoded(line.bytes)
    if (merged === undefined) return lineResult
    const check = checked({ ...texts, merged: merged.text }, syntax)
    if (check._tag === "Sound") return lineResult
    broken = check
  }
  const tree = structured(texts, syntax, labels)
  if (tree._tag === "Merged") {
    // The byte order mark merges as one bit, as in the line merge.
    const bom = o.bom === b.bom ? t.bom : o.bom
    return { _tag: "AutoMerged", bytes: encoder.encode(bom ? BOM + tree.text : tree.text), method: "structured", language }
  }
  // A narrowed structured conflict keeps the line merge's hunks and markers, so the text shows
  // what `apply` takes (adrs/20261202-merge-methods.md).
  return broken === undefined ? lineResult : conflict(broken.reason, [], explainBroken(names, broken, language))
}

/**
 * Merges `theirs` onto `ours` relative to `base`. Total: every input gives an outcome. Text
 * edited on both sides goes through `TextMerge.mergeText`; with `options.syntax`, a conflict
 * there is merged by syntax tree when it can be, and a clean merge that names a key or member
 * twice or no longer parses is merged by syntax or held (`duplicate_member`, `syntax_broken`).
 * An add on both sides with different content is always a conflict (its hunks come from
 * merging against an empty base). `labels` name the sides on a text conflict's markers.
 *
 * @category combinators
 * @since 0.1.0
 */
export const mergeFile = (
  sides: { readonly base: Side; readonly ours: Side; readonly theirs: Side },
  labels: MarkerLabels = defaultLabels,
  options: MergeFileOptions = {}
): FileMergeOutcome => {
  const { base, ours, theirs } = sides
  const names = options.names ?? defaultSideNames
  if (same(theirs, base)) return { _tag: "Unchanged" }
  if (same(ours, base)) return { _tag: "TakeTheirs", bytes: theirs }
  // Also add-vs-add with equal bytes and delete-vs-delete.
  if (same(ours, theirs)) return { _tag: "Converged" }
  if (ours === undefined) return conflict("delete_vs_edit", [], explain(names).delete_vs_edit)
  if (theirs === undefined) return conflict("edit_vs_delete", [], explain(names).edit_vs_delete)
  if (base === undefined) {
    const added = mergeText(empty, ours, theirs, labels)
    if (added._tag === "Conflict") return conflict("add_vs_add", added.hunks, added.text)
    if (added._tag === "Binary") return conflict("add_vs_add", [], explain(names).addedBinary)
    // No overlapping lines against an empty base: one side has no lines, or only the BOM differs.
    return conflict("add_vs_add", [], explain(names).addedNoHunk)
  }
  const merged = mergeText(base, ours, theirs, labels)
  if (merged._tag === "Binary") return conflict("binary", [], explain(names).binary)
  if (options.syntax !== undefined) return mergeWithSyntax({ base, ours, theirs }, merged, options.syntax, labels, names)
  return merged._tag === "Merged"
    ? { _tag: "AutoMerged", bytes: merged.bytes, method: "line" }
    : conflict("overlapping_edits", merged.hunks, merged.text)
}

/**
 * Resolving a text conflict with the child's side, onto the file as it is now:
 * - `Applied`: `bytes` is `ours` with the child's side of each conflicting region and every
 *   region only the child changed; regions only `ours` changed stay as they are;
 * - `Stale`: the live file no longer allows that: it is gone or binary, or a region now
 *   conflicts that is not one of the `held` hunks (it changed inside a conflict since).
 *
 * @category models
 * @since 0.1.0
 */
export type TheirsApplied =
  | { readonly _tag: "Applied"; readonly bytes: Uint8Array }
  | { readonly _tag: "Stale"; readonly why: string }

const sameLines = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): boolean => a.length === b.length && a.every((x, i) => x === b[i])

const sameHunk = (a: ConflictHunk, b: ConflictHunk): boolean =>
  a.baseStart === b.baseStart && sameLines(a.base, b.base) && sameLines(a.ours, b.ours) && sameLines(a.theirs, b.theirs)

/**
 * Takes theirs in the conflicting hunks only (base = the child's preimage, ours = the live
 * file, theirs = the child's postimage): what `apply` means for a conflict with hunks. Every
 * region that conflicts now must be one of `held` (the hunks the conflict was recorded with),
 * so the user's choice covers exactly what they saw. Pure.
 *
 * @category combinators
 * @since 0.1.0
 */
export const applyTheirsHunks = (
  sides: { readonly base: Side; readonly ours: Side; readonly theirs: Side },
  held: ReadonlyArray<ConflictHunk>
): TheirsApplied => {
  const { base, ours, theirs } = sides
  if (ours === undefined) return { _tag: "Stale", why: "the file was deleted since" }
  if (base === undefined || theirs === undefined) return { _tag: "Stale", why: "the conflict has no text on both sides to merge" }
  const r = takeTheirs(base, ours, theirs)
  if (r._tag === "Binary") return { _tag: "Stale", why: "the file is no longer text" }
  const unseen = r.taken.find((h) => !held.some((k) => sameHunk(h, k)))
  if (unseen !== undefined) return { _tag: "Stale", why: `the live file changed inside a conflicting region (near line ${unseen.baseStart}) since the conflict was recorded` }
  return { _tag: "Applied", bytes: r.bytes }
}
