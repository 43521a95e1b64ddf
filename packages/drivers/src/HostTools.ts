/**
 * The orchestration tools a model (the parent of `forkjoin agent`) or an MCP client calls
 * beyond the session's own actions: `run_subagents` (a plan's children run and joined through
 * `runPlan`, so mutating children pass the autonomy gate exactly as `forkjoin run`'s do; prompt
 * tasks driven by the configured model), `resolve_conflict`, `rollback_transaction`, the
 * history views and the gate's decision. Every tool decodes its untrusted arguments strictly
 * and answers with an observation: a refusal (bad arguments, the gate, a stale file) is
 * `ok: false` with a stable code, never a failure. A join that held conflicts back is a
 * refusal naming them, and `beforeFinish` refuses `finish` while any is open. Rollback and
 * resolution are scoped to the caller's thread and the threads below it
 * (`@forkjoin/orchestrator/Visibility`): another thread's id is refused exactly as an unknown one.
 *
 * Owns turning tool calls into orchestrator calls and observations. Does not own the join,
 * conflicts or rollback (`@forkjoin/orchestrator`) nor the history views (`@forkjoin/history`).
 *
 * @since 0.1.0
 */
import type { Env } from "@forkjoin/autonomy/Config"
import * as Gate from "@forkjoin/autonomy/Gate"
import { Engine } from "@forkjoin/engine/Engine"
import type { HistoryServices } from "@forkjoin/history/HistoryStore"
import type { MergeStore } from "@forkjoin/history/MergeStore"
import type { Sqlite } from "@forkjoin/history/Sqlite"
import * as Views from "@forkjoin/history/Views"
import { HistoryViews } from "@forkjoin/history/Views"
import * as Conflicts from "@forkjoin/orchestrator/Conflicts"
import * as Rollback from "@forkjoin/orchestrator/Rollback"
import * as OrchestratorRun from "@forkjoin/orchestrator/Run"
import * as Visibility from "@forkjoin/orchestrator/Visibility"
import { type Observation, ok, refused } from "@forkjoin/runtime/Action"
import { PromptDriver } from "@forkjoin/runtime/Driver"
import * as RunPlan from "@forkjoin/runtime/RunPlan"
import { ConflictId, type MergeRunId, type ThreadId, TransactionId } from "@forkjoin/schema"
import type * as LanguageModel from "effect/ai/LanguageModel"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { confineChangesetFiles } from "./internal/changesetFile.ts"
import * as ModelDriver from "./ModelDriver.ts"
import * as Tools from "./Tools.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * Limits of a model session (parent or child).
 *
 * @category models
 * @since 0.1.0
 */
export interface Limits {
  /** Input plus output tokens (default: unlimited). */
  readonly tokenBudget?: number | undefined
  /** Tool calls before the session stops (default 200). */
  readonly maxSteps?: number | undefined
  /** Wall-clock budget of the session in ms (default 30 minutes for the parent, 10 for a child). */
  readonly timeoutMs?: number | undefined
}

/**
 * How the host tools run: the caller's thread (children are registered below it), the model
 * for prompt tasks (or why there is none), child limits, admission and progress.
 *
 * @category models
 * @since 0.1.0
 */
export interface HostOptions {
  readonly threadId: ThreadId
  readonly model?: LanguageModel.LanguageModel | undefined
  /** Why no model is available, for the refusal of a prompt task. */
  readonly modelUnavailable?: string | undefined
  readonly child?: Limits | undefined
  readonly admission?: OrchestratorRun.Admission | undefined
  readonly progress?: ((line: string) => Effect.Effect<void>) | undefined
  /** The environment the gate reads (default `process.env`). */
  readonly env?: Env | undefined
}

/**
 * The host tools, `finish`'s check, and the joins run so far.
 *
 * @category models
 * @since 0.1.0
 */
export interface HostTools {
  readonly tools: {
    readonly run_subagents: ModelDriver.HostTool
    readonly resolve_conflict: ModelDriver.HostTool
    readonly rollback_transaction: ModelDriver.HostTool
    readonly history_timeline: ModelDriver.HostTool
    readonly history_file: ModelDriver.HostTool
    readonly gate_decision: ModelDriver.HostTool
  }
  readonly beforeFinish: Effect.Effect<Observation | undefined>
  readonly runs: () => ReadonlyArray<OrchestratorRun.RunOutcome>
}

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

