/**
 * Runs a plan's children, export-only (no join yet): each task becomes a session —
 * `transactional_write` → `changeset_export` confined to its write scope, `read_only` →
 * `analysis_only` — driven by its scripted actions (or, for a `prompt` task, by the
 * `PromptDriver` in context), with its own timeout and attempts. Children run concurrently
 * (bounded) and results come back in task order whatever the completion order. A task with a
 * `childVerify` has each attempt's changeset checked in a throwaway copy (`ChildVerify`); a
 * check that does not pass fails the attempt and exports nothing. Each child's trace,
 * changeset (with its blobs) and, for a model, its conversation (`transcript.json`) go to its
 * own artifact namespace; a child that ends without a changeset keeps only its trace.
 *
 * Owns running children and writing their artifacts. Does not own joining changesets into the
 * workspace (the orchestrator issue).
 *
 * @since 0.1.0
 */
import { Engine } from "@forkjoin/engine/Engine"
import { type Changeset, type ChildRefusal, type ChildVerifyResult, ThreadId } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import { encodeAction } from "./Action.ts"
import * as Artifacts from "./Artifacts.ts"
import * as ChildVerify from "./ChildVerify.ts"
import { blobDirectory, BlobStore, type BlobStoreError } from "./BlobStore.ts"
import { Driver, DriverUnavailable, PromptDriver, scripted, type Step } from "./Driver.ts"
import type { RunPlan, Task } from "./RunPlan.ts"
import * as Session from "./Session.ts"

/**
 * How a run is set up: its id, its artifact directory and the most children at once.
 *
 * @category models
 * @since 0.1.0
 */
export interface RunOptions {
  readonly runId: string
  readonly runDirectory: string
  /** Children running at once (default 4). */
  readonly concurrency?: number
  /** The driver of one attempt of a task (default: its scripted actions). */
  readonly driverFor?: (task: Task, attempt: number) => Driver["Service"]
  /** Completes when the run is cancelled: running children are interrupted, queued ones never start. */
  readonly cancel?: Effect.Effect<void>
  /** Told each child's result as soon as it is known (progress). */
  readonly onChild?: (result: ChildResult) => Effect.Effect<void>
  /** Runs each attempt elsewhere (a cluster's runners) instead of in this process. */
  readonly remote?: RemoteAttempt
}

/**
 * One attempt of a child run elsewhere (on a cluster runner): given the run, the task, the attempt's
 * number, the child's artifact folder and thread, it returns the attempt's session result,
 * its changeset's blobs already in the folder's `blobs/` and its check (`childVerify`) done
 * there too, and where it ran (when a runner answered). It replaces the local session and check; the retries, the
 * artifacts and what is exported stay the same.
 *
 * @category models
 * @since 0.1.0
 */
export type RemoteAttempt = (input: {
  readonly runId: string
  readonly task: Task
  readonly attempt: number
  readonly namespace: string
  readonly threadId: ThreadId
}) => Effect.Effect<{ readonly result: Session.SessionResult; readonly childVerify?: ChildVerifyResult | undefined; readonly ranOn?: string | undefined }>

/**
 * A child's status: its last session's; `check_failed` when the session finished but its own
 * check (`childVerify`) did not pass; or `cancelled` when the run was cancelled before it
 * ended (running children are interrupted; queued ones never start).
 *
 * @category models
 * @since 0.1.0
 */
export type ChildStatus = Session.SessionStatus | "check_failed" | "cancelled"

/** Attempt endings worth another attempt: errors and failed checks, not a driver that stopped or looped. */
const RETRIED: ReadonlySet<ChildStatus> = new Set(["failed", "timed_out", "check_failed"])

/** Tools whose refusal means part of the child's work did not happen. */
const WORK_TOOLS: ReadonlySet<string> = new Set(["apply_patch"])

/** The paths a refusal names: a scope violation's, or an engine error's. */
const RefusedPaths = Schema.Struct({
  violatingPaths: Schema.optionalKey(Schema.Array(Schema.String)),
  paths: Schema.optionalKey(Schema.Array(Schema.String))
})
const isRefusedPaths = Schema.is(RefusedPaths)

/** The one key of a wire-form action, its tool name (none for a value that is not one). */
const toolOf = (action: unknown): string | undefined => {
  if (typeof action !== "object" || action === null || Array.isArray(action)) return undefined
  const keys = Object.keys(action)
  return keys.length === 1 ? keys[0] : undefined
}

