/**
 * The transactional join (SPEC §6.6): children in task order, each revalidated as untrusted
 * input, baseline-verified against the live files, routed through diff3 where an earlier
 * sibling changed the same path, and applied as its own engine transaction
 * `subagent_merge:<run-id>/<task-id>`. Real conflicts are held back unapplied and recorded as
 * values. The run and every child's outcome are durable before and after each transaction, so
 * `resume` finishes an interrupted join and applies every child at most once.
 *
 * Owns the join's control flow. Does not own the merge decisions (`@forkjoin/merge`, pure),
 * writing files (the engine, whose `applyPlan` re-checks every `before` under its lock) nor
 * storing runs and conflicts (`MergeStore`).
 *
 * @since 0.1.0
 */
import { Engine, Grants, type Inspection } from "@forkjoin/engine/Engine"
import * as Fault from "@forkjoin/engine/Fault"
import * as Gaps from "@forkjoin/history/Gaps"
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { MergeStore } from "@forkjoin/history/MergeStore"
import { type ChildPlanOutcome, planChild, planOfFiles } from "@forkjoin/merge/ChildPlan"
import { mergePlanOf } from "@forkjoin/merge/MergePlan"
import { type FileState, NetChange, type Plan, type PlannedFile } from "@forkjoin/patch"
import { sameBytes, sha256 } from "@forkjoin/patch/Bytes"
import { normalizePath } from "@forkjoin/patch/RelativePath"
import { snapshotOf } from "@forkjoin/patch/Snapshot"
import * as BlobStore from "@forkjoin/runtime/BlobStore"
import {
  type Changeset,
  type ChildOutcome,
  type ChildOutcomeStatus,
  type ConflictRecord,
  conflictIdOf,
  type MergeRun,
  type MergeRunId,
  type MergeRunStatus,
  type PatchHistoryRecord,
  type RelativePath,
  type Sha256Hash,
  type TaskId,
  ThreadId,
  TransactionId,
  TurnId,
  type VerifyCommand
} from "@forkjoin/schema"
import { utcTimestampFromMillis } from "@forkjoin/schema/UtcTimestamp"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"
import { OrchestratorError, storeFailure } from "./OrchestratorError.ts"
import { revalidate } from "./Revalidate.ts"
import * as Rollback from "./Rollback.ts"
import * as Verify from "./Verify.ts"

/**
 * One child as the join sees it: its task, and where its exported changeset and blobs are
 * (`<namespace>/changeset.json`, `<namespace>/blobs/sha256/<hex>`), or no changeset.
 *
 * @category models
 * @since 0.1.0
 */
export interface JoinChild {
  readonly id: TaskId
  readonly mode: "read_only" | "transactional_write"
  readonly writeScope?: ReadonlyArray<RelativePath>
  /** The changeset as read from its file (untrusted), `undefined` when the child exported none. */
  readonly changeset: unknown
  /** The directory of its blobs (`blobs/sha256/<hex>` below it). */
  readonly blobDirectory: string
}

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
  readonly children: ReadonlyArray<JoinChild>
  /** Told each child's outcome as soon as it is recorded (progress). */
  readonly onOutcome?: (outcome: ChildOutcome) => Effect.Effect<void>
}

/**
 * The statuses after which a child needs nothing more.
 *
 * @category models
 * @since 0.1.0
 */
export const SETTLED: ReadonlySet<ChildOutcomeStatus> = new Set(["applied", "auto_merged", "noop", "resolved", "discarded"])

/**
 * The merge status of a run from its outcomes: `blocked` while a child holds open conflicts,
 * `applied` when every child settled, `failed` when none did, `partial` otherwise.
 *
 * @category combinators
 * @since 0.1.0
 */
export const statusOf = (outcomes: ReadonlyArray<ChildOutcome>): MergeRunStatus => {
  if (outcomes.some((o) => o.status === "pending")) return "running"
  if (outcomes.some((o) => o.status === "conflicted_unresolved")) return "blocked"
  const settled = outcomes.filter((o) => SETTLED.has(o.status)).length
  if (settled === outcomes.length) return "applied"
  return settled === 0 ? "failed" : "partial"
}

/** The thread of the run, and of each child below it. */
const runThread = (runId: MergeRunId): ThreadId => ThreadId.make(runId)
const childThread = (runId: MergeRunId, childId: TaskId): ThreadId => ThreadId.make(`${runId}/${childId}`)
const JOIN_TURN = TurnId.make("join")

