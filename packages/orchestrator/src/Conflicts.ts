/**
 * Conflicts as values, after the join (SPEC §6.7): listing them, and `resolve_conflict` with
 * `apply` (a text conflict: the child's side of its conflicting hunks, merged onto the live
 * file; any other: the child's whole version, after re-checking the live file is still what
 * the join saw; see adrs/20261201-resolve-apply-hunks.md),
 * `discard` (keep the live file) or `content` (bytes the parent supplies). Every write goes
 * through the engine as `conflict_resolution:<conflict-id>`. When a child's last conflict
 * closes, the rest of its changeset is applied as its own transaction (`resolved`), unless
 * every conflict was discarded (`discarded`: the child's work is dropped as a whole).
 * `finish` is refused while any conflict of the run is open.
 *
 * @since 0.1.0
 */
import { Engine, Grants } from "@forkjoin/engine/Engine"
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { MergeStore } from "@forkjoin/history/MergeStore"
import { planOfFiles } from "@forkjoin/merge/ChildPlan"
import { applyTheirsHunks } from "@forkjoin/merge/FileMerge"
import { sha256 } from "@forkjoin/patch/Bytes"
import type { PlannedFile } from "@forkjoin/patch"
import {
  type ChildOutcome,
  type ConflictId,
  type ConflictOwner,
  type ConflictRecord,
  ownerOf,
  type MergeRunId,
  type PatchHistoryRecord,
  ThreadId,
  TransactionId,
  TurnId
} from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { withRefusals } from "./internal/refusals.ts"
import * as Join from "./Join.ts"
import * as Rollback from "./Rollback.ts"
import { OrchestratorError, storeFailure } from "./OrchestratorError.ts"

/**
 * A resolution as the caller gives it.
 *
 * @category models
 * @since 0.1.0
 */
export type Resolution =
  | { readonly kind: "apply" }
  | { readonly kind: "discard" }
  | { readonly kind: "content"; readonly bytes: Uint8Array }

const RESOLVE_TURN = TurnId.make("resolve")

const now = Join.now

/**
 * The conflicts of this workspace, optionally of one run or one status.
 *
 * @category constructors
 * @since 0.1.0
 */
export const list = (filter: { readonly runId?: MergeRunId; readonly status?: ConflictRecord["status"] } = {}) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const store = yield* MergeStore
    return yield* store.listConflicts({ environmentId: engine.environmentId, ...filter }).pipe(Effect.mapError(storeFailure("Listing conflicts")))
  })

/**
 * Refuses (`unresolved_subagent_conflicts`, resumable) while any conflict of `runId` is open.
 *
 * @category constructors
 * @since 0.1.0
 */
export const finish = (runId: MergeRunId) =>
  Effect.gen(function*() {
    const open = yield* list({ runId, status: "open" })
    if (open.length > 0) {
      return yield* new OrchestratorError({
        code: "unresolved_subagent_conflicts",
        paths: open.map((c) => c.path),
        message: `${open.length} conflict(s) of run ${runId} are open (${open.map((c) => c.conflictId).join(", ")}); ` +
          "resolve each with 'forkjoin resolve CONFLICT_ID --apply|--discard|--content FILE', then finish again."
      })
    }
  })

