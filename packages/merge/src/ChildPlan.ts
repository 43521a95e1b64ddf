/**
 * One child's turn in the join (SPEC §6.6 steps 2–3) as a pure decision. From the child's
 * changeset entries, the live state of every path they touch (read under the engine's locks),
 * the child's postimage blobs and preimage bytes from history, it decides whether the child
 * applies (with the engine `Plan` to apply), changes nothing, drifted, cannot be verified,
 * conflicts, or is invalid. A path an earlier sibling changed is merged three-way with
 * `mergeFile` (by syntax tree where a parser of its language is given); every other path must
 * still hold the child's preimage exactly.
 *
 * Does not own reading files or blobs, revalidating the changeset's scope, the text merge
 * (`FileMerge`), applying the plan (the engine's `applyPlan`) nor recording conflicts.
 *
 * @since 0.1.0
 */
import { sameBytes, sha256 } from "@forkjoin/patch/Bytes"
import type { FileState, Plan, PlannedFile, SummaryLine } from "@forkjoin/patch/Plan"
import { byCodeUnit } from "@forkjoin/patch/RelativePath"
import { ChangesetEntry, type ChangesetPreimage } from "@forkjoin/schema/Changeset"
import type { ConflictHunk, ConflictReason } from "@forkjoin/schema/Conflict"
import type { RelativePath, Sha256Hash, TaskId } from "@forkjoin/schema/Ids"
import type { MergedPath } from "@forkjoin/schema/MergeRun"
import type { ChangeKind, ChangeMerge } from "@forkjoin/schema/PatchHistoryRecord"
import * as Schema from "effect/Schema"
import { type FileMergeOutcome, mergeFile, type Side, type SideNames, type SyntaxContext } from "./FileMerge.ts"
import { defaultLabels, type MarkerLabels } from "./TextMerge.ts"
import { liveFiles } from "./internal/liveFiles.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * What `planChild` needs: the child's `entries`; `live`, the state of every entry path and
 * `moveFrom`; `postimage`, the child's blobs by hash; `preimage`, bytes of a preimage by hash
 * from history; `changedBySiblings`, the paths earlier children of this join changed;
 * `labels`, the names on a text conflict's markers (the join's are `joinMarkerLabels`);
 * `syntax`, asked for each path merged three-way when its text changed on both sides: a parser
 * of its language and its time budget, or `undefined` to merge it by lines only.
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildPlanInput {
  readonly entries: ReadonlyArray<ChangesetEntry>
  readonly live: (path: RelativePath) => FileState
  readonly postimage: (hash: Sha256Hash) => Uint8Array | undefined
  readonly preimage: (hash: Sha256Hash) => Uint8Array | undefined
  readonly changedBySiblings: ReadonlySet<RelativePath>
  readonly labels?: MarkerLabels
  readonly syntax?: (path: RelativePath) => SyntaxContext | undefined
}

/**
 * A change held back at `path` (a move's destination, with its `moveFrom`): the three sides
 * (base = the child's preimage, ours = live, theirs = the child's postimage; `undefined` = no
 * file), the overlapping hunks and the conflict text, ready for a `ConflictRecord`.
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildConflict {
  readonly path: RelativePath
  readonly moveFrom?: RelativePath
  readonly reason: ConflictReason
  readonly base: Side
  readonly ours: Side
  readonly theirs: Side
  readonly hunks: ReadonlyArray<ConflictHunk>
  readonly text: string
}

/**
 * The decision for one child, by precedence `Invalid` > `Unverifiable` > `Drift` >
 * `Conflicted` > `Ready`/`Noop`:
 * - `Ready`: apply `plan` (non-empty); `autoMerged` paths were merged with a sibling's change
 *   (`mergedPaths` says how, and each such planned file carries its `merge`), `converged`
 *   paths were dropped because the live file already has this child's change;
 * - `Noop`: nothing left to write;
 * - `Drift` (`baseline_drift`): these paths no longer hold the preimage and no sibling changed them;
 * - `Unverifiable` (`baseline_unverifiable`): a preimage cannot be compared exactly, or an entry is not exportable;
 * - `Conflicted` (`conflicted_unresolved`): real conflicts; nothing of the child is applied;
 * - `Invalid` (`invalid_changeset`): an inconsistent entry or a missing or corrupt postimage blob.
 *
 * @category models
 * @since 0.1.0
 */