/** Child transactions this process committed (for the `merge:after-child` fault). */
let childTransactions = 0

/**
 * The transaction that applies one child (`subagent_merge:<run-id>/<task-id>`), or the whole
 * atomic join (`subagent_merge:<run-id>`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const transactionOf = (runId: MergeRunId, childId?: TaskId): TransactionId =>
  TransactionId.make(childId === undefined ? `subagent_merge:${runId}` : `subagent_merge:${runId}/${childId}`)

/**
 * The current time as a record timestamp (through `Clock`, so tests control it).
 *
 * @category constructors
 * @since 0.1.0
 */
export const now = Effect.map(Clock.currentTimeMillis, utcTimestampFromMillis)

/**
 * Records the run (every mutating child `pending`), registers its threads, then joins.
 *
 * @category constructors
 * @since 0.1.0
 */
export const start = Effect.fn("Join.start")(function*(options: JoinOptions) {
  const engine = yield* Engine
  const history = yield* HistoryStore
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
    schemaVersion: 1,
    runId: options.runId,
    environmentId: engine.environmentId,
    threadId: runThread(options.runId),
    callerThreadId: options.callerThreadId,
    runDirectory: options.runDirectory,
    atomic: options.atomic,
    ...(options.verify === undefined ? {} : { verify: options.verify }),
    status: "running",
    mergePlan,
    outcomes: options.children.filter((c) => c.mode === "transactional_write").map((c) => ({ childId: c.id, status: "pending" })),
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
  return yield* proceed(options.runId, options.children, options.onOutcome)
})

/**
 * The atomic join: every child planned in order against the files as the earlier children
 * leave them, then one transaction `subagent_merge:<run-id>` for all of them, or nothing.
 * A child that cannot be applied keeps its own status; the others are reported not applied.
 */
