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
import * as Fault from "@forkjoin/engine/Fault"
import { HistoryContent, HistoryRecords } from "@forkjoin/history/HistoryStore"
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
  type ConflictResolution,
  type EnvironmentId,
  ownerOf,
  type MergeRunId,
  type PatchHistoryRecord,
  type TaskId,
  ThreadId,
  TransactionId,
  TurnId
} from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Result from "effect/Result"
import { withRefusals } from "./internal/refusals.ts"
import { recoveredOutcome } from "./internal/settle.ts"
import * as Join from "./Join.ts"
import { revalidate } from "./Revalidate.ts"
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
 * A join's conflict is claimed inside the engine's locked section (see
 * adrs/20261202-scope-under-lock.md): holding the workspace lock, the resolve checks the
 * conflict is still open, writes, and records the resolution before letting go, so of two
 * racing resolutions the loser writes nothing (`conflict_already_resolved`), and a write the
 * engine refuses leaves the conflict open as it was, never claimed. A resolution that writes
 * nothing is decided and recorded under the same lock.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolve = Effect.fn("Conflicts.resolve")(function*(conflictId: ConflictId, resolution: Resolution) {
  const engine = yield* Engine
  const store = yield* MergeStore
  const history = yield* HistoryRecords
  const found = yield* store.getConflict(conflictId).pipe(Effect.mapError(storeFailure("Reading the conflict")))
  if (Option.isNone(found)) {
    return yield* new OrchestratorError({ code: "unknown_conflict", paths: [], message: `There is no conflict '${conflictId}'; 'forkjoin conflicts' lists them.` })
  }
  const conflict = found.value
  const owner = ownerOf(conflict)
  if (conflict.status === "resolved") {
    // A held rollback whose last resolve stopped before applying it is finished here.
    if (owner.kind === "rollback") {
      const finished = yield* Rollback.finishHeld(owner.transactionId)
      if (finished !== undefined) return { record: finished.record, outcome: undefined, rollback: { transactionId: owner.transactionId, open: 0 } }
    }
    return yield* alreadyResolved(conflict, owner)
  }
  if (owner.kind === "rollback") {
    const held = yield* Rollback.resolveHeld(conflict, resolution)
    return { record: held.record, outcome: undefined, rollback: { transactionId: held.transactionId, open: held.open } }
  }
  const transactionId = TransactionId.make(`conflict_resolution:${conflictId}`)
  // Its own write, committed by a resolve that stopped before recording it: record it, write nothing.
  const landed = history.recordsByTransaction(engine.environmentId, transactionId).pipe(Effect.mapError(storeFailure("Reading a transaction")))
  const finishLanded = Effect.gen(function*() {
    const committed = yield* landed
    yield* claim(conflict, { kind: resolution.kind === "discard" ? "content" : resolution.kind, transactionId, resolvedAt: yield* now })
    const outcome = yield* settleChild(owner)
    if (resolution.kind === "discard") return yield* alreadyResolved(conflict, owner, "its resolution was already written by " + transactionId)
    return { record: committed[committed.length - 1], outcome, rollback: undefined }
  })
  if ((yield* landed).length > 0) return yield* finishLanded
  // Under the workspace lock: still open, and not written by a resolve that died before recording it.
  const closedMeanwhile = Effect.gen(function*() {
    const stored = yield* store.getConflict(conflictId).pipe(Effect.mapError(storeFailure("Reading the conflict")))
    if (Option.isSome(stored) && stored.value.status === "resolved") return yield* alreadyResolved(conflict, owner, "another resolve closed it first")
  })
  const stillOpen = Effect.gen(function*() {
    yield* closedMeanwhile
    if ((yield* landed).length > 0) return yield* new OwnWriteLanded()
  })
  const file = resolution.kind === "discard" ? undefined : yield* planResolution(conflict, owner, resolution).pipe(
    // The change it sees may be the resolution another resolve just wrote: say so, not stale.
    Effect.catchIf((e) => e instanceof OrchestratorError && e.code === "conflict_stale", (e) => Effect.andThen(closedMeanwhile, Effect.fail(e)))
  )
  const resolvedAt = yield* now
  if (file === undefined) {
    const decided = yield* engine.locked(Effect.andThen(stillOpen, claim(conflict, { kind: resolution.kind, resolvedAt }))).pipe(
      Effect.as(true),
      Effect.catchTag("OwnWriteLanded", () => Effect.succeed(false))
    )
    if (!decided) return yield* finishLanded
    return { record: undefined, outcome: yield* settleChild(owner), rollback: undefined }
  }
  const run = yield* Join.loadRun(owner.runId)
  const record: PatchHistoryRecord | undefined = yield* engine.applyPlan({
    threadId: ThreadId.make(`${owner.runId}/${owner.childId}`),
    turnId: RESOLVE_TURN,
    transactionId,
    grant: Grants.full,
    links: { conflictId, mergeRunId: owner.runId },
    // The conflict's path is the real one admission found; it must still land there.
    writeScope: run.mergePlan.writeScopes[owner.childId] ?? [],
    plan: planOfFiles([file]),
    locked: {
      before: Effect.tap(stillOpen, () => Fault.atResolve("after-claim")),
      after: () => Effect.andThen(Fault.atResolve("before-record"), () => claim(conflict, { kind: resolution.kind, transactionId, resolvedAt }))
    }
  }).pipe(Effect.catchTag("OwnWriteLanded", () => Effect.succeed(undefined)))
  if (record === undefined) return yield* finishLanded
  yield* Fault.atResolve("after-commit")
  const outcome = yield* settleChild(owner)
  return { record, outcome, rollback: undefined }
})

