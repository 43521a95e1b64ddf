/**
 * The three-way merge of one file's text (SPEC §6.6 step 3): base = the child's preimage,
 * ours = the live bytes, theirs = the child's postimage. Line-based diff3 whose result is
 * byte-exact: every line keeps its own terminator, a UTF-8 BOM is merged as one bit, the final
 * newline is part of the last line. Overlapping edits are a value (hunks plus rendered
 * markers), never an error. Does not own absent sides or what a binary or deleted file means
 * for the join (`FileMerge`), nor the diff3 library adapter (`internal/diff3.ts`). Pure.
 *
 * @since 0.1.0
 */
import type { ConflictHunk } from "@forkjoin/schema/Conflict"
import { anchored, nodeDiff3 } from "./internal/diff3.ts"
import { defaultLabels as libraryLabels, mergeTextWith, takeTheirsWith } from "./internal/textMerge.ts"

/**
 * The words after a conflict's markers: `<<<<<<< ours`, `||||||| base`, `>>>>>>> theirs`. A
 * label is kept on its marker's line: line breaks and other control characters in it become
 * spaces; an empty label leaves the bare marker.
 *
 * @category models
 * @since 0.1.0
 */
export interface MarkerLabels {
  readonly ours: string
  readonly base: string
  readonly theirs: string
}

/**
 * The labels when the caller gives none: `ours`, `base`, `theirs` (git's words).
 *
 * @category constructors
 * @since 0.1.0
 */
export const defaultLabels: MarkerLabels = libraryLabels

/**
 * What merging three texts gives:
 * - `Merged`: the result bytes; `bothChanged` is false when one side equals the base (the
 *   result is then the other side, byte for byte);
 * - `Conflict`: edits that overlap; `hunks` are the overlapping regions (1-based base lines),
 *   `text` the whole file with git-style `<<<<<<< <ours>` / `||||||| <base>` / `=======` /
 *   `>>>>>>> <theirs>` markers (the `MarkerLabels`) ending with the file's dominant line ending;
 * - `Binary`: some side is not text (a NUL byte, or not UTF-8), so nothing was merged.
 *
 * @category models
 * @since 0.1.0
 */
export type TextMerge =
  | { readonly _tag: "Merged"; readonly bytes: Uint8Array; readonly bothChanged: boolean }
  | { readonly _tag: "Conflict"; readonly hunks: ReadonlyArray<ConflictHunk>; readonly text: string }
  | { readonly _tag: "Binary" }

/**
 * Merges `theirs` onto `ours` relative to `base`. A side equal to the base yields the other
 * side exactly (binary or not); identical changes converge. `labels` name the sides on a
 * conflict's markers (default `defaultLabels`).
 *
 * @category combinators
 * @since 0.1.0
 */
export const mergeText: (base: Uint8Array, ours: Uint8Array, theirs: Uint8Array, labels?: MarkerLabels) => TextMerge = mergeTextWith(
  anchored(nodeDiff3)
)

/**
 * What taking theirs in every conflict gives: `Merged` with the result bytes and the
 * conflicting regions that were settled by theirs (`taken`, as `ConflictHunk`s: none when
 * the sides did not overlap), or `Binary` when some side is not text.
 *
 * @category models
 * @since 0.1.0
 */
export type TheirsTaken =
  | { readonly _tag: "Merged"; readonly bytes: Uint8Array; readonly taken: ReadonlyArray<ConflictHunk> }
  | { readonly _tag: "Binary" }

/**
 * The three-way merge of `mergeText` where every region both sides changed differently takes
 * theirs: what resolving a text conflict with the child's side does. Regions only ours changed
 * keep ours, regions only theirs changed take theirs, byte for byte.
 *
 * @category combinators
 * @since 0.1.0
 */
export const takeTheirs: (base: Uint8Array, ours: Uint8Array, theirs: Uint8Array) => TheirsTaken = takeTheirsWith(
  anchored(nodeDiff3)
)