const proceedAtomic = (run: MergeRun, children: ReadonlyArray<JoinChild>) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const history = yield* HistoryStore
    const transactionId = transactionOf(run.runId)
    const pending = run.outcomes.filter((o) => o.status === "pending")
    const already = yield* history.recordsByTransaction(engine.environmentId, transactionId).pipe(Effect.mapError(storeFailure("Reading a transaction")))
    const byId = new Map(children.map((c) => [c.id, c]))
    if (already.length > 0) {
      return pending.map((o): Joined => ({ outcome: recoveredOutcome(o.childId, byId.get(o.childId), already, transactionId), conflicts: [] }))
    }
    const overrides = new Map<string, FileState>()
    const changed = new Set<RelativePath>()
    const steps: Array<NetChange.Step<Uint8Array, TaskId>> = []
    const planned: Array<{ readonly childId: TaskId; readonly joined: Joined; readonly ready: boolean }> = []
    for (const o of pending) {
      const child = byId.get(o.childId)
      if (child?.changeset === undefined) {
        planned.push({ childId: o.childId, joined: { outcome: { childId: o.childId, status: "missing_changeset", reason: "the child exported no changeset" }, conflicts: [] }, ready: false })
        continue
      }
      const checked = revalidate(child.changeset, { id: child.id, writeScope: child.writeScope ?? [] })
      if (Result.isFailure(checked)) {
        planned.push({ childId: o.childId, joined: { outcome: { childId: o.childId, status: checked.failure.status, reason: checked.failure.reason }, conflicts: [] }, ready: false })
        continue
      }
      const plan = yield* planFor(checked.success, child, changed, overrides)
      if (plan._tag === "Ready") {
        for (const f of plan.plan.files) {
          steps.push({ ...f, tag: child.id })
          if (f.moveFrom !== undefined) overrides.set(f.moveFrom, { _tag: "Missing" })
          overrides.set(f.path, f.after === undefined ? { _tag: "Missing" } : { _tag: "File", bytes: f.after })
          changed.add(f.path)
          if (f.moveFrom !== undefined) changed.add(f.moveFrom)
        }
        const merged = plan.autoMerged.length > 0
        planned.push({
          childId: o.childId,
          joined: { outcome: { childId: o.childId, status: merged ? "auto_merged" : "applied", transactionId, ...(merged ? { autoMergedPaths: plan.autoMerged } : {}) }, conflicts: [] },
          ready: true
        })
      } else if (plan._tag === "Noop") {
        planned.push({ childId: o.childId, joined: { outcome: { childId: o.childId, status: "noop" }, conflicts: [] }, ready: true })
      } else {
        planned.push({ childId: o.childId, joined: yield* settle(run, child, plan, transactionId), ready: false })
      }
    }
    const notApplied = (why: string) =>
      planned.map((p): Joined =>
        p.ready
          ? { outcome: { childId: p.childId, status: "apply_failed_rolled_back", reason: `atomic join: nothing was applied because ${why}` }, conflicts: [] }
          : p.joined
      )
    const blocking = planned.find((p) => !p.ready)
    if (blocking !== undefined) return notApplied(`child ${blocking.childId} was ${blocking.joined.outcome.status}`)
    const files = NetChange.pathChanges(NetChange.fold(steps, "path"), sameBytes, { moves: false, replace: false })
      .map((c): PlannedFile => ({ kind: c.kind, path: c.path, before: c.before, after: c.after }))
    if (files.length === 0) return planned.map((p) => p.joined)
    const plan = planOfFiles(files)
    const applied = yield* engine.applyPlan({
      threadId: runThread(run.runId),
      turnId: JOIN_TURN,
      transactionId,
      grant: Grants.full,
      links: { mergeRunId: run.runId },
      plan
    }).pipe(Effect.result)
    if (Result.isSuccess(applied)) return planned.map((p) => p.joined)
    const e = applied.failure
    if (e.code === "stale_file") {
      return planned.map((p): Joined => ({ outcome: { childId: p.childId, status: "baseline_drift", driftPaths: asPaths(e.paths), reason: e.message }, conflicts: [] }))
    }
    return notApplied(`the transaction failed (${e.code}: ${e.message})`)
  })

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
  if (run.atomic) {
    for (const joined of yield* proceedAtomic(run, children)) {
      yield* store.recordOutcome(runId, joined.outcome, joined.conflicts, yield* now).pipe(Effect.mapError(storeFailure("Recording a child's outcome")))
      yield* onOutcome(joined.outcome)
    }
    return yield* finishRun(runId)
  }
  const byId = new Map(children.map((c) => [c.id, c]))
  // Paths earlier children of this join changed: a later child's drift there is routed through diff3.
  const changed = new Set<RelativePath>()
  for (const o of run.outcomes) {
    if (o.status !== "pending") {
      if (o.transactionId !== undefined && SETTLED.has(o.status)) for (const p of yield* pathsOfTransaction(o.transactionId)) changed.add(p)
      continue
    }
    const child = byId.get(o.childId)
    const joined: Joined = child === undefined
      ? { outcome: { childId: o.childId, status: "missing_changeset", reason: "the child's changeset was not found" }, conflicts: [] }
      : yield* joinChild(run, child, changed)
    const outcome: ChildOutcome = run.verify !== undefined && joined.outcome.transactionId !== undefined && SETTLED.has(joined.outcome.status)
      ? yield* verifyChild(run, run.verify, joined.outcome)
      : joined.outcome
    yield* store.recordOutcome(runId, outcome, joined.conflicts, yield* now).pipe(Effect.mapError(storeFailure("Recording a child's outcome")))
    yield* onOutcome(outcome)
    if (outcome.transactionId !== undefined && SETTLED.has(outcome.status)) {
      for (const p of yield* pathsOfTransaction(outcome.transactionId)) changed.add(p)
    }
  }
  return yield* finishRun(runId)
})

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
 * The run as stored; an unknown id is `unknown_run`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const loadRun = (runId: MergeRunId) =>
  MergeStore.use((store) => store.getRun(runId)).pipe(
    Effect.mapError(storeFailure("Reading the merge run")),
    Effect.flatMap(Option.match({
      onNone: () => Effect.fail(new OrchestratorError({ code: "unknown_run", paths: [], message: `There is no merge run '${runId}' in this workspace's history; 'forkjoin status' lists the runs.` })),
      onSome: Effect.succeed
    }))
  )

/** The paths a transaction's records changed (both ends of a move). */
const pathsOfTransaction = (transactionId: TransactionId) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const history = yield* HistoryStore
    const records = yield* history.recordsByTransaction(engine.environmentId, transactionId).pipe(Effect.mapError(storeFailure("Reading a transaction")))
    return records.flatMap((r) => r.changes.flatMap((c) => (c.moveFrom === undefined ? [c.path] : [c.path, c.moveFrom])))
  })

/**
 * A child's outcome and the conflicts it holds back.
 *
 * @category models
 * @since 0.1.0
 */
