/**
 * The restore plan of `rollback_transaction` (SPEC §6.8) as a pure decision: from one
 * transaction's file changes (in commit order), the live state of the paths they touched and
 * the stored blobs, it plans the engine transaction that puts every path back as it was before
 * the transaction. A path that changed since (drift) is merged three-way with the join's own
 * `mergeFile` (base = what the transaction left, ours = the live file, theirs = what was there
 * before): later work elsewhere in the file stays. Where that merge is not clean the paths are
 * `Conflicted`; with `strict`, any drift refuses (`rollback_drift`) as before. Given the
 * resolutions of a held rollback's conflicts, it plans the whole rollback with them.
 *
 * Several changes of one path fold into the transaction's net effect (first before, last
 * after) with the shared `NetChange` fold. Does not own reading history, files or blobs,
 * storing conflicts, applying the plan (the engine re-checks every `before` under its lock)
 * nor file modes.
 *
 * @since 0.1.0
 */
import { sameBytes, sha256 } from "@forkjoin/patch/Bytes"
import * as NetChange from "@forkjoin/patch/NetChange"
import type { FileState, Plan, PlannedFile } from "@forkjoin/patch/Plan"
import { byCodeUnit } from "@forkjoin/patch/RelativePath"
import type { ConflictHunk } from "@forkjoin/schema/Conflict"
import type { RelativePath, Sha256Hash, TransactionId } from "@forkjoin/schema/Ids"
import type { ChangeMerge, FileChange } from "@forkjoin/schema/PatchHistoryRecord"
import type { Snapshot } from "@forkjoin/schema/Snapshot"
import { type ChildConflict, planOfFiles } from "./ChildPlan.ts"
import { applyTheirsHunks, mergeFile, type SideNames, type Side, type SyntaxContext } from "./FileMerge.ts"
import { liveFiles } from "./internal/liveFiles.ts"
import type { MarkerLabels } from "./TextMerge.ts"

/**
 * How a held path of the rollback was resolved, for planning the whole rollback:
 * - `apply`: with `hunks`, the earlier side of those conflicting hunks onto the live file;
 *   without, the earlier content whole, provided the live file still hashes to `ours`;
 * - `discard`: the live file stays;
 * - `content`: `bytes`, provided the live file still hashes to `ours` (`undefined`: no file).
 *
 * @category models
 * @since 0.1.0
 */
export type RollbackResolution =
  | { readonly kind: "apply"; readonly hunks: ReadonlyArray<ConflictHunk>; readonly ours: Sha256Hash | undefined }
  | { readonly kind: "discard" }
  | { readonly kind: "content"; readonly bytes: Uint8Array; readonly ours: Sha256Hash | undefined }

/**
 * What `planRollback` needs: the transaction's `changes` in commit order, `live`, the state
 * of every path and `moveFrom` they name, and `blob`, stored bytes by hash. `strict` refuses
 * any drift instead of merging; `labels` name the sides on conflict markers
 * (`rollbackMarkerLabels`); `syntax`, a path's parser for the structured merge (without it,
 * text is merged by lines); `resolved` holds the resolutions of a held rollback, by path.
 *
 * @category models
 * @since 0.1.0
 */
export interface RollbackPlanInput {
  readonly changes: ReadonlyArray<FileChange>
  readonly live: (path: RelativePath) => FileState
  readonly blob: (hash: Sha256Hash) => Uint8Array | undefined
  readonly strict?: boolean
  readonly labels?: MarkerLabels
  readonly syntax?: (path: RelativePath) => SyntaxContext | undefined
  readonly resolved?: ReadonlyMap<RelativePath, RollbackResolution>
}

/**
 * A path of the rollback that does not merge: the three sides (base = what the transaction
 * left, ours = live, theirs = what was there before; `undefined` = no file), the overlapping
 * hunks and the conflict text, ready for a rollback's `ConflictRecord`.
 *
 * @category models
 * @since 0.1.0
 */
export type RollbackConflict = Omit<ChildConflict, "moveFrom">

/**
 * The decision, by precedence:
 * - `Unavailable`: a change lacks a snapshot it needs (an inexact record; `paths` names them),
 *   or a blob to restore or merge is missing or corrupt (`hashes`, with their `paths`);
 * - `Drift` (`rollback_drift`): these paths no longer hold the transaction's postimage (or
 *   absence) and `strict` was asked, or they cannot be merged (a move, a directory);
 * - `Conflicted`: nothing may be written until each of `conflicts` is resolved;
 * - `Stale` (`conflict_stale`): a resolution no longer fits the live file at `path`;
 * - `Ready`: apply `plan`; `merged` names the paths merged with later work. The plan is empty
 *   when the transaction's net effect is nothing or every path already holds its earlier content.
 *
 * @category models
 * @since 0.1.0
 */