/**
 * Resolves one conflict, and settles its child when it was the child's last open one.
 * Resolves to the resolution's record (none for `discard`) and the child's outcome. A
 * rollback's conflict is resolved by `Rollback.resolveHeld` (`rollback`: its transaction and
 * how many of its conflicts stay open; `record`: the whole rollback, once the last closed).
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolve = Effect.fn("Conflicts.resolve")(function*(conflictId: ConflictId, resolution: Resolution) {
  const engine = yield* Engine
  const store = yield* MergeStore
  const found = yield* store.getConflict(conflictId).pipe(Effect.mapError(storeFailure("Reading the conflict")))
  if (Option.isNone(found)) {
    return yield* new OrchestratorError({ code: "unknown_conflict", paths: [], message: `There is no conflict '${conflictId}'; 'forkjoin conflicts' lists them.` })
  }
  const conflict = found.value
  if (conflict.status === "resolved") {
    return yield* new OrchestratorError({
      code: "conflict_already_resolved",
      paths: [conflict.path],
      message: `Conflict '${conflictId}' was already resolved (${conflict.resolution?.kind}); nothing was written.`
    })
  }
  const owner = ownerOf(conflict)
  if (owner.kind === "rollback") {
    const held = yield* Rollback.resolveHeld(conflict, resolution)
    return { record: held.record, outcome: undefined, rollback: { transactionId: held.transactionId, open: held.open } }
  }
  let record: PatchHistoryRecord | undefined
  if (resolution.kind !== "discard") {
    const live = (yield* engine.read([conflict.path])).get(conflict.path)
    const liveBytes = live?._tag === "File" ? live.bytes : undefined
    const stale = (why: string) =>
      new OrchestratorError({
        code: "conflict_stale",
        paths: [conflict.path],
        message: `${conflict.path} changed since the join held this conflict back (${why}); nothing was written. ` +
          "Resolve with --content FILE built from the current file, or --discard."
      })
    let after: Uint8Array | undefined
    if (resolution.kind === "apply" && conflict.hunks.length > 0 && conflict.reason === "overlapping_edits") {
      // Text conflicts: the child's side of the conflicting hunks only, onto the live file as
      // it is now, so what siblings (or a person) changed elsewhere in it stays.
      if (live?._tag !== "File") return yield* stale("it is no longer a regular file")
      const sides = yield* blobsOf(conflict.path, [conflict.base, conflict.theirs])
      const merged = applyTheirsHunks({ base: sides[0], ours: live.bytes, theirs: sides[1] }, conflict.hunks)
      if (merged._tag === "Stale") return yield* stale(merged.why)
      after = merged.bytes
    } else {
      const liveHash = liveBytes === undefined ? undefined : sha256(liveBytes)
      if (live?._tag === "Directory" || live?._tag === "Other" || liveHash !== conflict.ours?.hash) {
        return yield* stale("it is not the file the conflict was recorded against")
      }
      if (resolution.kind === "content") after = resolution.bytes
      else after = (yield* blobsOf(conflict.path, [conflict.theirs]))[0]
    }
    const file: PlannedFile = { kind: liveBytes === undefined ? "add" : after === undefined ? "delete" : "update", path: conflict.path, before: liveBytes, after }
    if (!(liveBytes === undefined && after === undefined)) {
      record = yield* engine.applyPlan({
        threadId: ThreadId.make(`${owner.runId}/${owner.childId}`),
        turnId: RESOLVE_TURN,
        transactionId: TransactionId.make(`conflict_resolution:${conflictId}`),
        grant: Grants.full,
        links: { conflictId, mergeRunId: owner.runId },
        plan: planOfFiles([file])
      })
    }
  }
  yield* store.resolveConflict(conflictId, {
    kind: resolution.kind,
    ...(record === undefined ? {} : { transactionId: record.transactionId }),
    resolvedAt: yield* now
  }).pipe(Effect.mapError(storeFailure("Recording the resolution")))
  const outcome = yield* settleChild(owner)
  return { record, outcome, rollback: undefined }
})

/** The bytes of each snapshot from history (`undefined` for an absent side); a missing blob is `store_unavailable`. */
const blobsOf = (path: string, snapshots: ReadonlyArray<ConflictRecord["theirs"]>) =>
  Effect.gen(function*() {
    const history = yield* HistoryStore
    const out: Array<Uint8Array | undefined> = []
    for (const snapshot of snapshots) {
      if (snapshot === undefined) {
        out.push(undefined)
        continue
      }
      const bytes = yield* history.getBlob(snapshot.hash).pipe(Effect.mapError(storeFailure("Reading the conflict's sides")))
      if (Option.isNone(bytes)) {
        return yield* new OrchestratorError({
          code: "store_unavailable",
          paths: [path],
          message: `A recorded side of ${path} is missing from history; resolve with --content FILE or --discard.`
        })
      }
      out.push(bytes.value)
    }
    return out
  })

/** After a resolution: when the child has no open conflict left, apply or drop the rest of it. */
const settleChild = (conflict: Extract<ConflictOwner, { kind: "join" }>) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const store = yield* MergeStore
    const mine = (yield* store.listConflicts({ environmentId: engine.environmentId, runId: conflict.runId }).pipe(
      Effect.mapError(storeFailure("Listing conflicts"))
    )).filter((c) => c.childId === conflict.childId)
    if (mine.some((c) => c.status === "open")) return undefined
    const run = yield* Join.loadRun(conflict.runId)
    const allDiscarded = mine.every((c) => c.resolution?.kind === "discard")
    const settled: Join.Joined = allDiscarded
      ? { outcome: { childId: conflict.childId, status: "discarded", reason: "every conflict of the child was discarded" } satisfies ChildOutcome, conflicts: [] }
      : yield* Join.applyRemainder(run, Join.childrenOf(run).find((c) => c.id === conflict.childId)!, new Set(mine.map((c) => c.path)))
    const at = yield* now
    const outcome = withRefusals(settled.outcome, run.outcomes.find((o) => o.childId === conflict.childId)?.refusals)
    yield* store.recordOutcome(conflict.runId, outcome, settled.conflicts, at).pipe(Effect.mapError(storeFailure("Recording the child's outcome")))
    const after = yield* Join.loadRun(conflict.runId)
    yield* store.setRunStatus(conflict.runId, Join.statusOf(after.outcomes), at).pipe(Effect.mapError(storeFailure("Recording the run's status")))
    return outcome
  })