const childSystem = (task: RunPlan.Task): string =>
  task.mode === "read_only"
    ? "You are a read-only forkjoin child: read and list files to answer the task, then call finish. You cannot change files."
    : `You are a forkjoin child. You may change only paths inside your write scope: ${task.writeScope!.join(", ")}. ` +
      "Your edits are staged and joined into the shared workspace when you call finish; a refused action tells you why."

const decodeArgs = <S extends Schema.Codec<unknown>>(schema: S, name: string, params: unknown) => {
  const r = Schema.decodeUnknownResult(schema, { onExcessProperty: "error", errors: "first" })(params)
  return Result.isFailure(r)
    ? Result.fail(refused("invalid_action", `${name}: ${r.failure.message.split("\n")[0] ?? "invalid arguments"}`, { params }))
    : Result.succeed(r.success as S["Type"])
}

const unknownTransaction = (id: string): Observation =>
  refused("unknown_transaction", `There is no transaction '${id}' in this session's thread or below it; history_timeline lists them.`)

const unknownConflict = (id: string): Observation =>
  refused("unknown_conflict", `There is no conflict '${id}' in this session's thread or below it; run_subagents' result names the open ones.`)

const failureObservation = (
  e: { readonly _tag: string; readonly message: string; readonly code?: unknown; readonly paths?: unknown; readonly conflictIds?: unknown }
): Observation =>
  refused(
    typeof e.code === "string" ? e.code : e._tag,
    e.message,
    e.paths === undefined ? null : { paths: e.paths, ...(e.conflictIds === undefined ? {} : { conflictIds: e.conflictIds }) }
  )

/**
 * A join as a caller reads it: per child status, open conflicts, and what to do next.
 *
 * @category constructors
 * @since 0.1.0
 */
export const joinObservation = (o: OrchestratorRun.RunOutcome): Observation => {
  const open = o.conflicts.filter((c) => c.status === "open")
  const data = {
    runId: o.runId,
    status: o.run.status,
    children: o.run.outcomes.map((c) => ({
      id: c.childId,
      status: c.status,
      ...(c.transactionId === undefined ? {} : { transactionId: c.transactionId }),
      ...(c.reason === undefined ? {} : { reason: c.reason })
    })),
    sessions: o.results.map((r) => ({ id: r.id, status: r.status, steps: r.observations.length })),
    openConflicts: open.map((c) => ({ conflictId: c.conflictId, childId: c.childId, path: c.path, reason: c.reason }))
  }
  return open.length > 0
    ? refused(
      "unresolved_subagent_conflicts",
      `The join held back ${open.length} conflict(s) (${open.map((c) => `${c.conflictId} on ${c.path}`).join(", ")}); ` +
        "resolve each with resolve_conflict before finish.",
      data
    )
    : o.finish.ok
    ? ok(`Joined: ${o.run.outcomes.map((c) => `${c.childId} ${c.status}`).join(", ")}.`, data)
    : refused(o.finish.code, `The join ended ${o.run.status}: ${o.finish.message}`, data)
}

/**
 * A `PromptDriver` running each prompt task as a model session with the child's tools.
 *
 * @category constructors
 * @since 0.1.0
 */
export const promptDriver = (
  model: LanguageModel.LanguageModel,
  limits: Limits = {},
  progress?: (line: string) => Effect.Effect<void>
): PromptDriver["Service"] =>
  PromptDriver.of({
    forTask: (task) =>
      ModelDriver.make({
        model,
        system: childSystem(task),
        task: task.prompt ?? "",
        tools: task.mode === "read_only" ? Tools.readOnlyTools : Tools.childTools,
        tokenBudget: limits.tokenBudget,
        maxSteps: limits.maxSteps,
        onStep: progress,
        label: task.id
      }).driver
  })

