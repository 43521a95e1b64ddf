/**
 * The three-way merge of one path's content (SPEC §6.6 step 3): base = the child's preimage,
 * ours = the live file, theirs = the child's postimage; `undefined` means no file. Decides
 * which case a path is in (unchanged, one side, converged, deleted on one side, added on both,
 * binary) and hands text edited on both sides to `TextMerge`. Does not own line merging,
 * conflict records or writing the result. Pure.
 *
 * @since 0.1.0
 */
import { sameBytes } from "@forkjoin/patch/Bytes"
import type { ConflictHunk, ConflictReason } from "@forkjoin/schema/Conflict"
import { defaultLabels, type MarkerLabels, mergeText, takeTheirs } from "./TextMerge.ts"

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
 * - `AutoMerged`: both changed, in hunks that do not overlap; `bytes` is the result;
 * - `Conflict`: a real conflict, held back.
 *
 * @category models
 * @since 0.1.0
 */
export type FileMergeOutcome =
  | { readonly _tag: "Unchanged" }
  | { readonly _tag: "TakeTheirs"; readonly bytes: Side }
  | { readonly _tag: "Converged" }
  | { readonly _tag: "AutoMerged"; readonly bytes: Uint8Array }
  | {
    readonly _tag: "Conflict"
    readonly reason: ConflictReason
    readonly hunks: ReadonlyArray<ConflictHunk>
    readonly text: string
  }

/** One-line explanations of the conflicts that have no hunks: what each side did, what to do. */
const explain = {
  binary: "ours and theirs both changed this file and a version of it is binary, so it cannot be merged by lines: apply to take theirs, discard to keep ours, or supply content.",
  delete_vs_edit: "ours deleted this file and theirs edited it: apply to restore theirs, discard to keep it deleted, or supply content.",
  edit_vs_delete: "ours edited this file and theirs deleted it: apply to delete it, discard to keep ours, or supply content.",
  addedBinary: "ours and theirs both added this file with different binary content: apply to take theirs, discard to keep ours, or supply content.",
  addedNoHunk: "ours and theirs both added this file with different bytes but no differing lines (one is empty, or only the byte order mark differs): apply to take theirs, discard to keep ours, or supply content."
} as const

const conflict = (reason: ConflictReason, hunks: ReadonlyArray<ConflictHunk>, text: string): FileMergeOutcome => ({
  _tag: "Conflict",
  reason,
  hunks,
  text
})

const same = (a: Side, b: Side): boolean => a === undefined ? b === undefined : b !== undefined && sameBytes(a, b)

const empty = new Uint8Array(0)

/**
 * Merges `theirs` onto `ours` relative to `base`. Total: every input gives an outcome. Text
 * edited on both sides goes through `TextMerge.mergeText`; an add on both sides with different
 * content is always a conflict (its hunks come from merging against an empty base). `labels`
 * name the sides on a text conflict's markers.
 *
 * @category combinators
 * @since 0.1.0
 */
export const mergeFile = (
  sides: { readonly base: Side; readonly ours: Side; readonly theirs: Side },
  labels: MarkerLabels = defaultLabels
): FileMergeOutcome => {
  const { base, ours, theirs } = sides
  if (same(theirs, base)) return { _tag: "Unchanged" }
  if (same(ours, base)) return { _tag: "TakeTheirs", bytes: theirs }
  // Also add-vs-add with equal bytes and delete-vs-delete.
  if (same(ours, theirs)) return { _tag: "Converged" }
  if (ours === undefined) return conflict("delete_vs_edit", [], explain.delete_vs_edit)
  if (theirs === undefined) return conflict("edit_vs_delete", [], explain.edit_vs_delete)
  if (base === undefined) {
    const added = mergeText(empty, ours, theirs, labels)
    if (added._tag === "Conflict") return conflict("add_vs_add", added.hunks, added.text)
    if (added._tag === "Binary") return conflict("add_vs_add", [], explain.addedBinary)
    // No overlapping lines against an empty base: one side has no lines, or only the BOM differs.
    return conflict("add_vs_add", [], explain.addedNoHunk)
  }
  const merged = mergeText(base, ours, theirs, labels)
  switch (merged._tag) {
    case "Merged":
      return { _tag: "AutoMerged", bytes: merged.bytes }
    case "Conflict":
      return conflict("overlapping_edits", merged.hunks, merged.text)
    case "Binary":
      return conflict("binary", [], explain.binary)
  }
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
