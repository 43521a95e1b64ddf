/**
 * Fault injection for crash and failure tests: the `Faults` reference of the running fiber, none
 * by default. Only a sealed `FORKJOIN_FAULT` (`FaultChannel.ts`) installs it; the variable alone
 * never does. Its forms (several faults comma-separated):
 * - `stage:<N>`: SIGKILL right after engine stage N;
 * - `commit:after-rename:<k>`: SIGKILL right after the k-th rename of a commit;
 * - `merge:write-fail:<task-id>:<k>`: the k-th write of that child's join transaction
 *   (`subagent_merge:<run-id>/<task-id>`) fails with an I/O error (EIO);
 * - `merge:after-child:<n>`: SIGKILL right after the n-th child's join transaction;
 * - `verify:after-rollback:<n>`: SIGKILL right after the n-th rollback of a failed
 *   verification, before the child's outcome is recorded;
 * - `resolve:after-claim`: SIGKILL right after `forkjoin resolve` found, under the workspace
 *   lock, that the conflict is still its to resolve, before its transaction is journaled (a
 *   held rollback's: right after its last resolution is recorded, before the rollback is applied);
 * - `resolve:before-record`: SIGKILL right after the resolution's transaction committed, still
 *   under the lock, before the resolution is recorded on the conflict;
 * - `resolve:after-commit`: SIGKILL right after the resolution's transaction committed and was
 *   recorded, before the child's other changes are applied;
 * - `runner:before-upload:<n>` / `runner:after-upload:<n>`: a cluster runner SIGKILLs itself in
 *   its n-th child attempt (1-based, per process) right before / right after sending the
 *   child's changeset to the parent, before it answers;
 * - `join:fail-after-child:<n>`: a cluster run's durable join fails after its n-th child (as an
 *   unrecoverable error would), so its compensations (strict rollbacks) run;
 * - `join:skip-baseline`: the join takes a child's live files as its baseline, so drift from
 *   an outside edit is no longer refused (test-only: the merge probe must then report
 *   `baseline_drift_refused` failed).
 * Nothing else depends on it; the default plan injects nothing.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as nodeFs from "node:fs"

/**
 * The parsed faults of this process.
 *
 * @category models
 * @since 0.1.0
 */
export interface FaultPlan {
  readonly afterStage: ReadonlySet<number>
  readonly afterRename: ReadonlySet<number>
  readonly writeFail: ReadonlyMap<string, number>
  readonly afterChild: ReadonlySet<number>
  readonly afterVerifyRollback: ReadonlySet<number>
  readonly resolve: ReadonlySet<ResolvePoint>
  readonly runnerUpload: ReadonlyMap<RunnerPoint, ReadonlySet<number>>
  readonly failJoinAfter: ReadonlySet<number>
  readonly skipBaseline: boolean
}

/**
 * Where a cluster runner's attempt can be killed (`runner:<point>:<n>`).
 *
 * @category models
 * @since 0.1.0
 */
export type RunnerPoint = "before-upload" | "after-upload"

const FORMS = "'stage:<N>', 'commit:after-rename:<k>', 'merge:write-fail:<task-id>:<k>', 'merge:after-child:<n>', 'verify:after-rollback:<n>', 'resolve:after-claim', 'resolve:before-record', 'resolve:after-commit', 'runner:before-upload:<n>', 'runner:after-upload:<n>', 'join:fail-after-child:<n>' or 'join:skip-baseline'"

/**
 * Where `forkjoin resolve` can be killed (`resolve:<point>`).
 *
 * @category models
 * @since 0.1.0
 */
export type ResolvePoint = "after-claim" | "before-record" | "after-commit"

const RESOLVE_POINTS: ReadonlyArray<ResolvePoint> = ["after-claim", "before-record", "after-commit"]

/**
 * Parses a `FORKJOIN_FAULT` value; an unparsable fault is a start-up error naming it.
 *
 * @category constructors
 * @since 0.1.0
 */
export const parseFault = (value: string | undefined): FaultPlan => {
  const afterStage = new Set<number>()
  const afterRename = new Set<number>()
  const writeFail = new Map<string, number>()
  const afterChild = new Set<number>()
  const afterVerifyRollback = new Set<number>()
  const resolve = new Set<ResolvePoint>()
  const runnerUpload = new Map<RunnerPoint, Set<number>>([["before-upload", new Set()], ["after-upload", new Set()]])
  const failJoinAfter = new Set<number>()
  let skipBaseline = false
  for (const fault of (value ?? "").split(",").map((f) => f.trim()).filter((f) => f !== "")) {
    const stage = /^stage:(\d+)$/.exec(fault)
    const rename = /^commit:after-rename:(\d+)$/.exec(fault)
    const write = /^merge:write-fail:([A-Za-z0-9_][A-Za-z0-9._-]*):(\d+)$/.exec(fault)
    const child = /^merge:after-child:(\d+)$/.exec(fault)
    const verifyRollback = /^verify:after-rollback:(\d+)$/.exec(fault)
    const point = RESOLVE_POINTS.find((p) => fault === `resolve:${p}`)
    const runner = /^runner:(before-upload|after-upload):(\d+)$/.exec(fault)
    const joinFail = /^join:fail-after-child:(\d+)$/.exec(fault)
    if (stage !== null) afterStage.add(Number(stage[1]))
    else if (rename !== null) afterRename.add(Number(rename[1]))
    else if (write !== null) writeFail.set(write[1]!, Number(write[2]))
    else if (child !== null) afterChild.add(Number(child[1]))
    else if (verifyRollback !== null) afterVerifyRollback.add(Number(verifyRollback[1]))
    else if (point !== undefined) resolve.add(point)
    else if (runner !== null) runnerUpload.get(runner[1] === "before-upload" ? "before-upload" : "after-upload")!.add(Number(runner[2]))
    else if (joinFail !== null) failJoinAfter.add(Number(joinFail[1]))
    else if (fault === "join:skip-baseline") skipBaseline = true
    else throw new Error(`FORKJOIN_FAULT: '${fault}' is not ${FORMS}`)
  }
  return { afterStage, afterRename, writeFail, afterChild, afterVerifyRollback, resolve, runnerUpload, failJoinAfter, skipBaseline }
}