export interface Joined {
  readonly outcome: ChildOutcome
  readonly conflicts: ReadonlyArray<ConflictRecord>
}

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
    let changeset: unknown = undefined
    try {
      changeset = JSON.parse(fs.readFileSync(path.join(namespace, "changeset.json"), "utf8"))
    } catch {
      // Missing or unreadable: the child is joined as `missing_changeset`.
    }
    const scope = run.mergePlan.writeScopes[o.childId]
    return {
      id: o.childId,
      mode: "transactional_write",
      ...(scope === undefined ? {} : { writeScope: scope }),
      changeset,
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
    if (child.changeset === undefined) return { outcome: { childId: child.id, status: "missing_changeset" }, conflicts: [] } satisfies Joined
    const checked = revalidate(child.changeset, { id: child.id, writeScope: child.writeScope ?? [] })
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

/**
 * The outcome of a child whose transaction history already holds (the process died after the
 * engine committed, before the outcome was stored), told from the record: a path the child
 * touched whose recorded content differs from the child's postimage was merged; a child none
 * of whose paths the record names changed nothing.
 */
const recoveredOutcome = (
  childId: TaskId,
  child: JoinChild | undefined,
  records: ReadonlyArray<PatchHistoryRecord>,
  transactionId: TransactionId
): ChildOutcome => {
  const checked = child?.changeset === undefined ? undefined : revalidate(child.changeset, { id: childId, writeScope: child.writeScope ?? [] })
  if (checked === undefined || Result.isFailure(checked)) return { childId, status: "applied", transactionId }
  const recorded = new Map(records.flatMap((r) => r.changes.map((c) => [c.path, c.after?.hash] as const)))
  const touched = checked.success.entries.filter((e) => recorded.has(e.path))
  if (touched.length === 0) return { childId, status: "noop" }
  const merged = touched.filter((e) => recorded.get(e.path) !== e.postimage?.hash).map((e) => e.path)
  return merged.length > 0 ? { childId, status: "auto_merged", transactionId, autoMergedPaths: merged } : { childId, status: "applied", transactionId }
}

/** One child: revalidate, read, plan, apply (or hold back), and say what happened. */
const joinChild = (run: MergeRun, child: JoinChild, changed: ReadonlySet<RelativePath>) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const history = yield* HistoryStore
    const transactionId = transactionOf(run.runId, child.id)
    // At most once: a crash after the engine committed but before the outcome was stored.
    const already = yield* history.recordsByTransaction(engine.environmentId, transactionId).pipe(Effect.mapError(storeFailure("Reading a transaction")))
    if (already.length > 0) return { outcome: recoveredOutcome(child.id, child, already, transactionId), conflicts: [] } satisfies Joined
    if (child.changeset === undefined) {
      return { outcome: { childId: child.id, status: "missing_changeset", reason: "the child exported no changeset (it did not finish cleanly)" }, conflicts: [] } satisfies Joined
    }
    const checked = revalidate(child.changeset, { id: child.id, writeScope: child.writeScope ?? [] })
    if (Result.isFailure(checked)) {
      return { outcome: { childId: child.id, status: checked.failure.status, reason: checked.failure.reason }, conflicts: [] } satisfies Joined
    }
    const planned = yield* planFor(checked.success, child, changed)
    if (planned._tag === "Drift") yield* recordGaps(run, child.id, checked.success, planned.paths)
    return yield* settle(run, child, planned, transactionId)
  })

/**
 * Records each drifted path as a `gap` (an outside change history did not see): compared with
 * history's last content, or with the child's preimage when history never saw the path.
 * Best effort: a failure here never changes the child's outcome.
 */
const recordGaps = (run: MergeRun, childId: TaskId, changeset: Changeset, paths: ReadonlyArray<RelativePath>) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    for (const p of paths) {
      const entry = changeset.entries.find((e) => (e.moveFrom ?? e.path) === p || e.path === p)
      const pre = entry?.preimage !== undefined && (entry.moveFrom ?? entry.path) === p ? entry.preimage : undefined
      const known = pre === undefined
        ? (entry?.kind === "add" && entry.path === p ? "absent" as const : undefined)
        : { hash: pre.hash, bytes: pre.bytes, encoding: pre.encoding, lineEnding: pre.lineEnding, finalNewline: pre.finalNewline, mode: pre.mode ?? 0o644 }
      yield* Gaps.detectGap(
        { environmentId: engine.environmentId, root: engine.root },
        { caller: childThread(run.runId, childId), turnId: JOIN_TURN, path: p, ...(known === undefined ? {} : { known }) }
      ).pipe(Effect.ignore)
    }
  })

