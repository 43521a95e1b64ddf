/**
 * The join of a cluster run as a durable workflow on the parent (`effect/workflow` on effect's
 * workflow engine): one activity per child, in task order (revalidate, baseline-check, merge and
 * apply as `subagent_merge:<run>/<task>`, record: `Join.proceedChild`), then one that stores the
 * run's status. Each activity's result is kept in the run's own SQLite file
 * (`<run folder>/join.db`), so a parent killed at any point and resumed (`forkjoin run
 * --resume`) replays the finished activities from there and runs the interrupted one again; that
 * one finds its transaction in the history if it had committed, so every child is applied at
 * most once. Should the workflow itself fail, each applied child is rolled back strictly
 * (`rollback --strict`: never a merge backwards), newest first.
 *
 * Its commits do not wait for the disk (`durability: "normal"`): each step is redone safely from
 * the history if a power loss drops it, and waiting for the disk cost a third of a cluster
 * run's time per child. The engine runs in the parent's process only (a single-process cluster of its own, no network):
 * the join writes the parent's workspace, which no runner may. One file per run, opened only by
 * the process holding the run's lock.
 *
 * @since 0.1.0
 */
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as Fault from "@forkjoin/engine/Fault"
import type { Engine } from "@forkjoin/engine/Engine"
import type { HistoryContent, HistoryRecords } from "@forkjoin/history/HistoryStore"
import type { Sqlite } from "@forkjoin/history/Sqlite"
import { MergeStore } from "@forkjoin/history/MergeStore"
import * as Join from "@forkjoin/orchestrator/Join"
import { OrchestratorError } from "@forkjoin/orchestrator/OrchestratorError"
import * as Rollback from "@forkjoin/orchestrator/Rollback"
import { type MergeRunId, MergeRunId as MergeRunIdSchema } from "@forkjoin/schema/Ids"
import { ChildOutcome } from "@forkjoin/schema/MergeRun"
import * as ClusterWorkflowEngine from "effect/cluster/ClusterWorkflowEngine"
import * as RunnerHealth from "effect/cluster/RunnerHealth"
import * as Runners from "effect/cluster/Runners"
import * as RunnerStorage from "effect/cluster/RunnerStorage"
import * as Sharding from "effect/cluster/Sharding"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as SqlMessageStorage from "effect/cluster/SqlMessageStorage"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Activity from "effect/workflow/Activity"
import * as Workflow from "effect/workflow/Workflow"
import * as fs from "node:fs"
import * as ClusterStorage from "./ClusterStorage.ts"
import { stateFile } from "./JoinState.ts"

/**
 * The workflow: its payload is the run id (also its idempotency key: one execution per run).
 *
 * @category models
 * @since 0.1.0
 */
export const JoinWorkflow = Workflow.make("forkjoin/Join", {
  payload: { runId: Schema.String },
  idempotencyKey: (payload) => payload.runId,
  error: OrchestratorError
})

/** What the first execution of a run knows that a resumed one reads back (`Join.childrenOf`). */
interface Started {
  readonly children: ReadonlyArray<Join.JoinChild>
  readonly onOutcome: (outcome: ChildOutcome) => Effect.Effect<void>
  readonly changed: Join.Changed
}

// The runs started by this process: their children as the run staged them, and progress.
const started = new Map<string, Started>()

/**
 * What undoes a settled child if the workflow fails after it: its strict rollback (never a merge
 * backwards), then its outcome says so. A rollback that is refused (a file changed since) leaves
 * the child applied and its outcome as it was.
 */
const compensation = (runId: MergeRunId) => (outcome: ChildOutcome, cause: Cause.Cause<unknown>) =>
  outcome.transactionId === undefined || !Join.SETTLED.has(outcome.status)
    ? Effect.void
    : Effect.gen(function*() {
      const store = yield* MergeStore
      yield* Rollback.rollbackTransaction(outcome.transactionId!, { threadId: Join.runThread(runId), strict: true })
      const reason = `the join failed after this child (${Cause.pretty(cause).split("\n")[0]}), so its merge was rolled back (strictly); run the plan again`
      yield* store.recordOutcome(runId, { ...outcome, status: "apply_failed_rolled_back", reason }, [], yield* Join.now)
    }).pipe(Effect.ignore)