/**
 * The host tools over the engine's workspace.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: HostOptions): Effect.Effect<HostTools, never, Engine | HistoryServices | MergeStore | Sqlite> =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const views = yield* Views.make({ environmentId: engine.environmentId, root: engine.root })
    const runs: Array<OrchestratorRun.RunOutcome> = []
    const runIds: Array<MergeRunId> = []
    const childLimits = options.child ?? {}
    const prompted = options.model === undefined ? undefined : promptDriver(options.model, childLimits, options.progress)
    const context = yield* Effect.context<Engine | HistoryServices | MergeStore | Sqlite>()

    const runSubagents: ModelDriver.HostTool = (params) =>
      Effect.gen(function*() {
        const args = decodeArgs(Tools.RunSubagentsArgs, "run_subagents", params)
        if (Result.isFailure(args)) return args.failure
        const plan = RunPlan.decode({
          schemaVersion: 1,
          tasks: args.success.tasks.map((t) => ({
            ...t,
            ...(t.timeoutMs === undefined && childLimits.timeoutMs !== undefined ? { timeoutMs: childLimits.timeoutMs } : {})
          })),
          ...(args.success.atomic === undefined ? {} : { atomic: args.success.atomic })
        })
        if (Result.isFailure(plan)) return refused("invalid_plan", `run_subagents: ${plan.failure.message}`, { path: plan.failure.path })
        const confined = yield* confineChangesetFiles(plan.success.tasks)
        if (confined !== undefined) return confined
        const prompts = plan.success.tasks.filter((t) => t.prompt !== undefined).map((t) => t.id)
        if (prompts.length > 0 && prompted === undefined) {
          return refused(
            "no_model_configured",
            `run_subagents: task(s) ${prompts.join(", ")} have a prompt but no model is configured to drive them ` +
              `(${options.modelUnavailable ?? "no model"}); nothing was started. Configure \"models\" in forkjoin.config.json ` +
              "or OPENAI_BASE_URL/OPENAI_API_KEY, or give the tasks scripted \"actions\" or a \"changesetFile\".",
            { taskIds: prompts }
          )
        }
        const outcome = yield* OrchestratorRun.runPlan(plan.success, {
          callerThreadId: options.threadId,
          // `changesetFile` paths are workspace-relative and were confined above.
          planDirectory: engine.root,
          ...(options.admission === undefined ? {} : { admission: options.admission }),
          ...(options.progress === undefined ? {} : { progress: options.progress })
        }).pipe((e) => (prompted === undefined ? e : Effect.provideService(e, PromptDriver, prompted)), Effect.result)
        if (Result.isFailure(outcome)) return failureObservation(outcome.failure)
        runs.push(outcome.success)
        runIds.push(outcome.success.runId)
        return joinObservation(outcome.success)
      }).pipe(Effect.provide(context))

    const resolveConflict: ModelDriver.HostTool = (params) =>
      Effect.gen(function*() {
        const args = decodeArgs(Tools.ResolveConflictArgs, "resolve_conflict", params)
        if (Result.isFailure(args)) return args.failure
        const a = args.success
        if ((a.resolution === "content") !== (a.content !== undefined)) {
          return refused("invalid_action", "resolve_conflict: \"content\" is required with the resolution \"content\" and not allowed with the others.")
        }
        const id = Schema.decodeUnknownResult(ConflictId)(a.conflictId)
        if (Result.isFailure(id)) return unknownConflict(a.conflictId)
        // Another thread's conflict is refused exactly as an unknown one: existence is not told.
        const visible = yield* Visibility.visibleConflict(options.threadId, id.success).pipe(Effect.provideService(HistoryViews, views), Effect.result)
        if (Result.isFailure(visible)) return failureObservation(visible.failure)
        if (Option.isNone(visible.success)) return unknownConflict(a.conflictId)
        const done = yield* Conflicts.resolve(
          id.success,
          a.resolution === "content" ? { kind: "content", bytes: new TextEncoder().encode(a.content ?? "") } : { kind: a.resolution }
        ).pipe(Effect.result)
        if (Result.isFailure(done)) return failureObservation(done.failure)
        const held = done.success.rollback
        if (held !== undefined) {
          return ok(
            held.open > 0
              ? `Conflict ${a.conflictId} resolved (${a.resolution}); the rollback of ${held.transactionId} waits for ${held.open} more.`
              : `Conflict ${a.conflictId} resolved (${a.resolution}); ${held.transactionId} is rolled back.`,
            { ...(done.success.record === undefined ? {} : { transactionId: done.success.record.transactionId }), rollbackOf: held.transactionId, openConflicts: held.open }
          )
        }
        const open = (yield* Conflicts.list({ status: "open" }).pipe(Effect.orElseSucceed(() => [])))
          .filter((c) => c.runId !== undefined && runIds.includes(c.runId))
        return ok(
          `Conflict ${a.conflictId} resolved (${a.resolution}); ${open.length} conflict(s) still open.`,
          {
            ...(done.success.record === undefined ? {} : { transactionId: done.success.record.transactionId }),
            ...(done.success.outcome === undefined ? {} : { child: done.success.outcome }),
            openConflicts: open.map((c) => ({ conflictId: c.conflictId, childId: c.childId, path: c.path }))
          }
        )
      }).pipe(Effect.provide(context))

    const rollback: ModelDriver.HostTool = (params) =>
      Effect.gen(function*() {
        const args = decodeArgs(Tools.RollbackArgs, "rollback_transaction", params)
        if (Result.isFailure(args)) return args.failure
        const id = Schema.decodeUnknownResult(TransactionId)(args.success.transactionId)
        if (Result.isFailure(id)) return unknownTransaction(args.success.transactionId)
        // Another thread's transaction is refused exactly as an unknown one: existence is not told.
        const visible = yield* Visibility.seesTransaction(options.threadId, id.success).pipe(Effect.provideService(HistoryViews, views), Effect.result)
        if (Result.isFailure(visible)) return failureObservation(visible.failure)
        if (!visible.success) return unknownTransaction(args.success.transactionId)
        const record = yield* Rollback.rollbackTransaction(id.success, { threadId: options.threadId, strict: args.success.strict === true }).pipe(Effect.result)
        if (Result.isFailure(record)) return failureObservation(record.failure)
        return ok(`Rolled back as transaction ${record.success.transactionId}.`, {
          transactionId: record.success.transactionId,
          changes: record.success.changes.map((c) => `${c.kind} ${c.path}`)
        })
      }).pipe(Effect.provide(context))

    const timeline: ModelDriver.HostTool = (params) => {
      const args = decodeArgs(Tools.TimelineArgs, "history_timeline", params)
      if (Result.isFailure(args)) return Effect.succeed(args.failure)
      return views.timeline({ caller: options.threadId, thread: args.success.thread, cursor: args.success.cursor, descendants: true }).pipe(
        Effect.match({ onFailure: failureObservation, onSuccess: (page) => ok(`${page.items.length} record(s).`, page) })
      )
    }

    const fileHistory: ModelDriver.HostTool = (params) => {
      const args = decodeArgs(Tools.FileHistoryArgs, "history_file", params)
      if (Result.isFailure(args)) return Effect.succeed(args.failure)
      return views.file({ caller: options.threadId, path: args.success.path, cursor: args.success.cursor }).pipe(
        Effect.match({ onFailure: failureObservation, onSuccess: (page) => ok(`History of ${args.success.path}.`, page) })
      )
    }

    const beforeFinish = Effect.gen(function*() {
      if (runIds.length === 0) return undefined
      const open = (yield* Conflicts.list({ status: "open" }).pipe(Effect.orElseSucceed(() => []))).filter((c) => c.runId !== undefined && runIds.includes(c.runId))
      if (open.length === 0) return undefined
      return refused(
        "unresolved_subagent_conflicts",
        `finish was refused: ${open.length} conflict(s) are open (${open.map((c) => `${c.conflictId} on ${c.path}`).join(", ")}); ` +
          "resolve each with resolve_conflict first.",
        { openConflicts: open.map((c) => ({ conflictId: c.conflictId, childId: c.childId, path: c.path })) }
      )
    }).pipe(Effect.provide(context))


    const gateDecision: ModelDriver.HostTool = (params) =>
      Effect.gen(function*() {
        const args = decodeArgs(Tools.GateArgs, "gate_decision", params)
        if (Result.isFailure(args)) return args.failure
        const decision = yield* Gate.evaluate({ workspace: engine.root, env: options.env, planLevel: undefined, trust: undefined, evidencePath: undefined }).pipe(Effect.result)
        if (Result.isFailure(decision)) return failureObservation(decision.failure)
        const d = decision.success
        return ok(`Gate ${d.status} at level ${d.level}: ${d.message}`, d)
      })

    return {
      tools: {
        run_subagents: runSubagents,
        resolve_conflict: resolveConflict,
        rollback_transaction: rollback,
        history_timeline: timeline,
        history_file: fileHistory,
        gate_decision: gateDecision
      },
      beforeFinish,
      runs: () => [...runs]
    } satisfies HostTools
  })