/**
 * The refused edits among `steps` (the refused `apply_patch` actions), one per refused path,
 * each with its 1-based step, in trace order; refusals of reads are not listed.
 *
 * @category constructors
 * @since 0.1.0
 */
export const refusalsOf = (steps: ReadonlyArray<Step>): Array<ChildRefusal> => {
  const out: Array<ChildRefusal> = []
  steps.forEach((s, i) => {
    const tool = toolOf(s.action)
    if (s.observation.ok || tool === undefined || !WORK_TOOLS.has(tool)) return
    const code = s.observation.code ?? "refused"
    const data = s.observation.data
    const paths = isRefusedPaths(data) ? [...(data.violatingPaths ?? []), ...(data.paths ?? [])] : []
    if (paths.length === 0) out.push({ step: i + 1, tool, code })
    for (const path of new Set(paths)) out.push({ step: i + 1, tool, path, code })
  })
  return out
}

/**
 * One child's outcome: its last attempt's status and steps, its refused edits, how its own
 * check ended (when its task has one and the attempt got that far), and its changeset when it
 * finished cleanly (and its check passed), with where its artifacts are.
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildResult {
  readonly id: string
  readonly status: ChildStatus
  readonly attempts: number
  readonly observations: ReadonlyArray<Step>
  /** The refused edits of its last attempt (`refusalsOf` its observations). */
  readonly refusals: ReadonlyArray<ChildRefusal>
  /** The last attempt's check (`childVerify`), when it ran. */
  readonly childVerify?: ChildVerifyResult
  /** Plain data (its JSON form is `Session.encodeChangeset` of it). */
  readonly changeset?: Changeset
  readonly artifacts: string
  /** Where its last attempt ran, when a cluster ran it (the runner's `host:port`). */
  readonly ranOn?: string
  /** Why its last attempt failed, when it failed with a reason (a lost runner, an attempt a runner refused). */
  readonly error?: { readonly code: string; readonly message: string }
}

/**
 * The result of a run, children in task order.
 *
 * @category models
 * @since 0.1.0
 */
export interface RunResult {
  readonly runId: string
  readonly results: ReadonlyArray<ChildResult>
}

/**
 * Removes a child's `blobs/`: only a changeset names blobs, so those of an attempt that ended
 * without one (timed out or failed mid-export, stopped, cancelled) are never read again. Best
 * effort: a folder that cannot be removed is not the child's failure, and `forkjoin gc`
 * removes it with its run.
 */
const dropBlobs = (namespace: string): Effect.Effect<void> =>
  Effect.sync(() => {
    try {
      fs.rmSync(blobDirectory(namespace), { recursive: true, force: true })
    } catch {
      // Left for `forkjoin gc`.
    }
  })