/** Under the lock, the conflict's own resolution transaction is already in history: finish it instead of writing. */
class OwnWriteLanded extends Schema.TaggedError<OwnWriteLanded>()("OwnWriteLanded", {}) {}

/** Records `resolution` on the still open `conflict`; a conflict another resolve closed first is `conflict_already_resolved`. */
const claim = (conflict: ConflictRecord, resolution: ConflictResolution) =>
  MergeStore.use((store) => store.resolveConflict(conflict.conflictId, resolution)).pipe(
    Effect.catchIf((e) => e.reason === "Constraint", () => alreadyResolved(conflict, ownerOf(conflict), "another resolve closed it first")),
    Effect.mapError((e) => (e instanceof OrchestratorError ? e : storeFailure("Recording the resolution")(e)))
  )

/** `conflict_already_resolved`, naming how to finish a child a crash left with every conflict closed. */
const alreadyResolved = (conflict: ConflictRecord, owner: ConflictOwner, why?: string) =>
  Effect.gen(function*() {
    const stored = yield* MergeStore.use((store) => store.getConflict(conflict.conflictId)).pipe(Effect.orElseSucceed(() => Option.none<ConflictRecord>()))
    const kind = Option.isSome(stored) ? stored.value.resolution?.kind : conflict.resolution?.kind
    const next = owner.kind === "join" ? ` If its child is not finished ('forkjoin status' says so), run 'forkjoin run --resume ${owner.runId}'.` : ""
    return yield* new OrchestratorError({
      code: "conflict_already_resolved",
      paths: [conflict.path],
      message: `Conflict '${conflict.conflictId}' was already resolved (${why ?? kind}); nothing was written.${next}`
    })
  })

/**
 * The one file a join conflict's resolution writes, planned against the live files (the engine
 * re-checks them under its lock). A conflict at a move's destination resolves as the move: the
 * source goes away as the child asked, and must still be what the join saw.
 */