export type RollbackPlanOutcome =
  | { readonly _tag: "Ready"; readonly plan: Plan; readonly merged: ReadonlyArray<RelativePath> }
  | { readonly _tag: "Drift"; readonly paths: ReadonlyArray<RelativePath> }
  | { readonly _tag: "Conflicted"; readonly conflicts: ReadonlyArray<RollbackConflict> }
  | { readonly _tag: "Stale"; readonly path: RelativePath; readonly why: string }
  | { readonly _tag: "Unavailable"; readonly hashes: ReadonlyArray<Sha256Hash>; readonly paths: ReadonlyArray<RelativePath> }

const sameContent = (a: Snapshot, b: Snapshot): boolean => a.hash === b.hash

const sortedUnique = <A extends string>(xs: Iterable<A>): Array<A> => [...new Set(xs)].sort(byCodeUnit)

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/

/**
 * A rollback's marker labels: `<<<<<<< workspace` (the live file), `||||||| rolled back <tx>`
 * (what the transaction left) and `>>>>>>> before <tx>` (what was there before it), the
 * transaction id's first UUID cut to 8 digits as text output shows it.
 *
 * @category constructors
 * @since 0.1.0
 */
export const rollbackMarkerLabels = (transactionId: TransactionId): MarkerLabels => {
  const short = transactionId.replace(UUID, (u) => u.slice(0, 8))
  return { ours: "workspace", base: `rolled back ${short}`, theirs: `before ${short}` }
}

/**
 * How a conflict without hunks names the sides: the file as later work left it, and the
 * rollback's content (what the path held before the transaction).
 *
 * @category constructors
 * @since 0.1.0
 */
export const rollbackSideNames: SideNames = {
  ours: "later work",
  theirs: "the rollback",
  oursVersion: "the file as it is now",
  theirsVersion: "the content from before the transaction"
}

/**
 * The planned write that takes `path` from `now` to `after`, with how it was merged; none when
 * `after` is what the path holds now (a merge or resolution that gives back the live bytes
 * changes nothing, and is neither written nor recorded as a change).
 */
const writeOf = (path: RelativePath, now: Side, after: Side, merge?: ChangeMerge): PlannedFile | undefined => {
  if (now === undefined ? after === undefined : after !== undefined && sameBytes(now, after)) return undefined
  const kind = now === undefined ? "add" : after === undefined ? "delete" : "update"
  return { kind, path, before: now, after, ...(merge === undefined ? {} : { merge }) }
}

/**
 * Plans the undo of one transaction; see `RollbackPlanOutcome`. Paths the transaction left as
 * they were are neither checked nor written. A move goes back as a move; when it had replaced a
 * destination, that file is restored in the same plan. A path that drifted is merged, unless
 * `strict`; a move that drifted is never merged.
 *
 * @category constructors
 * @since 0.1.0
 */