export type ChildPlanOutcome =
  | {
    readonly _tag: "Ready"
    readonly plan: Plan
    readonly autoMerged: ReadonlyArray<RelativePath>
    readonly mergedPaths: ReadonlyArray<MergedPath>
    readonly converged: ReadonlyArray<RelativePath>
  }
  | { readonly _tag: "Noop"; readonly converged: ReadonlyArray<RelativePath> }
  | { readonly _tag: "Drift"; readonly paths: ReadonlyArray<RelativePath> }
  | { readonly _tag: "Unverifiable"; readonly paths: ReadonlyArray<RelativePath>; readonly reason: string }
  | { readonly _tag: "Conflicted"; readonly conflicts: ReadonlyArray<ChildConflict> }
  | { readonly _tag: "Invalid"; readonly paths: ReadonlyArray<RelativePath>; readonly reason: string }

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

/**
 * The join's marker labels: `<<<<<<< workspace` (the live file), `||||||| baseline` (what the
 * child started from) and `>>>>>>> <child id>` (the child's version).
 *
 * @category constructors
 * @since 0.1.0
 */
export const joinMarkerLabels = (childId: TaskId): MarkerLabels => ({ ours: "workspace", base: "baseline", theirs: childId })

/**
 * How the join's explanations of a conflict name its sides: the workspace and this child.
 *
 * @category constructors
 * @since 0.1.0
 */
export const joinSideNames: SideNames = {
  ours: "the workspace",
  theirs: "this child",
  oursVersion: "the workspace's version",
  theirsVersion: "this child's version"
}

/**
 * The engine `Plan` of `files` with its Codex-style summary: adds, then modifications (a move
 * names its destination), then deletions.
 *
 * @category constructors
 * @since 0.1.0
 */
export const planOfFiles = (files: ReadonlyArray<PlannedFile>): Plan => {
  const status = (f: PlannedFile): SummaryLine["status"] => (f.kind === "add" ? "A" : f.kind === "delete" ? "D" : "M")
  const lines: Array<SummaryLine> = files.map((f) => ({ status: status(f), path: f.path }))
  return {
    files,
    summary: [...lines.filter((l) => l.status === "A"), ...lines.filter((l) => l.status === "M"), ...lines.filter((l) => l.status === "D")]
  }
}

const isEntry = Schema.is(ChangesetEntry)
// The schema's own consistency rules, as a plain boolean (no narrowing of a typed entry).
const isConsistent = (e: ChangesetEntry): boolean => isEntry(e)

// A move whose content did not change may travel without a blob (the changeset schema's rule).
const isPureMove = (e: ChangesetEntry): boolean =>
  e.kind === "move" && e.preimage !== undefined && e.postimage?.hash === e.preimage.hash

const isFileOrMissing = (s: FileState): boolean => s._tag === "File" || s._tag === "Missing"

const bytesOf = (s: FileState): Uint8Array | undefined => (s._tag === "File" ? s.bytes : undefined)

const sortedUnique = (paths: Iterable<RelativePath>): Array<RelativePath> => [...new Set(paths)].sort(byCodeUnit)

const describeProblems = (problems: ReadonlyArray<{ readonly path: RelativePath; readonly why: string }>): string =>
  problems.map((p) => `'${p.path}': ${p.why}`).join("; ")

// An entry whose sides need a three-way merge, its preimage sides fetched and verified: `base`
// holds the source preimage's bytes (the live source itself when that is clean), `overwritten`
// the bytes a move's destination had.
interface Pending {
  readonly entry: ChangesetEntry
  readonly sourceClean: boolean
  readonly base: Side
  readonly overwritten: Side
}

