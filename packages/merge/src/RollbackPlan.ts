/**
 * The restore plan of `rollback_transaction` (SPEC §6.8) as a pure decision: from one
 * transaction's file changes (in commit order), the live state of the paths they touched and
 * the stored blobs, it plans the engine transaction that puts every path back as it was before
 * the transaction — or says why nothing may be written: a path no longer holds what the
 * transaction left there (`rollback_drift`), or content it needs is not held.
 *
 * Several changes of one path fold into the transaction's net effect (first before, last
 * after) with the shared `NetChange` fold. Does not own reading history, files or blobs,
 * applying the plan (the engine re-checks every `before` under its lock) nor file modes.
 *
 * @since 0.1.0
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import * as NetChange from "@forkjoin/patch/NetChange"
import type { FileState, Plan, PlannedFile } from "@forkjoin/patch/Plan"
import { byCodeUnit } from "@forkjoin/patch/RelativePath"
import type { RelativePath, Sha256Hash } from "@forkjoin/schema/Ids"
import type { FileChange } from "@forkjoin/schema/PatchHistoryRecord"
import type { Snapshot } from "@forkjoin/schema/Snapshot"
import { planOfFiles } from "./ChildPlan.ts"
import { liveFiles } from "./internal/liveFiles.ts"

/**
 * What `planRollback` needs: the transaction's `changes` in commit order, `live`, the state
 * of every path and `moveFrom` they name, and `blob`, stored bytes by hash.
 *
 * @category models
 * @since 0.1.0
 */
export interface RollbackPlanInput {
  readonly changes: ReadonlyArray<FileChange>
  readonly live: (path: RelativePath) => FileState
  readonly blob: (hash: Sha256Hash) => Uint8Array | undefined
}

/**
 * The decision, by precedence:
 * - `Unavailable`: a change lacks a snapshot it needs (an inexact record; `paths` names them),
 *   or a blob to restore is missing or corrupt (`hashes`, with their `paths`);
 * - `Drift` (`rollback_drift`): these paths no longer hold the transaction's postimage (or absence);
 * - `Ready`: apply `plan`; it is empty when the transaction's net effect is nothing.
 *
 * @category models
 * @since 0.1.0
 */
export type RollbackPlanOutcome =
  | { readonly _tag: "Ready"; readonly plan: Plan }
  | { readonly _tag: "Drift"; readonly paths: ReadonlyArray<RelativePath> }
  | { readonly _tag: "Unavailable"; readonly hashes: ReadonlyArray<Sha256Hash>; readonly paths: ReadonlyArray<RelativePath> }

const sameContent = (a: Snapshot, b: Snapshot): boolean => a.hash === b.hash

const sortedUnique = <A extends string>(xs: Iterable<A>): Array<A> => [...new Set(xs)].sort(byCodeUnit)

/**
 * Plans the undo of one transaction; see `RollbackPlanOutcome`. Paths the transaction left as
 * they were are neither checked nor written. A move goes back as a move; when it had replaced a
 * destination, that file is restored in the same plan.
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
  const drift: Array<RelativePath> = []
  const expectLive = (p: RelativePath, post: Snapshot | undefined) => {
    const s = liveOf(p)
    if (post === undefined ? s.state._tag !== "Missing" : s.hash !== post.hash) drift.push(p)
  }
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
    expectLive(c.path, c.after)
    if (c.moveFrom !== undefined) {
      expectLive(c.moveFrom, undefined)
      fetch(c.moveFrom, c.before)
      fetch(c.path, c.overwritten)
    } else fetch(c.path, c.before)
  }
  if (drift.length > 0) return { _tag: "Drift", paths: sortedUnique(drift) }
  if (missingHashes.length > 0) return { _tag: "Unavailable", hashes: sortedUnique(missingHashes), paths: sortedUnique(missingPaths) }

  const liveBytes = (p: RelativePath): Uint8Array | undefined => {
    const s = liveOf(p).state
    return s._tag === "File" ? s.bytes : undefined
  }
  const bytesOf = (image: Snapshot | undefined): Uint8Array | undefined => (image === undefined ? undefined : fetched.get(image.hash))
  const files: Array<PlannedFile> = []
  for (const c of net) {
    // Every `before` is the live content, which the checks above proved is the postimage.
    const now = liveBytes(c.path)
    if (c.moveFrom !== undefined) {
      files.push({ kind: "move", path: c.moveFrom, moveFrom: c.path, before: now, after: bytesOf(c.before) })
      // The engine keeps a move's source when the same plan rewrites it: the replaced file returns.
      if (c.overwritten !== undefined) files.push({ kind: "replace", path: c.path, before: now, after: bytesOf(c.overwritten) })
    } else if (c.kind === "add") files.push({ kind: "delete", path: c.path, before: now, after: undefined })
    else if (c.kind === "delete") files.push({ kind: "add", path: c.path, before: undefined, after: bytesOf(c.before) })
    else files.push({ kind: c.kind, path: c.path, before: now, after: bytesOf(c.before) })
  }
  return { _tag: "Ready", plan: planOfFiles(files) }
}