export const planRollback = (input: RollbackPlanInput): RollbackPlanOutcome => {
  const unknown: Array<RelativePath> = []
  for (const c of input.changes) {
    if (c.kind !== "add" && c.before === undefined) unknown.push(c.moveFrom ?? c.path)
    if (c.kind !== "delete" && c.after === undefined) unknown.push(c.path)
  }
  if (unknown.length > 0) return { _tag: "Unavailable", hashes: [], paths: sortedUnique(unknown) }

  const folded = NetChange.fold(input.changes.map((c, tag) => ({ ...c, tag })), "path")
  const net = NetChange.pathChanges(folded, sameContent, { moves: true, replace: true })

  const liveOf = liveFiles(input.live)
  const holds = (p: RelativePath, post: Snapshot | undefined): boolean => {
    const s = liveOf(p)
    return post === undefined ? s.state._tag === "Missing" : s.hash === post.hash
  }
  const drifted = new Set<RelativePath>()
  const refused: Array<RelativePath> = []
  const missingHashes: Array<Sha256Hash> = []
  const missingPaths: Array<RelativePath> = []
  const fetched = new Map<Sha256Hash, Uint8Array>()
  const fetch = (p: RelativePath, image: Snapshot | undefined) => {
    if (image === undefined || fetched.has(image.hash)) return
    const bytes = input.blob(image.hash)
    if (bytes === undefined || bytes.length !== image.bytes || sha256(bytes) !== image.hash) {
      missingHashes.push(image.hash)
      missingPaths.push(p)
    } else fetched.set(image.hash, bytes)
  }
  for (const c of net) {
    if (c.moveFrom !== undefined) {
      // A move is undone whole or not at all: its two paths cannot be merged apart.
      if (!holds(c.path, c.after)) refused.push(c.path)
      if (!holds(c.moveFrom, undefined)) refused.push(c.moveFrom)
      fetch(c.moveFrom, c.before)
      fetch(c.path, c.overwritten)
      continue
    }
    fetch(c.path, c.before)
    if (holds(c.path, c.after)) continue
    const kind = liveOf(c.path).state._tag
    if (input.strict === true || kind === "Directory" || kind === "Other") refused.push(c.path)
    else {
      drifted.add(c.path)
      // The merge's base: only a drifted path needs the postimage's bytes.
      fetch(c.path, c.after)
    }
  }
  if (refused.length > 0 || (input.strict === true && drifted.size > 0)) return { _tag: "Drift", paths: sortedUnique([...refused, ...drifted]) }
  if (missingHashes.length > 0) return { _tag: "Unavailable", hashes: sortedUnique(missingHashes), paths: sortedUnique(missingPaths) }

  const liveBytes = (p: RelativePath): Uint8Array | undefined => {
    const s = liveOf(p).state
    return s._tag === "File" ? s.bytes : undefined
  }
  const bytesOf = (image: Snapshot | undefined): Uint8Array | undefined => (image === undefined ? undefined : fetched.get(image.hash))
  const files: Array<PlannedFile> = []
  const merged: Array<RelativePath> = []
  const conflicts: Array<RollbackConflict> = []
  for (const c of net) {
    const now = liveBytes(c.path)
    const resolution = input.resolved?.get(c.path)
    if (resolution !== undefined) {
      const sides = { base: bytesOf(c.after), ours: now, theirs: bytesOf(c.before) }
      const stale = (why: string): RollbackPlanOutcome => ({ _tag: "Stale", path: c.path, why })
      if (resolution.kind === "discard") continue
      let after: Side
      if (resolution.kind === "apply" && resolution.hunks.length > 0) {
        const applied = applyTheirsHunks(sides, resolution.hunks)
        if (applied._tag === "Stale") return stale(applied.why)
        after = applied.bytes
      } else {
        if (liveOf(c.path).hash !== resolution.ours) return stale("it is not the file the conflict was recorded against")
        after = resolution.kind === "content" ? resolution.bytes : sides.theirs
      }
      const write = writeOf(c.path, now, after)
      if (write !== undefined) files.push(write)
      continue
    }
    if (drifted.has(c.path)) {
      const sides = { base: bytesOf(c.after), ours: now, theirs: bytesOf(c.before) }
      const m = mergeFile(sides, input.labels, { names: rollbackSideNames, syntax: input.syntax?.(c.path) })
      switch (m._tag) {
        case "Unchanged":
        case "Converged":
          break
        case "TakeTheirs": {
          const write = writeOf(c.path, now, m.bytes)
          if (write !== undefined) files.push(write)
          break
        }
        case "AutoMerged": {
          const how: ChangeMerge = { method: m.method, ...(m.language === undefined ? {} : { language: m.language }) }
          const write = writeOf(c.path, now, m.bytes, how)
          if (write !== undefined) {
            files.push(write)
            merged.push(c.path)
          }
          break
        }
        case "Conflict":
          conflicts.push({ path: c.path, reason: m.reason, ...sides, hunks: m.hunks, text: m.text })
      }
      continue
    }
    // Every other `before` is the live content, which the checks above proved is the postimage.
    if (c.moveFrom !== undefined) {
      files.push({ kind: "move", path: c.moveFrom, moveFrom: c.path, before: now, after: bytesOf(c.before) })
      // The engine keeps a move's source when the same plan rewrites it: the replaced file returns.
      if (c.overwritten !== undefined) files.push({ kind: "replace", path: c.path, before: now, after: bytesOf(c.overwritten) })
    } else if (c.kind === "add") files.push({ kind: "delete", path: c.path, before: now, after: undefined })
    else if (c.kind === "delete") files.push({ kind: "add", path: c.path, before: undefined, after: bytesOf(c.before) })
    else files.push({ kind: c.kind, path: c.path, before: now, after: bytesOf(c.before) })
  }
  if (conflicts.length > 0) return { _tag: "Conflicted", conflicts }
  return { _tag: "Ready", plan: planOfFiles(files), merged }
}