/**
 * Decides one child of the join; see `ChildPlanOutcome` for the outcomes. Total and pure: `live`,
 * `postimage` and `preimage` are only read.
 *
 * @category constructors
 * @since 0.1.0
 */
export const planChild = (input: ChildPlanInput): ChildPlanOutcome => {
  const invalid: Array<{ path: RelativePath; why: string }> = []
  const unverifiable: Array<{ path: RelativePath; why: string }> = []
  const theirsOf = new Map<ChangesetEntry, Uint8Array>()
  const claimed = new Set<RelativePath>()
  const ready: Array<ChangesetEntry> = []
  for (const e of input.entries) {
    if (!isConsistent(e)) {
      invalid.push({ path: e.path, why: "the entry's kind, sides and paths are inconsistent" })
      continue
    }
    for (const p of e.moveFrom === undefined ? [e.path] : [e.path, e.moveFrom]) {
      if (claimed.has(p)) invalid.push({ path: p, why: "two entries touch this path" })
      claimed.add(p)
    }
    if (!e.exportable) {
      unverifiable.push({ path: e.path, why: `the entry is not exportable (${e.reason?.message ?? "no reason given"})` })
      continue
    }
    ready.push(e)
    if (e.postimage === undefined || isPureMove(e)) continue
    const bytes = input.postimage(e.postimage.hash)
    if (bytes === undefined) invalid.push({ path: e.path, why: `the postimage blob ${e.postimage.hash} is missing` })
    else if (bytes.length !== e.postimage.bytes || sha256(bytes) !== e.postimage.hash) {
      invalid.push({ path: e.path, why: `the postimage blob ${e.postimage.hash} does not hold the bytes its hash names` })
    } else theirsOf.set(e, bytes)
  }
  if (invalid.length > 0) return { _tag: "Invalid", paths: sortedUnique(invalid.map((p) => p.path)), reason: describeProblems(invalid) }

  // Live hashes, once per path: baselines compare content addresses, as the spec says.
  const liveOf = liveFiles(input.live)
  const holds = (p: RelativePath, image: ChangesetPreimage | undefined): boolean => {
    const s = liveOf(p)
    return image === undefined ? s.state._tag === "Missing" : s.hash === image.hash
  }
  const fetchPreimage = (p: RelativePath, image: ChangesetPreimage | undefined): { ok: boolean; bytes: Side } => {
    if (image === undefined) return { ok: true, bytes: undefined }
    const bytes = input.preimage(image.hash)
    if (bytes === undefined || bytes.length !== image.bytes || sha256(bytes) !== image.hash) {
      unverifiable.push({
        path: p,
        why: `an earlier child changed it, and the preimage ${image.hash} needed for a three-way merge is ${
          bytes === undefined ? "unavailable" : "corrupt"
        }`
      })
      return { ok: false, bytes: undefined }
    }
    return { ok: true, bytes }
  }

  const drift: Array<RelativePath> = []
  // In entry order, so the plan lists files in the changeset's (path) order.
  const decided: Array<ChangesetEntry | Pending> = []
  for (const e of ready) {
    const source = e.moveFrom ?? e.path
    const sourceClean = holds(source, e.preimage)
    const destClean = e.kind !== "move" || holds(e.path, e.overwritten)
    if (sourceClean && destClean) {
      decided.push(e)
      continue
    }
    const off = [...(sourceClean ? [] : [source]), ...(destClean ? [] : [e.path])]
    // Only a sibling's change is merged; anything else (or a directory in the way) is drift.
    const drifted = off.filter((p) => !input.changedBySiblings.has(p) || !isFileOrMissing(liveOf(p).state))
    if (drifted.length > 0) {
      drift.push(...drifted)
      continue
    }
    const base = sourceClean ? { ok: true, bytes: bytesOf(liveOf(source).state) } : fetchPreimage(source, e.preimage)
    const overwritten = destClean ? { ok: true, bytes: undefined } : fetchPreimage(e.path, e.overwritten)
    if (base.ok && overwritten.ok) decided.push({ entry: e, sourceClean, base: base.bytes, overwritten: overwritten.bytes })
  }
  if (unverifiable.length > 0) {
    return { _tag: "Unverifiable", paths: sortedUnique(unverifiable.map((p) => p.path)), reason: describeProblems(unverifiable) }
  }
  if (drift.length > 0) return { _tag: "Drift", paths: sortedUnique(drift) }

  const out: Collected = {
    labels: input.labels ?? defaultLabels,
    syntax: input.syntax ?? noSyntax,
    files: [],
    autoMerged: [],
    mergedPaths: [],
    converged: [],
    conflicts: []
  }
  const liveBytes = (p: RelativePath): Side => bytesOf(liveOf(p).state)
  for (const d of decided) {
    if ("entry" in d) mergeEntry(d, liveBytes, theirsOf.get(d.entry), out)
    else planClean(d, liveBytes, theirsOf.get(d), out)
  }
  if (out.conflicts.length > 0) return { _tag: "Conflicted", conflicts: out.conflicts }
  if (out.files.length === 0) return { _tag: "Noop", converged: out.converged }
  return { _tag: "Ready", plan: planOfFiles(out.files), autoMerged: out.autoMerged, mergedPaths: out.mergedPaths, converged: out.converged }
}