/**
 * The faults of the current fiber: none unless the process was started through the fault
 * channel (`FaultChannel.open`), which provides them around its whole program.
 *
 * @category services
 * @since 0.1.0
 */
export const Faults: Context.Reference<FaultPlan> = Context.Reference<FaultPlan>("forkjoin/engine/Fault/Faults", {
  defaultValue: () => parseFault(undefined)
})

const die = (): never => {
  process.kill(process.pid, "SIGKILL")
  // SIGKILL is not catchable; this only satisfies the type checker.
  throw new Error("unreachable")
}

/** Kills the process when the current faults `hit`. */
const killIf = (hit: (plan: FaultPlan) => boolean): Effect.Effect<void> =>
  Effect.flatMap(Faults, (plan) => (hit(plan) ? Effect.sync(die) : Effect.void))

/**
 * Run by the engine after each stage.
 *
 * @category fault injection
 * @since 0.1.0
 */
export const afterStage = (stage: number): Effect.Effect<void> => killIf((plan) => plan.afterStage.has(stage))

/**
 * The check the commit step calls after each rename (1-based).
 *
 * @category fault injection
 * @since 0.1.0
 */
export const afterRename: Effect.Effect<(k: number) => void> = Effect.map(Faults, (plan) => (k: number) => {
  if (plan.afterRename.has(k)) die()
})

/**
 * Run by the join after the n-th child's transaction (1-based, counted per process).
 *
 * @category fault injection
 * @since 0.1.0
 */
export const afterChild = (n: number): Effect.Effect<void> => killIf((plan) => plan.afterChild.has(n))

/**
 * Run by the join after the n-th rollback of a failed verification (1-based, per process).
 *
 * @category fault injection
 * @since 0.1.0
 */
export const afterVerifyRollback = (n: number): Effect.Effect<void> => killIf((plan) => plan.afterVerifyRollback.has(n))

/**
 * Run by `forkjoin resolve` at each of its points.
 *
 * @category fault injection
 * @since 0.1.0
 */
export const atResolve = (point: ResolvePoint): Effect.Effect<void> => killIf((plan) => plan.resolve.has(point))

/**
 * Run by a cluster runner around its n-th attempt's upload (1-based, per process).
 *
 * @category fault injection
 * @since 0.1.0
 */
export const atRunnerUpload = (point: RunnerPoint, n: number): Effect.Effect<void> =>
  killIf((plan) => plan.runnerUpload.get(point)?.has(n) === true)

/**
 * Whether a durable join should fail after its n-th child (`join:fail-after-child:<n>`).
 *
 * @category fault injection
 * @since 0.1.0
 */
export const joinFailsAfter = (n: number): Effect.Effect<boolean> => Effect.map(Faults, (plan) => plan.failJoinAfter.has(n))

/**
 * Whether the join should skip verifying children's baselines (`join:skip-baseline`): a
 * deliberately broken join, only so a test can show the probe catches it.
 *
 * @category fault injection
 * @since 0.1.0
 */
export const skipBaseline: Effect.Effect<boolean> = Effect.map(Faults, (plan) => plan.skipBaseline)

/** The writes the commit step makes. */
type WriteIo = Pick<typeof nodeFs, "renameSync" | "unlinkSync">

/**
 * `io` as the commit step of `transactionId` should use it: unchanged, unless a
 * `merge:write-fail` fault names this child's join transaction; then its k-th write throws EIO.
 *
 * @category fault injection
 * @since 0.1.0
 */
export const writerFor = <Io extends WriteIo>(io: Io, transactionId: string): Effect.Effect<Io> =>
  Effect.map(Faults, (plan) => failingWriter(io, transactionId, plan))

const failingWriter = <Io extends WriteIo>(io: Io, transactionId: string, plan: FaultPlan): Io => {
  const slash = transactionId.lastIndexOf("/")
  const k = transactionId.startsWith("subagent_merge:") && slash > 0 ? plan.writeFail.get(transactionId.slice(slash + 1)) : undefined
  if (k === undefined) return io
  let writes = 0
  const fail = () => {
    writes += 1
    if (writes === k) throw Object.assign(new Error(`EIO: i/o error (injected fault merge:write-fail, write ${k})`), { code: "EIO" })
  }
  return {
    ...io,
    renameSync: (from: nodeFs.PathLike, to: nodeFs.PathLike) => {
      fail()
      io.renameSync(from, to)
    },
    unlinkSync: (p: nodeFs.PathLike) => {
      fail()
      io.unlinkSync(p)
    }
  }
}