/** Reads what `planChild` needs (live files, blobs, preimages of sibling-changed paths) and calls it. */
const planFor = (
  changeset: Changeset,
  child: JoinChild,
  changed: ReadonlySet<RelativePath>,
  overrides: ReadonlyMap<string, FileState> = new Map()
) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const history = yield* HistoryStore
    const paths = [...new Set(changeset.entries.flatMap((e) => (e.moveFrom === undefined ? [e.path] : [e.moveFrom, e.path])))]
    // Per path: a path the engine refuses to resolve (a symlink out, a denied name) reads as
    // something that can never match a preimage, so the child is drift, never written.
    const inspected = yield* engine.inspect(paths).pipe(Effect.orElseSucceed(() => new Map<string, Result.Result<Inspection, unknown>>()))
    const live = new Map<string, FileState>()
    for (const p of paths) {
      const r = inspected.get(p)
      live.set(p, r !== undefined && Result.isSuccess(r) ? r.success.state : { _tag: "Other", description: "unreadable" })
    }
    // The files as they are on disk, before an atomic join's earlier children (the overrides).
    const onDisk = new Map(live)
    for (const [p, state] of overrides) live.set(p, state)
    const blobs = yield* BlobStore.makeDirectory(child.blobDirectory, { fsync: false }).pipe(Effect.orElseSucceed(() => undefined))
    const post = new Map<string, Uint8Array>()
    for (const e of changeset.entries) {
      if (e.postimage === undefined || blobs === undefined) continue
      const bytes = yield* blobs.get(e.postimage.hash).pipe(Effect.result)
      if (Result.isSuccess(bytes)) post.set(e.postimage.hash, bytes.success)
      else if (bytes.failure.reason === "Corrupt") {
        return {
          _tag: "Invalid",
          paths: [e.path],
          reason: `the postimage blob of ${e.path} (${e.postimage.hash}) does not hold the bytes its hash names`
        } satisfies ChildPlanOutcome
      }
    }
    const pre = new Map<string, Uint8Array>()
    for (const e of changeset.entries) {
      const source = e.moveFrom ?? e.path
      if (!(changed.has(source) || changed.has(e.path))) continue
      // The bases of a merge: the child's preimage, and what a move overwrote at its destination.
      for (const [image, at] of [[e.preimage, source], [e.overwritten, e.path]] as const) {
        if (image === undefined || pre.has(image.hash)) continue
        const bytes = yield* history.getBlob(image.hash).pipe(Effect.option, Effect.map(Option.flatten))
        if (Option.isSome(bytes)) pre.set(image.hash, bytes.value)
        else {
          // Not in history yet (an atomic join writes nothing before its one transaction): the
          // file on disk is the base when it still hashes to the image.
          const disk = onDisk.get(at)
          if (disk?._tag === "File" && sha256(disk.bytes) === image.hash) pre.set(image.hash, disk.bytes)
        }
      }
    }
    return planChild({
      entries: changeset.entries,
      live: (p) => live.get(p) ?? { _tag: "Other", description: "unreadable" },
      postimage: (h: Sha256Hash) => post.get(h),
      preimage: (h: Sha256Hash) => pre.get(h),
      changedBySiblings: changed
    })
  })