const planResolution = (conflict: ConflictRecord, owner: Extract<ConflictOwner, { kind: "join" }>, resolution: Exclude<Resolution, { kind: "discard" }>) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const stale = (why: string, paths: ReadonlyArray<string> = [conflict.path]) =>
      new OrchestratorError({
        code: "conflict_stale",
        paths,
        message: `${paths.join(", ")} changed since the join held this conflict back (${why}); nothing was written. ` +
          "Resolve with --content FILE built from the current file, or --discard."
      })
    const move = yield* moveOf(conflict, owner)
    const states = yield* engine.read(move === undefined ? [conflict.path] : [conflict.path, move.from])
    const bytesAt = (p: string) => {
      const s = states.get(p)
      return s?._tag === "File" ? s.bytes : undefined
    }
    const odd = (p: string) => states.get(p)?._tag === "Directory" || states.get(p)?._tag === "Other"
    const liveBytes = bytesAt(conflict.path)
    // A move whose source a sibling changed: the conflict's `ours` is that source as the join saw it.
    const moveVsEdit = move !== undefined && conflict.reason === "move_vs_edit"
    let after: Uint8Array | undefined
    if (resolution.kind === "content") {
      // Bytes the caller merged: written over the file as it is now, which becomes `before`.
      if (odd(conflict.path)) return yield* stale("it is no longer a regular file")
      after = resolution.bytes
    } else if (!moveVsEdit && conflict.hunks.length > 0 && conflict.reason === "overlapping_edits") {
      // Text conflicts: the child's side of the conflicting hunks only, onto the live file as
      // it is now, so what siblings (or a person) changed elsewhere in it stays.
      if (liveBytes === undefined || odd(conflict.path)) return yield* stale("it is no longer a regular file")
      const sides = yield* blobsOf(conflict.path, [conflict.base, conflict.theirs])
      const merged = applyTheirsHunks({ base: sides[0], ours: liveBytes, theirs: sides[1] }, conflict.hunks)
      if (merged._tag === "Stale") return yield* stale(merged.why)
      after = merged.bytes
    } else {
      const checked = moveVsEdit ? move.from : conflict.path
      const live = bytesAt(checked)
      if (odd(checked) || (live === undefined ? undefined : sha256(live)) !== conflict.ours?.hash) {
        return yield* stale("it is not the file the conflict was recorded against", [checked])
      }
      after = (yield* blobsOf(conflict.path, [conflict.theirs]))[0]
    }
    if (move !== undefined) {
      const source = bytesAt(move.from)
      if (odd(move.from) || source === undefined) return yield* stale("the moved file is gone", [move.from])
      if (!moveVsEdit && sha256(source) !== move.preimage) return yield* stale("the moved file changed", [move.from])
      if (after === undefined) return undefined
      return { kind: "move", path: conflict.path, moveFrom: move.from, before: source, after, ...(liveBytes === undefined ? {} : { overwritten: liveBytes }) } satisfies PlannedFile
    }
    if (liveBytes === undefined && after === undefined) return undefined
    return { kind: liveBytes === undefined ? "add" : after === undefined ? "delete" : "update", path: conflict.path, before: liveBytes, after } satisfies PlannedFile
  })

/** The move of the child's changeset whose destination is the conflict's path, if it is one. */
const moveOf = (conflict: ConflictRecord, owner: Extract<ConflictOwner, { kind: "join" }>) =>
  Effect.gen(function*() {
    const run = yield* Join.loadRun(owner.runId)
    const child = Join.childrenOf(run).find((c) => c.id === owner.childId)
    // An unreadable or invalid changeset has no move.
    const admitted = child === undefined ? undefined : Result.getOrUndefined(changesetOf(child))
    const entry = admitted?.entries.find((e) => e.path === conflict.path && e.moveFrom !== undefined)
    return entry?.moveFrom === undefined ? undefined : { from: entry.moveFrom, preimage: entry.preimage?.hash }
  })

/**
 * Finishes the children of `runId` a crashed resolve left with no open conflict: a conflict
 * whose recorded resolution never landed (its transaction is not in history: only an older
 * version recorded before writing) is open again, and a child with none left open is settled as
 * its last resolution would have. Returns the
 * outcomes it recorded. What `forkjoin run --resume` runs before reporting.
 *
 * @category constructors
 * @since 0.1.0
 */
export const settleResolved = (runId: MergeRunId) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const store = yield* MergeStore
    const history = yield* HistoryRecords
    const run = yield* Join.loadRun(runId)
    const settled: Array<ChildOutcome> = []
    for (const o of run.outcomes) {
      if (o.status !== "conflicted_unresolved") continue
      const mine = (yield* list({ runId })).filter((c) => c.childId === o.childId)
      for (const c of mine) {
        const tx = c.resolution?.transactionId
        if (tx === undefined) continue
        const landed = yield* history.recordsByTransaction(engine.environmentId, tx).pipe(Effect.mapError(storeFailure("Reading a transaction")))
        if (landed.length === 0) yield* store.reopenConflict(c.conflictId, tx).pipe(Effect.mapError(storeFailure("Reopening a conflict")))
      }
      const outcome = yield* settleChild({ kind: "join", runId, childId: o.childId })
      if (outcome !== undefined) settled.push(outcome)
    }
    return settled
  })

