/**
 * The transactional join (SPEC §6.6): children in task order, each revalidated as untrusted
 * input, baseline-verified against the live files, routed through diff3 where an earlier
 * sibling changed the same path, and applied as its own engine transaction
 * `subagent_merge:<run-id>/<task-id>`. Real conflicts are held back unapplied and recorded as
 * values. The run and every child's outcome are durable before and after each transaction, so
 * `resume` finishes an interrupted join and applies every child at most once.
 *
 * Owns the join's control flow. Does not own the merge decisions (`@forkjoin/merge`, pure),
 * writing files (the engine, whose `applyPlan` re-checks every `before`, and that every path
 * still lands where admission found it inside the child's scope, under its lock) nor
 * storing runs and conflicts (`MergeStore`).
 *
 * @since 0.1.0
 */
import { Engine } from "@forkjoin/engine/Engine"
import { type HistoryContent, HistoryRecords } from "@forkjoin/history/HistoryStore"
import type { Sqlite } from "@forkjoin/history/Sqlite"
import type { GateDecision } from "@forkjoin/schema/Autonomy"
import { MergeStore } from "@forkjoin/history/MergeStore"
import { mergePlanOf } from "@forkjoin/merge/MergePlan"
import {
  type ChildOutcome,
  type ChildRefusal,
  type MergeRun,
  type MergeRunId,
  type RelativePath,
  ThreadId,
  type VerifyCommand
} from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as path from "node:path"
import { OrchestratorError, storeFailure } from "./OrchestratorError.ts"
import { revalidate } from "./Revalidate.ts"
import * as Verify from "./Verify.ts"
import { proceedAtomic } from "./internal/atomic.ts"
import { readChildChangeset } from "./internal/changesetFile.ts"
import { planFor, recordGaps } from "./internal/inputs.ts"
import { admitChangeset } from "./internal/landing.ts"
import {
  childThread,
  type JoinChild,
  type Joined,
  loadRun,
  now,
  pathsOfTransaction,
  runThread,
  SETTLED,
  statusOf,
  transactionOf
} from "./internal/model.ts"
import { withCheck } from "./internal/childCheck.ts"
import { scopeViolation, withRefusals } from "./internal/refusals.ts"
import { recoveredOutcome, settle } from "./internal/settle.ts"

export { applyChildPlan } from "./internal/settle.ts"
export { type JoinChild, type Joined, loadRun, now, runThread, SETTLED, statusOf, transactionOf } from "./internal/model.ts"

/**
 * How to start a join.
 *
 * @category models
 * @since 0.1.0
 */
export interface JoinOptions {
  readonly runId: MergeRunId
  readonly callerThreadId: ThreadId
  readonly runDirectory: string
  readonly atomic: boolean
  readonly verify?: VerifyCommand
  /** The promotion gate's decision that admitted the mutating children, kept on the run. */
  readonly gate?: GateDecision
  readonly children: ReadonlyArray<JoinChild>
  /** Told each child's outcome as soon as it is recorded (progress). */
  readonly onOutcome?: (outcome: ChildOutcome) => Effect.Effect<void>
  /** Joins the recorded run instead of `proceed` (a durable workflow of the same steps). */
  readonly proceed?: Proceed
}

/**
 * What joins a recorded run: `proceed` itself, or the same steps driven from elsewhere.
 *
 * @category models
 * @since 0.1.0
 */
export type Proceed = (
  runId: MergeRunId,
  children: ReadonlyArray<JoinChild>,
  onOutcome: (outcome: ChildOutcome) => Effect.Effect<void>
) => Effect.Effect<MergeRun, OrchestratorError, MergeStore | Engine | HistoryRecords | HistoryContent | Sqlite>

/**
 * Records the run (every mutating child `pending`), registers its threads, then joins.
 *
 * @category constructors
 * @since 0.1.0
 */