const body = (payload: { readonly runId: string }) =>
  Effect.gen(function*() {
    const runId = MergeRunIdSchema.make(payload.runId)
    const run = yield* Join.loadRun(runId)
    const known = started.get(runId)
    const children = known?.children ?? Join.childrenOf(run)
    const onOutcome = known?.onOutcome ?? (() => Effect.void)
    const changed: Join.Changed = known?.changed ?? { paths: undefined }
    if (run.atomic) {
      // An atomic join is one transaction already: one activity.
      yield* Activity.make({ name: "join:atomic", error: OrchestratorError, execute: Effect.asVoid(Join.proceed(runId, children, onOutcome)) })
      return
    }
    const byId = new Map(children.map((c) => [c.id, c]))
    for (const [i, o] of run.outcomes.entries()) {
      if (yield* Fault.joinFailsAfter(i)) {
        return yield* new OrchestratorError({ code: "store_unavailable", paths: [], message: `injected failure after child ${i} (join:fail-after-child)` })
      }
      yield* Activity.make({
        name: `join:${o.childId}`,
        success: ChildOutcome,
        error: OrchestratorError,
        execute: Join.proceedChild(runId, byId.get(o.childId), o.childId, onOutcome, changed)
      }).pipe(Workflow.withCompensation(compensation(runId)))
    }
    yield* Activity.make({ name: "join:finish", error: OrchestratorError, execute: Effect.asVoid(Join.finish(runId)) })
  })

/** The workflow engine over `file`: a single-process cluster of the parent's own, no network. */
const engineLayer = (file: string) => {
  const config = ShardingConfig.layer({
    ...ShardingConfig.defaults,
    // Unprocessed steps of a killed parent are picked up soon after the resumed one starts.
    entityMessagePollInterval: Duration.millis(250),
    entityReplyPollInterval: Duration.millis(20),
    simulateRemoteSerialization: false
  })
  const single = Sharding.layer.pipe(
    Layer.provideMerge(Runners.layerNoop),
    Layer.provideMerge(SqlMessageStorage.layer),
    Layer.provide([RunnerStorage.layerMemory, RunnerHealth.layerNoop]),
    Layer.provide(config)
  )
  return ClusterWorkflowEngine.layer.pipe(
    Layer.provideMerge(single),
    Layer.provide(ClusterStorage.layerSqlClient({ _tag: "Sqlite", path: file, display: `sqlite:${file}` }, "/", "normal")),
    Layer.provide(NodeCrypto.layerDigest)
  )
}

const unavailable = (file: string) => (cause: { readonly message: string }) =>
  new OrchestratorError({
    code: "join_state_unavailable",
    paths: [file],
    message: `the join's state file ${file} cannot be opened (${cause.message}); check the run folder's space and permissions, then run --resume`,
    cause
  })

/**
 * Joins a recorded run through the workflow (a `Join.Proceed`): starts it, or resumes the one
 * a killed parent left, and returns the run as stored afterwards.
 *
 * @category constructors
 * @since 0.1.0
 */
export const proceed: Join.Proceed = (runId, children, onOutcome) =>
  Effect.scoped(Effect.gen(function*() {
    const run = yield* Join.loadRun(runId)
    const file = stateFile(run.runDirectory)
    yield* Effect.sync(() => fs.mkdirSync(run.runDirectory, { recursive: true }))
    started.set(runId, { children, onOutcome, changed: { paths: undefined } })
    yield* Effect.addFinalizer(() => Effect.sync(() => started.delete(runId)))
    const context = yield* Effect.context<MergeStore | Engine | HistoryRecords | HistoryContent | Sqlite>()
    const built = yield* Layer.build(JoinWorkflow.toLayer(body).pipe(Layer.provideMerge(engineLayer(file)), Layer.provide(Layer.succeedContext(context)))).pipe(
      Effect.mapError(unavailable(file))
    )
    // A failed workflow has rolled its children back: the run's status says so, then the error.
    yield* JoinWorkflow.execute({ runId }).pipe(Effect.provideContext(built), Effect.tapError(() => Effect.ignore(Join.finish(runId))))
    return yield* Join.loadRun(runId)
  }))