/**
 * The children of the workspace's runs that hold no open conflict but are not settled yet (a
 * resolve stopped before applying the rest of the child): `forkjoin run --resume` finishes them.
 *
 * @category constructors
 * @since 0.1.0
 */
export const unsettled = (environmentId: EnvironmentId) =>
  Effect.gen(function*() {
    const store = yield* MergeStore
    const runs = yield* store.listRuns({ environmentId, status: "blocked" })
    const out: Array<{ readonly runId: MergeRunId; readonly childId: TaskId }> = []
    for (const run of runs) {
      const conflicts = yield* store.listConflicts({ environmentId, runId: run.runId })
      for (const o of run.outcomes) {
        if (o.status === "conflicted_unresolved" && !conflicts.some((c) => c.childId === o.childId && c.status === "open")) {
          out.push({ runId: run.runId, childId: o.childId })
        }
      }
    }
    return out
  })

/** The bytes of each snapshot from history (`undefined` for an absent side); a missing blob is `store_unavailable`. */
const blobsOf = (path: string, snapshots: ReadonlyArray<ConflictRecord["theirs"]>) =>
  Effect.gen(function*() {
    const history = yield* HistoryContent
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

/**
 * After a resolution: when the child has no open conflict left, apply or drop the rest of it,
 * once (a child already settled, or whose transaction is already in history, is not applied again).
 */
const settleChild = (conflict: Extract<ConflictOwner, { kind: "join" }>) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const store = yield* MergeStore
    const history = yield* HistoryRecords
    const mine = (yield* store.listConflicts({ environmentId: engine.environmentId, runId: conflict.runId }).pipe(
      Effect.mapError(storeFailure("Listing conflicts"))
    )).filter((c) => c.childId === conflict.childId)
    if (mine.some((c) => c.status === "open")) return undefined
    const run = yield* Join.loadRun(conflict.runId)
    const current = run.outcomes.find((o) => o.childId === conflict.childId)
    if (current !== undefined && current.status !== "conflicted_unresolved") return current
    const allDiscarded = mine.every((c) => c.resolution?.kind === "discard")
    const child = Join.childrenOf(run).find((c) => c.id === conflict.childId)!
    const transactionId = Join.transactionOf(conflict.runId, conflict.childId)
    // At most once, as the join: the remainder committed by a resolve that stopped before recording it.
    const already = yield* history.recordsByTransaction(engine.environmentId, transactionId).pipe(Effect.mapError(storeFailure("Reading a transaction")))
    const settled: Join.Joined = allDiscarded
      ? { outcome: { childId: conflict.childId, status: "discarded", reason: "every conflict of the child was discarded" } satisfies ChildOutcome, conflicts: [] }
      : already.length > 0
      ? { outcome: resolvedOf(recoveredOutcome(child.id, Result.getOrUndefined(changesetOf(child)), already, transactionId)), conflicts: [] }
      : yield* Join.applyRemainder(run, child, new Set(mine.map((c) => c.path)))
    const at = yield* now
    const outcome = withRefusals(settled.outcome, current?.refusals)
    yield* store.recordOutcome(conflict.runId, outcome, settled.conflicts, at).pipe(Effect.mapError(storeFailure("Recording the child's outcome")))
    const after = yield* Join.loadRun(conflict.runId)
    yield* store.setRunStatus(conflict.runId, Join.statusOf(after.outcomes), at).pipe(Effect.mapError(storeFailure("Recording the run's status")))
    return outcome
  })

/** The child's changeset, revalidated as the join takes it (untrusted). */
const changesetOf = (child: Join.JoinChild) => revalidate(child.changeset, { id: child.id, writeScope: child.writeScope ?? [] })

/** A remainder found in history reads as `applyRemainder` would have said it. */
const resolvedOf = (outcome: ChildOutcome): ChildOutcome => (Join.SETTLED.has(outcome.status) ? { ...outcome, status: "resolved" } : outcome)