export const start = Effect.fn("Join.start")(function*(options: JoinOptions) {
  const engine = yield* Engine
  const history = yield* HistoryRecords
  const store = yield* MergeStore
  const decoded = options.children.map((c) => {
    if (c.mode === "read_only" || c.changeset === undefined) return { child: c, changeset: undefined }
    const r = revalidate(c.changeset, { id: c.id, writeScope: c.writeScope ?? [] })
    return { child: c, changeset: Result.isSuccess(r) ? r.success : undefined }
  })
  const mergePlan = mergePlanOf(decoded.map(({ changeset, child }) => ({
    id: child.id,
    mode: child.mode,
    ...(child.writeScope === undefined ? {} : { writeScope: child.writeScope }),
    ...(changeset === undefined ? {} : { changeset })
  })))
  const at = yield* now
  const run: MergeRun = {
    schemaVersion: 2,
    runId: options.runId,
    environmentId: engine.environmentId,
    threadId: runThread(options.runId),
    callerThreadId: options.callerThreadId,
    runDirectory: options.runDirectory,
    atomic: options.atomic,
    ...(options.verify === undefined ? {} : { verify: options.verify }),
    ...(options.gate === undefined ? {} : { gate: options.gate }),
    status: "running",
    mergePlan,
    // Refusals and checks are on record from the start: a resumed join still keeps a refused
    // child out, and still says why a child whose check failed has no changeset.
    outcomes: options.children.filter((c) => c.mode === "transactional_write").map((c) =>
      withRanOn(withCheck(withRefusals({ childId: c.id, status: "pending" }, c.refusals), c.childVerify), c.ranOn)
    ),
    createdAt: at,
    updatedAt: at
  }
  // Views scope a caller to its registered subtree. The caller's thread may already be
  // registered under a parent of its own (a Constraint here), which is just as good.
  yield* history.registerThread(options.callerThreadId).pipe(
    Effect.catchIf((e) => e.reason === "Constraint", () => Effect.void),
    Effect.mapError(storeFailure("Registering the caller's thread"))
  )
  yield* history.registerThread(run.threadId, options.callerThreadId).pipe(Effect.mapError(storeFailure("Registering the run's thread")))
  for (const c of options.children) {
    yield* history.registerThread(childThread(options.runId, c.id), run.threadId).pipe(Effect.mapError(storeFailure("Registering a child's thread")))
  }
  yield* store.createRun(run).pipe(Effect.mapError(storeFailure("Recording the merge run")))
  return yield* (options.proceed ?? proceed)(options.runId, options.children, options.onOutcome ?? (() => Effect.void))
})

/** The outcome with where the child ran (a cluster's runner), kept from its pending record. */
const withRanOn = (outcome: ChildOutcome, ranOn: string | undefined): ChildOutcome => (ranOn === undefined ? outcome : { ...outcome, ranOn })

/**
 * Joins every child still `pending` in the recorded run, in task order, and returns the run
 * as stored afterwards. Used by `start` and by `forkjoin run --resume`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const proceed = Effect.fn("Join.proceed")(function*(
  runId: MergeRunId,
  children: ReadonlyArray<JoinChild>,
  onOutcome: (outcome: ChildOutcome) => Effect.Effect<void> = () => Effect.void
) {
  const store = yield* MergeStore
  const run = yield* loadRun(runId)
  const recordedOf = new Map(run.outcomes.map((o) => [o.childId, o]))
  if (run.atomic) {
    const atomicJoined = yield* proceedAtomic(run, children)
    for (const joined of run.verify === undefined ? atomicJoined : yield* Verify.atomic(run, run.verify, atomicJoined)) {
      const recorded = recordedOf.get(joined.outcome.childId)
      const outcome = withRanOn(withCheck(withRefusals(joined.outcome, recorded?.refusals), recorded?.childVerify), recorded?.ranOn)
      yield* store.recordOutcome(runId, outcome, joined.conflicts, yield* now).pipe(Effect.mapError(storeFailure("Recording a child's outcome")))
      yield* onOutcome(outcome)
    }
    return yield* finishRun(runId)
  }
  const byId = new Map(children.map((c) => [c.id, c]))
  // Paths earlier children of this join changed: a later child's drift there is routed through diff3.
  const changed = yield* changedBy(run)
  for (const o of run.outcomes) {
    if (o.status !== "pending") continue
    const outcome = yield* joinPending(run, o, byId.get(o.childId), changed, onOutcome)
    if (outcome.transactionId !== undefined && SETTLED.has(outcome.status)) {
      for (const p of yield* pathsOfTransaction(outcome.transactionId)) changed.add(p)
    }
  }
  return yield* finishRun(runId)
})

/** The paths the settled children of `run` changed. */
const changedBy = (run: MergeRun) =>
  Effect.gen(function*() {
    const changed = new Set<RelativePath>()
    for (const o of run.outcomes) {
      if (o.status !== "pending" && o.transactionId !== undefined && SETTLED.has(o.status)) {
        for (const p of yield* pathsOfTransaction(o.transactionId)) changed.add(p)
      }
    }
    return changed
  })