const runChild = (task: Task, options: RunOptions, attemptsOf: Map<string, number>, prompted: PromptDriver["Service"] | undefined) =>
  Effect.gen(function*() {
    const namespace = yield* Artifacts.childDirectory(options.runDirectory, task.id)
    const { root } = yield* Engine
    const script = task.actions.map(encodeAction)
    const driverFor = options.driverFor ??
      (task.prompt !== undefined && prompted !== undefined ? prompted.forTask : () => scripted(script))
    let driver: Driver["Service"] | undefined
    const threadId = ThreadId.make(`${options.runId}/${task.id}`)
    const sessionOptions: Session.SessionOptions = task.mode === "transactional_write"
      ? { mode: "changeset_export", threadId, taskId: task.id, writeScope: task.writeScope!, timeoutMs: task.timeoutMs }
      : { mode: "analysis_only", threadId, timeoutMs: task.timeoutMs }
    let attempts = 0
    let result: Session.SessionResult
    let status: ChildStatus
    let checked: ChildVerifyResult | undefined
    let ranOn: string | undefined
    do {
      attempts += 1
      attemptsOf.set(task.id, attempts)
      // A retry starts without the blobs of the attempt before it (none of them is named).
      if (attempts > 1) yield* dropBlobs(namespace)
      // A fresh driver and view per attempt: a retried child starts from the shared workspace again.
      const attempt = attempts
      checked = undefined
      if (options.remote !== undefined) {
        const remote = yield* options.remote({ runId: options.runId, task, attempt, namespace, threadId }).pipe(Effect.onInterrupt(() => dropBlobs(namespace)))
        result = remote.result
        checked = remote.childVerify
        ranOn = remote.ranOn ?? undefined
        status = result.status
        if (checked !== undefined && checked.status !== "passed") {
          status = "check_failed"
          const { changeset: _dropped, ...rest } = result
          result = rest
        }
        continue
      }
      driver = driverFor(task, attempts)
      const blobs = BlobStore.layerDirectory(blobDirectory(namespace))
      result = yield* Session.run(sessionOptions).pipe(
        Effect.provideService(Driver, driver),
        Effect.provide(blobs),
        // A cancelled child ends here, without a changeset: its blobs go too.
        Effect.onInterrupt(() => dropBlobs(namespace))
      )
      status = result.status
      const exported = result.changeset
      if (task.childVerify !== undefined && exported !== undefined) {
        checked = yield* ChildVerify.run(task.childVerify, { root, changeset: exported, namespace, attempt }).pipe(
          Effect.provide(blobs),
          Effect.onInterrupt(() => dropBlobs(namespace))
        )
        // A check that did not pass fails the attempt: nothing of it is exported.
        if (checked.status !== "passed") {
          status = "check_failed"
          const { changeset: _dropped, ...rest } = result
          result = rest
        }
      }
    } while (RETRIED.has(status) && attempts < task.maxAttempts)
    yield* Artifacts.writeJson(namespace, "trace.json", result.steps)
    const transcript = driver?.transcript?.()
    if (transcript !== undefined) yield* Artifacts.writeJson(namespace, "transcript.json", transcript)
    const changeset = result.changeset
    if (changeset !== undefined) yield* Artifacts.writeJson(namespace, "changeset.json", Session.encodeChangeset(changeset))
    // Any ending but a clean finish exports nothing: keep the trace, drop the staged blobs.
    else yield* dropBlobs(namespace)
    return {
      id: task.id,
      status,
      attempts,
      observations: result.steps,
      refusals: refusalsOf(result.steps),
      ...(checked === undefined ? {} : { childVerify: checked }),
      ...(changeset === undefined ? {} : { changeset }),
      artifacts: namespace,
      ...(ranOn === undefined ? {} : { ranOn }),
      ...(result.error === undefined ? {} : { error: result.error })
    } satisfies ChildResult
  })

/**
 * Runs every task of `plan` as a child, export-only; the shared workspace is never written.
 *
 * @category constructors
 * @since 0.1.0
 */
export const runExportOnly = (
  plan: RunPlan,
  options: RunOptions
): Effect.Effect<RunResult, Artifacts.ArtifactError | BlobStoreError | DriverUnavailable, Engine> =>
  Effect.gen(function*() {
    const prompted = Option.getOrUndefined(yield* Effect.serviceOption(PromptDriver))
    const unDriven = plan.tasks.filter((t) => t.prompt !== undefined).map((t) => t.id)
    // Before any child starts: a prompt task with nothing to drive it would only fail later.
    if (unDriven.length > 0 && prompted === undefined && options.driverFor === undefined && options.remote === undefined) {
      return yield* new DriverUnavailable({ taskIds: unDriven })
    }
    const done = new Map<string, ChildResult>()
    const attemptsOf = new Map<string, number>()
    const all = Effect.forEach(
      plan.tasks,
      (task) =>
        runChild(task, options, attemptsOf, prompted).pipe(
          Effect.tap((r) => Effect.sync(() => done.set(task.id, r))),
          Effect.tap((r) => options.onChild?.(r) ?? Effect.void)
        ),
      { concurrency: options.concurrency ?? 4, discard: true }
    )
    // Cancelling interrupts the children still running; what finished before keeps its result.
    yield* options.cancel === undefined ? all : Effect.raceFirst(all, options.cancel)
    const results = yield* Effect.forEach(plan.tasks, (task) => {
      const r = done.get(task.id)
      if (r !== undefined) return Effect.succeed(r)
      return Artifacts.childDirectory(options.runDirectory, task.id).pipe(
        Effect.map((artifacts): ChildResult => ({ id: task.id, status: "cancelled", attempts: attemptsOf.get(task.id) ?? 0, observations: [], refusals: [], artifacts }))
      )
    })
    return { runId: options.runId, results }
  })