/** Turns a plan outcome into the child's outcome, applying it through the engine when ready. */
const settle = (run: MergeRun, child: JoinChild, planned: ChildPlanOutcome, transactionId: TransactionId) =>
  Effect.gen(function*() {
    const base = { childId: child.id } as const
    switch (planned._tag) {
      case "Invalid":
        return { outcome: { ...base, status: "invalid_changeset", reason: planned.reason }, conflicts: [] } satisfies Joined
      case "Unverifiable":
        return { outcome: { ...base, status: "baseline_unverifiable", driftPaths: planned.paths, reason: planned.reason }, conflicts: [] } satisfies Joined
      case "Drift":
        return {
          outcome: { ...base, status: "baseline_drift", driftPaths: planned.paths, reason: `the live ${planned.paths.join(", ")} no longer match what the child started from` },
          conflicts: []
        } satisfies Joined
      case "Noop":
        return { outcome: { ...base, status: "noop" }, conflicts: [] } satisfies Joined
      case "Conflicted":
        return { outcome: { ...base, status: "conflicted_unresolved", conflictPaths: planned.conflicts.map((c) => c.path) }, conflicts: yield* conflictRecords(run, child.id, planned.conflicts) } satisfies Joined
      case "Ready": {
        const applied = yield* applyChildPlan(run.runId, child.id, planned.plan, transactionId).pipe(Effect.result)
        if (Result.isSuccess(applied)) {
          childTransactions += 1
          // Crash tests: the transaction is committed, its outcome not yet recorded.
          Fault.afterChild(childTransactions)
        }
        if (Result.isFailure(applied)) {
          const e = applied.failure
          if (e.code === "stale_file") {
            return { outcome: { ...base, status: "baseline_drift", driftPaths: asPaths(e.paths), reason: e.message }, conflicts: [] } satisfies Joined
          }
          const failed = asPaths(e.paths)[0]
          return {
            outcome: { ...base, status: "apply_failed_rolled_back", ...(failed === undefined ? {} : { failedPath: failed }), reason: `${e.code}: ${e.message}` },
            conflicts: []
          } satisfies Joined
        }
        return {
          outcome: {
            ...base,
            status: planned.autoMerged.length > 0 ? "auto_merged" : "applied",
            transactionId,
            ...(planned.autoMerged.length > 0 ? { autoMergedPaths: planned.autoMerged } : {})
          },
          conflicts: []
        } satisfies Joined
      }
    }
  })

// Engine error paths are workspace-relative; keep the ones that are valid relative paths.
const asPaths = (paths: ReadonlyArray<string>): Array<RelativePath> =>
  paths.flatMap((p) => {
    const n = normalizePath(p)
    return Result.isSuccess(n) ? [n.success] : []
  })

/** Runs the plan's verification after a child's transaction; a failure rolls that transaction back. */
const verifyChild = (run: MergeRun, verify: VerifyCommand, outcome: ChildOutcome) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const result = yield* Verify.run(verify, engine.root, Verify.logFile(run.runDirectory, outcome.childId))
    if (result.ok) return outcome
    const undone = yield* Rollback.rollbackTransaction(outcome.transactionId!, { threadId: runThread(run.runId) }).pipe(Effect.result)
    return {
      childId: outcome.childId,
      status: Result.isSuccess(undone) ? "verification_failed_rolled_back" : outcome.status,
      ...(outcome.transactionId === undefined ? {} : { transactionId: outcome.transactionId }),
      reason: Result.isSuccess(undone)
        ? `${result.summary}; the child's transaction was rolled back (log: ${result.log})`
        : `${result.summary}, and rolling the child back was refused: ${undone.failure.message}`
    } satisfies ChildOutcome
  })

/**
 * Applies one child's plan as its own transaction, in the child's thread, linked to the run.
 *
 * @category constructors
 * @since 0.1.0
 */
export const applyChildPlan = (runId: MergeRunId, childId: TaskId, plan: Plan, transactionId: TransactionId) =>
  Engine.use((engine) =>
    engine.applyPlan({
      threadId: childThread(runId, childId),
      turnId: JOIN_TURN,
      transactionId,
      // The plan's `before` of every path is the exact live content, checked under the lock.
      grant: Grants.full,
      links: { mergeRunId: runId },
      plan
    }))

/** Conflict values with their three sides stored in history, so resolving needs no child artifact. */
const conflictRecords = (
  run: MergeRun,
  childId: TaskId,
  conflicts: Extract<ChildPlanOutcome, { _tag: "Conflicted" }>["conflicts"]
) =>
  Effect.gen(function*() {
    const history = yield* HistoryStore
    const createdAt = yield* now
    const sides = conflicts.flatMap((c) => [c.base, c.ours, c.theirs].filter((s): s is Uint8Array => s !== undefined))
    yield* history.putBlobs(sides).pipe(Effect.mapError(storeFailure("Storing a conflict's sides")))
    return conflicts.map((c): ConflictRecord => ({
      schemaVersion: 1,
      conflictId: conflictIdOf(run.runId, childId, c.path),
      runId: run.runId,
      childId,
      path: c.path,
      reason: c.reason,
      ...(c.base === undefined ? {} : { base: snapshotOf(c.base, 0o644) }),
      ...(c.ours === undefined ? {} : { ours: snapshotOf(c.ours, 0o644) }),
      ...(c.theirs === undefined ? {} : { theirs: snapshotOf(c.theirs, 0o644) }),
      hunks: c.hunks,
      text: c.text,
      status: "open",
      createdAt
    }))
  })
