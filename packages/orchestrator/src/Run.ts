/**
 * One scripted orchestration run end to end (`forkjoin run PLAN.json`): the plan's children
 * run concurrently into overlays (or bring a changeset produced elsewhere), the plan's
 * `between` edits touch the files directly (to exercise drift), the join applies the
 * children, the plan's `resolve` entries close conflicts, and `finish` says whether the run
 * is done. Resumable: `resume` finishes a join a crash interrupted.
 *
 * Owns the order of those steps and where their artifacts go. Does not own running a child
 * (`@forkjoin/runtime/Children`), the join (`Join`) or conflicts (`Conflicts`).
 *
 * @since 0.1.0
 */
import type { AutonomyError } from "@forkjoin/autonomy/AutonomyError"
import type { Env } from "@forkjoin/autonomy/Config"
import * as Gate from "@forkjoin/autonomy/Gate"
import { Engine } from "@forkjoin/engine/Engine"
import type { HistoryStore, StoreError } from "@forkjoin/history/HistoryStore"
import type { MergeStore } from "@forkjoin/history/MergeStore"
import * as MergeStoreSqlite from "@forkjoin/history/MergeStoreSqlite"
import { Grammars } from "@forkjoin/merge/Grammars"
import type { Sqlite } from "@forkjoin/history/Sqlite"
import { normalizePath } from "@forkjoin/patch/RelativePath"
import * as Artifacts from "@forkjoin/runtime/Artifacts"
import * as Children from "@forkjoin/runtime/Children"
import { DriverUnavailable, PromptDriver } from "@forkjoin/runtime/Driver"
import type { RunPlan } from "@forkjoin/runtime/RunPlan"
import { type ChildOutcome, type ConflictRecord, type GateDecision, type MergeRun, MergeRunId, type ThreadId } from "@forkjoin/schema"
import type { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Conflicts from "./Conflicts.ts"
import * as Join from "./Join.ts"
import { OrchestratorError } from "./OrchestratorError.ts"

/**
 * What a run did: the children's results (scripted children only), the merge run as stored
 * (plan, outcomes, status), its conflicts, and whether `finish` passed.
 *
 * @category models
 * @since 0.1.0
 */
export interface RunOutcome {
  readonly runId: MergeRunId
  readonly results: ReadonlyArray<Children.ChildResult>
  readonly run: MergeRun
  readonly conflicts: ReadonlyArray<ConflictRecord>
  readonly finish: { readonly ok: true } | { readonly ok: false; readonly code: string; readonly message: string }
}

/**
 * How a run's mutating children are admitted: by the promotion gate under the workspace's
 * configuration (the default; `env` replaces `process.env`, `trust` and `evidencePath` act like
 * `forkjoin gate`'s flags), or `Exempt` for a scratch workspace the caller created itself (the
 * probe, the demo), where no user file can be touched.
 *
 * @category models
 * @since 0.1.0
 */
export type Admission =
  | {
    readonly _tag: "Gate"
    readonly env?: Env
    readonly trust?: ReadonlyArray<string>
    readonly evidencePath?: string
  }
  | { readonly _tag: "Exempt"; readonly reason: string }

/**
 * Options of `runPlan`: the directory `changesetFile` paths are relative to, the caller's
 * thread (the run's thread is registered below it) and the children's concurrency.
 *
 * @category models
 * @since 0.1.0
 */
export interface RunOptions {
  readonly planDirectory: string
  readonly callerThreadId: ThreadId
  readonly concurrency?: number
  /** The calling parent session has an open batch: mutating children are refused before any starts. */
  readonly parentBatchOpen?: boolean
  /** How mutating children are admitted (default: the promotion gate under the workspace's configuration). */
  readonly admission?: Admission
  /** Completes when the run is cancelled (running children are interrupted, queued ones never start). */
  readonly cancel?: Effect.Effect<void>
  /** Told one line per child as it finishes and as it is joined (live progress on a terminal). */
  readonly progress?: (line: string) => Effect.Effect<void>
}

/**
 * Decides, before any child starts, whether the plan's mutating children may run in the
 * workspace `root`: refused while the parent has an open batch (their changesets would be
 * joined under the batch's feet); otherwise the promotion gate decides under the configuration,
 * which the plan's `autonomy` can only lower (`off`: none; `supervised`: read-only children
 * only; `safe`: when the evidence passes; `bold`: without it, recorded as `skipped`). Returns
 * the decision to record, or `undefined` when no decision was needed (no mutating child, or an
 * exempt scratch run). A bad configuration fails with its `AutonomyError`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const admit = (
  plan: RunPlan,
  options: { readonly root: string; readonly parentBatchOpen?: boolean | undefined; readonly admission?: Admission | undefined }
): Effect.Effect<GateDecision | undefined, OrchestratorError | AutonomyError> =>
  Effect.gen(function*() {
    const mutating = plan.tasks.filter((t) => t.mode === "transactional_write").map((t) => t.id)
    if (mutating.length === 0) return undefined
    if (options.parentBatchOpen === true) {
      return yield* new OrchestratorError({
        code: "mutating_subagents_in_open_batch",
        paths: [],
        message: `Mutating children (${mutating.join(", ")}) cannot start while the parent has an open batch; commit_batch or abort_batch it first.`
      })
    }
    const admission = options.admission ?? { _tag: "Gate" }
    if (admission._tag === "Exempt") return undefined
    const decision = yield* Gate.evaluate({
      workspace: options.root,
      planLevel: plan.autonomy,
      env: admission.env,
      trust: admission.trust,
      evidencePath: admission.evidencePath
    })
    const admitted = Gate.admitMutating(decision)
    if (Result.isSuccess(admitted)) return decision
    return yield* new OrchestratorError({
      code: decision.status === "blocked" ? "promotion_gate_blocked" : "mutating_subagents_not_granted",
      paths: admitted.failure.paths,
      message: `Mutating children (${mutating.join(", ")}) were not started: ${admitted.failure.message}`,
      cause: decision
    })
  })

const modelUnavailable = (e: DriverUnavailable) =>
  new OrchestratorError({ code: "model_unavailable", paths: [], message: e.message, cause: e })

const artifactFailure = (what: string) => (cause: unknown) =>
  new OrchestratorError({
    code: "artifacts_unavailable",
    paths: [],
    message: `${what} failed (${cause instanceof Error ? cause.message : String(cause)}); check that the workspace's .forkjoin folder is writable.`,
    cause
  })

/**
 * Runs `plan` in the engine's workspace: children, between-edits, join, resolutions, finish.
 *
 * @category constructors
 * @since 0.1.0
 */
export const runPlan = Effect.fn("Run.runPlan")(function*(plan: RunPlan, options: RunOptions) {
  const engine = yield* Engine
  // Prompt tasks need a model: refused before the gate is asked and before any child starts.
  const prompted = plan.tasks.filter((t) => t.prompt !== undefined).map((t) => t.id)
  if (prompted.length > 0 && Option.isNone(yield* Effect.serviceOption(PromptDriver))) {
    return yield* modelUnavailable(new DriverUnavailable({ taskIds: prompted }))
  }
  const gate = yield* admit(plan, { root: engine.root, parentBatchOpen: options.parentBatchOpen, admission: options.admission })
  const runId = MergeRunId.make(`run-${randomUUID()}`)
  const runDirectory = Artifacts.defaultRunDirectory(engine.root, runId)
  if (gate !== undefined) yield* writeGateDecision(runDirectory, gate)
  const scripted = plan.tasks.filter((t) => t.changesetFile === undefined)
  const ran = yield* Children.runExportOnly({ ...plan, tasks: scripted }, {
    runId,
    runDirectory,
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...(options.cancel === undefined ? {} : { cancel: options.cancel }),
    ...(options.progress === undefined ? {} : {
      onChild: (r: Children.ChildResult) => options.progress!(`child ${r.id}: ${r.status} (${r.observations.length} actions)`)
    })
  }).pipe(Effect.mapError((e) => (e._tag === "DriverUnavailable" ? modelUnavailable(e) : artifactFailure("Running the children")(e))))
  const cancelled = ran.results.filter((r) => r.status === "cancelled")
  if (cancelled.length > 0) {
    // A cancelled run stops before the join: nothing of it reaches the workspace.
    return yield* new OrchestratorError({
      code: "run_cancelled",
      paths: [],
      message: `The run was cancelled before the join: ${ran.results.length - cancelled.length} child(ren) had ended, ` +
        `${cancelled.length} were cancelled (${cancelled.map((r) => r.id).join(", ")}); nothing was written to the workspace. ` +
        `Their artifacts are in ${runDirectory}; run the plan again to start over.`
    })
  }
  for (const t of plan.tasks) {
    if (t.changesetFile !== undefined) yield* stageChangeset(path.resolve(options.planDirectory, t.changesetFile), runDirectory, t.id)
  }
  yield* writeBetween(engine.root, plan.between ?? [])
  const children = plan.tasks.map((t): Join.JoinChild => {
    const namespace = path.join(runDirectory, "subagents", t.id)
    const refusals = ran.results.find((r) => r.id === t.id)?.refusals ?? []
    return {
      id: t.id,
      mode: t.mode,
      ...(refusals.length === 0 ? {} : { refusals }),
      ...(t.writeScope === undefined ? {} : { writeScope: t.writeScope }),
      changeset: t.mode === "transactional_write" ? readJson(path.join(namespace, "changeset.json")) : undefined,
      blobDirectory: path.join(namespace, "blobs")
    }
  })
  yield* Join.start({
    runId,
    callerThreadId: options.callerThreadId,
    runDirectory,
    atomic: plan.atomic ?? false,
    ...(plan.verify === undefined ? {} : { verify: plan.verify }),
    ...(gate === undefined ? {} : { gate }),
    children,
    ...(options.progress === undefined ? {} : {
      onOutcome: (o: ChildOutcome) => options.progress!(`joined ${o.childId}: ${o.status}`)
    })
  })
  for (const r of plan.resolve ?? []) {
    const open = (yield* Conflicts.list({ runId, status: "open" })).filter((c) => c.childId === r.childId && (r.path === undefined || c.path === r.path))
    for (const c of open) {
      yield* Conflicts.resolve(
        c.conflictId,
        r.resolution === "content" ? { kind: "content", bytes: new TextEncoder().encode(r.content ?? "") } : { kind: r.resolution }
      )
    }
  }
  return yield* outcomeOf(runId, ran.results)
})

/**
 * Finishes the join of an interrupted run (children still `pending`), then reports it.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resume = Effect.fn("Run.resume")(function*(runId: MergeRunId) {
  const run = yield* Join.loadRun(runId)
  yield* Join.proceed(runId, Join.childrenOf(run))
  return yield* outcomeOf(runId, [])
})

const outcomeOf = (runId: MergeRunId, results: ReadonlyArray<Children.ChildResult>) =>
  Effect.gen(function*() {
    const run = yield* Join.loadRun(runId)
    const conflicts = yield* Conflicts.list({ runId })
    const finished = yield* Conflicts.finish(runId).pipe(Effect.result)
    const finish: RunOutcome["finish"] = Result.isFailure(finished)
      ? { ok: false, code: finished.failure.code, message: finished.failure.message }
      : run.status === "applied"
      ? { ok: true }
      : { ok: false, code: `merge_${run.status}`, message: `the join ended ${run.status}; see each child's status` }
    return { runId, results, run, conflicts, finish } satisfies RunOutcome
  })

/** Keeps the gate's decision with the run's artifacts (`gate.json`), a `bold` skip included. */
const writeGateDecision = (runDirectory: string, decision: GateDecision) =>
  Effect.try({
    try: () => {
      fs.mkdirSync(runDirectory, { recursive: true })
      fs.writeFileSync(path.join(runDirectory, "gate.json"), `${JSON.stringify(decision, null, 2)}\n`)
    },
    catch: artifactFailure("Recording the gate's decision")
  })

const readJson = (file: string): unknown => {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"))
  } catch {
    return undefined
  }
}