/** Joins one pending child of `run` (`pending` its recorded outcome), records and reports its outcome. */
const joinPending = (
  run: MergeRun,
  o: ChildOutcome,
  child: JoinChild | undefined,
  changed: ReadonlySet<RelativePath>,
  onOutcome: (outcome: ChildOutcome) => Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const store = yield* MergeStore
    const joined: Joined = child === undefined
      ? { outcome: { childId: o.childId, status: "missing_changeset", reason: "the child's changeset was not found" }, conflicts: [] }
      : yield* joinChild(run, child, changed, o.refusals ?? [])
    const outcome: ChildOutcome = withRanOn(
      withCheck(
        withRefusals(
          run.verify !== undefined && joined.outcome.transactionId !== undefined && SETTLED.has(joined.outcome.status)
            ? yield* Verify.child(run, run.verify, joined.outcome, joined.outcome.transactionId)
            : joined.outcome,
          o.refusals
        ),
        o.childVerify
      ),
      o.ranOn
    )
    yield* store.recordOutcome(run.runId, outcome, joined.conflicts, yield* now).pipe(Effect.mapError(storeFailure("Recording a child's outcome")))
    yield* onOutcome(outcome)
    return outcome
  })

/**
 * Joins child `childId` of the recorded non-atomic run `runId` as `proceed` would at its turn
 * (the children before it in task order must be settled), and returns its outcome; a child
 * whose outcome is already recorded is not joined again, its recorded outcome is returned. At
 * most once, like `proceed`: a crash after its transaction committed finds the transaction.
 * One step of a join driven from outside (a durable workflow, one activity per child).
 *
 * @category constructors
 * @since 0.1.0
 */
export const proceedChild = Effect.fn("Join.proceedChild")(function*(
  runId: MergeRunId,
  child: JoinChild | undefined,
  childId: string,
  onOutcome: (outcome: ChildOutcome) => Effect.Effect<void> = () => Effect.void,
  changed?: Changed
) {
  const run = yield* loadRun(runId)
  const recorded = run.outcomes.find((o) => o.childId === childId)
  if (recorded === undefined) {
    return yield* new OrchestratorError({ code: "unknown_run", paths: [], message: `run ${runId} has no mutating child ${childId}` })
  }
  if (recorded.status !== "pending") return recorded
  // Read from the history once per join (then kept up to date), not once per child.
  if (changed !== undefined && changed.paths === undefined) changed.paths = yield* changedBy(run)
  const paths = changed?.paths ?? (yield* changedBy(run))
  const outcome = yield* joinPending(run, recorded, child, paths, onOutcome)
  if (outcome.transactionId !== undefined && SETTLED.has(outcome.status)) {
    for (const p of yield* pathsOfTransaction(outcome.transactionId)) paths.add(p)
  }
  return outcome
})

/**
 * What the children of one join settled so far changed, kept across `proceedChild` calls of a
 * process (`paths` undefined until the first reads it from the history).
 *
 * @category models
 * @since 0.1.0
 */
export interface Changed {
  paths: Set<RelativePath> | undefined
}