const noSyntax = (): undefined => undefined

// What the planning pass collects, in entry order (with the labels its merges render and the
// parsers they may use).
interface Collected {
  readonly labels: MarkerLabels
  readonly syntax: (path: RelativePath) => SyntaxContext | undefined
  readonly files: Array<PlannedFile>
  readonly autoMerged: Array<RelativePath>
  readonly mergedPaths: Array<MergedPath>
  readonly converged: Array<RelativePath>
  readonly conflicts: Array<ChildConflict>
}

// A clean entry: live bytes before, the postimage after (a pure move carries the live source).
const planClean = (e: ChangesetEntry, live: (p: RelativePath) => Side, post: Side, out: Collected): void => {
  const before = live(e.moveFrom ?? e.path)
  const after = e.kind === "delete" ? undefined : isPureMove(e) ? before : post
  // An entry that rewrites a file with its own bytes changes nothing.
  if (e.kind !== "move" && (before === undefined ? after === undefined : after !== undefined && sameBytes(before, after))) return
  const overwritten = e.kind === "move" ? live(e.path) : undefined
  out.files.push({
    kind: e.kind,
    path: e.path,
    ...(e.moveFrom === undefined ? {} : { moveFrom: e.moveFrom }),
    before,
    after,
    ...(overwritten === undefined ? {} : { overwritten })
  })
}

// An entry whose path an earlier sibling changed: three-way merge (base = preimage, ours = live,
// theirs = postimage). A move whose source changed is a conflict; one whose destination changed
// merges that destination.
const mergeEntry = (p: Pending, live: (p: RelativePath) => Side, post: Side, out: Collected): void => {
  const e = p.entry
  const theirs = e.kind === "delete" ? undefined : isPureMove(e) ? p.base : post
  if (e.moveFrom !== undefined) {
    const source = e.moveFrom
    if (p.sourceClean) return mergeMoveDestination(e.path, source, p.base, p.overwritten, live(e.path), theirs, out)
    out.conflicts.push({
      path: e.path,
      moveFrom: source,
      reason: "move_vs_edit",
      base: p.base,
      ours: live(source),
      theirs,
      hunks: [],
      text: `This child moved '${source}' to '${e.path}', and an earlier child changed '${source}': ` +
        "apply the move, keep the live files, or supply the content."
    })
    return
  }
  const ours = live(e.path)
  const outcome = merge(e.path, { base: p.base, ours, theirs }, out)
  switch (outcome._tag) {
    case "Unchanged":
    case "Converged":
      out.converged.push(e.path)
      return
    case "TakeTheirs":
      return pushMerged(out, e.path, ours, outcome.bytes, e.kind === "update" || e.kind === "replace" ? e.kind : "replace")
    case "AutoMerged":
      return pushMerged(out, e.path, ours, outcome.bytes, "update", autoMerged(out, e.path, outcome))
    case "Conflict":
      out.conflicts.push({ path: e.path, reason: outcome.reason, base: p.base, ours, theirs, hunks: outcome.hunks, text: outcome.text })
      return
  }
}