/**
 * Copies a changeset produced elsewhere (and its `blobs/sha256/*` beside it) into the child's
 * namespace, so a resumed join reads every child from one layout. The copy is not trusted:
 * the join revalidates it and checks every blob's hash.
 */
const stageChangeset = (file: string, runDirectory: string, taskId: string) =>
  Effect.gen(function*() {
    const namespace = yield* Artifacts.childDirectory(runDirectory, taskId).pipe(Effect.mapError(artifactFailure("Preparing the child's folder")))
    yield* Effect.try({
      try: () => {
        fs.mkdirSync(namespace, { recursive: true })
        if (fs.existsSync(file)) fs.copyFileSync(file, path.join(namespace, "changeset.json"))
        const blobs = path.join(path.dirname(file), "blobs", "sha256")
        if (fs.existsSync(blobs)) fs.cpSync(blobs, path.join(namespace, "blobs", "sha256"), { recursive: true })
      },
      catch: artifactFailure(`Copying the changeset ${file}`)
    })
  })

/** The plan's outside edits, written directly to the files (deliberately not through the engine). */
const writeBetween = (root: string, edits: NonNullable<RunPlan["between"]>) =>
  Effect.try({
    try: () => {
      for (const e of edits) {
        const raw = "write" in e ? e.write.path : e.delete.path
        const rel = normalizePath(raw)
        // RunPlan.decode already refused paths that do not normalize.
        if (Result.isFailure(rel)) continue
        const abs = path.join(root, ...rel.success.split("/"))
        if ("write" in e) {
          fs.mkdirSync(path.dirname(abs), { recursive: true })
          fs.writeFileSync(abs, e.write.content)
        } else fs.rmSync(abs, { force: true })
      }
    },
    catch: artifactFailure("Writing the plan's between edits")
  })

/**
 * What `runPlan`, `resume`, `Conflicts` and `Rollback` need for the workspace `root`: its
 * engine, with the history and merge stores over one connection to the database `db`, and the
 * grammars of syntax-aware merges (each loaded only when a merge needs it).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  root: string,
  db: string
): Layer.Layer<Engine | HistoryStore | MergeStore | Sqlite | Grammars, EngineError | StoreError> =>
  Engine.layer({ root }).pipe(Layer.provideMerge(MergeStoreSqlite.layerWithHistory(db)), Layer.merge(Grammars.layer))