/**
 * Stores the run's status from its outcomes and returns it (after the last `proceedChild`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const finish = (runId: MergeRunId) => finishRun(runId)

/** Stores the run's status from its outcomes and returns the run. */
const finishRun = (runId: MergeRunId) =>
  Effect.gen(function*() {
    const store = yield* MergeStore
    const after = yield* loadRun(runId)
    const status = statusOf(after.outcomes)
    yield* store.setRunStatus(runId, status, yield* now).pipe(Effect.mapError(storeFailure("Recording the run's status")))
    return { ...after, status }
  })

/**
 * The children of a recorded run, read back from its run directory (`subagents/<task-id>/`):
 * what `proceed` and conflict resolution need after a restart.
 *
 * @category constructors
 * @since 0.1.0
 */
export const childrenOf = (run: MergeRun): ReadonlyArray<JoinChild> =>
  run.outcomes.map((o) => {
    const namespace = path.join(run.runDirectory, "subagents", o.childId)
    // Missing, not a regular file or not JSON: the child is joined with the reason as its status.
    const read = readChildChangeset(namespace)
    const scope = run.mergePlan.writeScopes[o.childId]
    return {
      id: o.childId,
      mode: "transactional_write",
      ...(scope === undefined ? {} : { writeScope: scope }),
      changeset: Result.isSuccess(read) ? read.success : undefined,
      ...(Result.isFailure(read) ? { unread: read.failure } : {}),
      blobDirectory: path.join(namespace, "blobs")
    }
  })

/**
 * Applies what is left of a child whose conflicts are all closed: its entries except
 * `exclude` (the conflict paths, already settled one by one), as the child's own transaction.
 *
 * @category constructors
 * @since 0.1.0
 */
export const applyRemainder = (run: MergeRun, child: JoinChild, exclude: ReadonlySet<string>) =>
  Effect.gen(function*() {
    const checked = yield* admitChangeset(child)
    if (Result.isFailure(checked)) {
      return { outcome: { childId: child.id, status: checked.failure.status, reason: checked.failure.reason }, conflicts: [] } satisfies Joined
    }
    const remaining = checked.success.entries.filter((e) => !exclude.has(e.path) && (e.moveFrom === undefined || !exclude.has(e.moveFrom)))
    const changed = new Set<RelativePath>()
    for (const o of run.outcomes) {
      if (o.transactionId !== undefined && SETTLED.has(o.status)) for (const p of yield* pathsOfTransaction(o.transactionId)) changed.add(p)
    }
    const planned = yield* planFor({ ...checked.success, entries: remaining }, child, changed)
    const settled = yield* settle(run, child, planned, transactionOf(run.runId, child.id))
    return SETTLED.has(settled.outcome.status) ? { ...settled, outcome: { ...settled.outcome, status: "resolved" } } satisfies Joined : settled
  })

/** One child: refusals, revalidate, read, plan, apply (or hold back), and say what happened. */
const joinChild = (run: MergeRun, child: JoinChild, changed: ReadonlySet<RelativePath>, refusals: ReadonlyArray<ChildRefusal>) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const history = yield* HistoryRecords
    const transactionId = transactionOf(run.runId, child.id)
    // At most once: a crash after the engine committed but before the outcome was stored.
    const already = yield* history.recordsByTransaction(engine.environmentId, transactionId).pipe(Effect.mapError(storeFailure("Reading a transaction")))
    if (already.length > 0) {
      const admitted = yield* admitChangeset(child)
      return { outcome: recoveredOutcome(child.id, Result.getOrUndefined(admitted), already, transactionId), conflicts: [] } satisfies Joined
    }
    const refused = scopeViolation(child.id, refusals)
    if (refused !== undefined) return { outcome: refused, conflicts: [] } satisfies Joined
    const checked = yield* admitChangeset(child)
    if (Result.isFailure(checked)) {
      return { outcome: { childId: child.id, status: checked.failure.status, reason: checked.failure.reason }, conflicts: [] } satisfies Joined
    }
    const planned = yield* planFor(checked.success, child, changed)
    if (planned._tag === "Drift") yield* recordGaps(run, child.id, checked.success, planned.paths)
    return yield* settle(run, child, planned, transactionId)
  })