// The three-way merge of one path, by syntax when both sides edited text of a known language.
const merge = (path: RelativePath, sides: { readonly base: Side; readonly ours: Side; readonly theirs: Side }, out: Collected): FileMergeOutcome => {
  const { base, ours, theirs } = sides
  // Only text edited on both sides may need a parser: ask for none otherwise (no grammar loads).
  const twoSided = base !== undefined && ours !== undefined && theirs !== undefined && !sameBytes(base, ours) &&
    !sameBytes(base, theirs) && !sameBytes(ours, theirs)
  return mergeFile(sides, out.labels, { names: joinSideNames, syntax: twoSided ? out.syntax(path) : undefined })
}

// Notes an auto-merged path and how it was merged; the `merge` its planned file records.
const autoMerged = (out: Collected, path: RelativePath, outcome: Extract<FileMergeOutcome, { _tag: "AutoMerged" }>): ChangeMerge => {
  const how: ChangeMerge = { method: outcome.method, ...(outcome.language === undefined ? {} : { language: outcome.language }) }
  out.autoMerged.push(path)
  out.mergedPaths.push({ path, ...how })
  return how
}

// Plans `ours` → `result` at `path`, with the kind its sides allow; equal sides write nothing.
const pushMerged = (
  out: Collected,
  path: RelativePath,
  ours: Side,
  result: Side,
  inPlace: "update" | "replace",
  merge?: ChangeMerge
): void => {
  if (ours === undefined ? result === undefined : result !== undefined && sameBytes(ours, result)) {
    out.converged.push(path)
    return
  }
  const kind: ChangeKind = ours === undefined ? "add" : result === undefined ? "delete" : inPlace
  out.files.push({ kind, path, before: ours, after: result, ...(merge === undefined ? {} : { merge }) })
}

// A move with a clean source onto a destination an earlier sibling changed: the destination
// is merged (base = what the child overwrote, theirs = the moved content), and the source
// still goes away.
const mergeMoveDestination = (
  path: RelativePath,
  source: RelativePath,
  sourceBytes: Side,
  base: Side,
  ours: Side,
  theirs: Side,
  out: Collected
): void => {
  const outcome = merge(path, { base, ours, theirs }, out)
  if (outcome._tag === "Conflict") {
    out.conflicts.push({ path, moveFrom: source, reason: outcome.reason, base, ours, theirs, hunks: outcome.hunks, text: outcome.text })
    return
  }
  const result = outcome._tag === "TakeTheirs" || outcome._tag === "AutoMerged" ? outcome.bytes : ours
  const how = outcome._tag === "AutoMerged" ? { merge: autoMerged(out, path, outcome) } : {}
  if (result !== undefined && (ours === undefined || !sameBytes(ours, result))) {
    const overwritten = ours === undefined ? {} : { overwritten: ours }
    out.files.push({ kind: "move", path, moveFrom: source, before: sourceBytes, after: result, ...overwritten, ...how })
    return
  }
  // The destination already holds the result (or ends absent): only the source's removal is left.
  if (outcome._tag !== "AutoMerged") out.converged.push(path)
  out.files.push({ kind: "delete", path: source, before: sourceBytes, after: undefined })
  if (result === undefined && ours !== undefined) out.files.push({ kind: "delete", path, before: ours, after: undefined })
}
