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
import { normalizePath } from "@forkjoin/patch/RelativePath"
import { readCheckedDirectory, readRegularFile } from "@forkjoin/patch/SafeRead"
import * as Artifacts from "@forkjoin/runtime/Artifacts"
import { MAX_BLOB_BYTES } from "@forkjoin/runtime/BlobStore"
import * as Children from "@forkjoin/runtime/Children"
import { DriverUnavailable, PromptDriver } from "@forkjoin/runtime/Driver"
import type { RunPlan } from "@forkjoin/runtime/RunPlan"
import { type ChildOutcome, type ConflictRecord, type GateDecision, type MergeRun, MergeRunId, type ThreadId } from "@forkjoin/schema"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Conflicts from "./Conflicts.ts"
import * as Join from "./Join.ts"
import { MAX_CHANGESET_BYTES, readChildChangeset, type Unread } from "./internal/changesetFile.ts"
import * as RunLock from "./internal/runLock.ts"
import { OrchestratorError } from "./OrchestratorError.ts"
import * as WorkspaceLayer from "./WorkspaceLayer.ts"

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
  /** Runs each child's attempts elsewhere (a cluster's runners); the join stays here. */
  readonly remote?: Children.RemoteAttempt
  /** Drives the join's steps (default `Join.proceed`; a cluster run's is a durable workflow). */
  readonly proceed?: Join.Proceed
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
  cause instanceof Artifacts.ArtifactError && cause.reason === "Unserializable"
    ? new OrchestratorError({
      code: "artifact_unserializable",
      paths: [cause.path],
      message: `${what} failed: what a child did cannot be recorded as JSON (${cause.detail}), as it is nested too deeply or too ` +
        "large. Nothing was written to the workspace; simplify the plan's actions (or what the model sends), then run it again.",
      cause
    })
    : new OrchestratorError({
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
  // Children run elsewhere bring their own model (a runner's); here only a local run needs one.
  if (prompted.length > 0 && options.remote === undefined && Option.isNone(yield* Effect.serviceOption(PromptDriver))) {
    return yield* modelUnavailable(new DriverUnavailable({ taskIds: prompted }))
  }
  const gate = yield* admit(plan, { root: engine.root, parentBatchOpen: options.parentBatchOpen, admission: options.admission })
  // A between edit the engine's path policy refuses stops the run before any child starts.
  yield* betweenTargets(plan.between ?? [])
  const runId = MergeRunId.make(`run-${randomUUID()}`)
  // Held until the run returns: gc keeps a live run's folder, and a resume of it is refused (run_busy).
  return yield* RunLock.holding(runId, runHeld(plan, options, runId, gate))
})

/** `runPlan` once the run has its id and holds its lock: children, between-edits, join, resolutions. */
const runHeld = Effect.fnUntraced(function*(plan: RunPlan, options: RunOptions, runId: MergeRunId, gate: GateDecision | undefined) {
  const engine = yield* Engine
  const runDirectory = Artifacts.defaultRunDirectory(engine.root, runId)
  if (gate !== undefined) yield* writeGateDecision(runDirectory, gate)
  const scripted = plan.tasks.filter((t) => t.changesetFile === undefined)
  const ran = yield* Children.runExportOnly({ ...plan, tasks: scripted }, {
    runId,
    runDirectory,
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...(options.cancel === undefined ? {} : { cancel: options.cancel }),
    ...(options.remote === undefined ? {} : { remote: options.remote }),
    ...(options.progress === undefined ? {} : {
      onChild: (r: Children.ChildResult) =>
        options.progress!(`child ${r.id}: ${r.status} (${r.observations.length} actions${r.ranOn === undefined ? "" : `, on ${r.ranOn}`})`)
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
  // Why a task's changesetFile could not be staged, by task id (the join reports it as the child's status).
  const unstaged = new Map<string, Unread>()
  for (const t of plan.tasks) {
    if (t.changesetFile === undefined) continue
    const unread = yield* stageChangeset(path.resolve(options.planDirectory, t.changesetFile), runDirectory, t.id)
    if (unread !== undefined) unstaged.set(t.id, unread)
  }
  yield* writeBetween(plan.between ?? [])
  const children = plan.tasks.map((t): Join.JoinChild => {
    const namespace = path.join(runDirectory, "subagents", t.id)
    const result = ran.results.find((r) => r.id === t.id)
    const refusals = result?.refusals ?? []
    const staged = unstaged.get(t.id)
    const read: Result.Result<unknown, Unread> = t.mode !== "transactional_write"
      ? Result.succeed(undefined)
      : staged !== undefined
      ? Result.fail(staged)
      : readChildChangeset(namespace)
    return {
      id: t.id,
      mode: t.mode,
      ...(refusals.length === 0 ? {} : { refusals }),
      ...(result?.childVerify === undefined ? {} : { childVerify: result.childVerify }),
      ...(result?.ranOn === undefined ? {} : { ranOn: result.ranOn }),
      ...(t.writeScope === undefined ? {} : { writeScope: t.writeScope }),
      changeset: Result.isSuccess(read) ? read.success : undefined,
      ...(Result.isFailure(read) ? { unread: read.failure } : {}),
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
    ...(options.proceed === undefined ? {} : { proceed: options.proceed }),
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
 * Runs the plan's children only, each exporting its changeset into the run's folder for a
 * later join (`run --export-only`), holding the run's lock meanwhile so gc keeps the folder.
 *
 * @category constructors
 * @since 0.1.0
 */
export const exportOnly = (plan: RunPlan, options: Children.RunOptions) => RunLock.holding(options.runId, Children.runExportOnly(plan, options))

/**
 * Finishes the join of an interrupted run (children still `pending`, and children whose
 * conflicts a crashed resolve left all closed), then reports it; `proceed` drives the join's
 * steps (a cluster run's durable workflow resumes through its own).
 * One process at a time per run: while another runs or resumes it, `run_busy`, nothing done.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resume = Effect.fn("Run.resume")(function*(runId: MergeRunId, proceed?: Join.Proceed) {
  // No such run: the lock file just made for it locks nothing.
  const run = yield* Join.loadRun(runId).pipe(Effect.tapError((e) => (e.code === "unknown_run" ? RunLock.forget(runId) : Effect.void)))
  yield* (proceed ?? Join.proceed)(runId, Join.childrenOf(run), () => Effect.void)
  // Children a crashed resolve left with every conflict closed but the rest not applied.
  yield* Conflicts.settleResolved(runId)
  return yield* outcomeOf(runId, [])
}, (effect, runId, _proceed?: Join.Proceed) => RunLock.holding(runId, effect))

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

/**
 * Copies a changeset produced elsewhere (and its `blobs/sha256/*` beside it) into the child's
 * namespace, so a resumed join reads every child from one layout. The copy is not trusted:
 * the join revalidates it and checks every blob's hash. Only regular files are copied (never
 * through a link, size-checked first); returns why the changeset cannot be used, if so, with
 * nothing of it staged.
 */
const stageChangeset = (file: string, runDirectory: string, taskId: string) =>
  Effect.gen(function*() {
    const namespace = yield* Artifacts.childDirectory(runDirectory, taskId).pipe(Effect.mapError(artifactFailure("Preparing the child's folder")))
    const changeset = readRegularFile(file, MAX_CHANGESET_BYTES)
    if (Result.isFailure(changeset)) {
      const r = changeset.failure
      return {
        status: r._tag === "Missing" ? "missing_changeset" : "invalid_changeset",
        reason: r._tag === "Missing"
          ? `the changesetFile ${file} does not exist; export the changeset again or fix the plan's path`
          : `the changesetFile ${file} was not read: ${r.detail}; give a regular changeset file`
      } satisfies Unread
    }
    const blobs = path.join(path.dirname(file), "blobs", "sha256")
    const copies: Array<readonly [string, Uint8Array]> = []
    const listed = fs.existsSync(blobs) ? readCheckedDirectory(blobs, () => true) : Result.succeed([])
    if (Result.isFailure(listed)) {
      return { status: "invalid_changeset", reason: `the blob folder ${blobs} beside the changesetFile is not a readable folder; give real folders` } satisfies Unread
    }
    for (const entry of listed.success) {
      const blob = readRegularFile(path.join(blobs, entry.name), MAX_BLOB_BYTES)
      if (Result.isFailure(blob)) {
        const detail = blob.failure._tag === "Missing" ? "it disappeared while being copied" : blob.failure.detail
        return { status: "invalid_changeset", reason: `the blob ${path.join(blobs, entry.name)} beside the changesetFile was not read: ${detail}; blobs must be regular files` } satisfies Unread
      }
      copies.push([entry.name, blob.success])
    }
    yield* Effect.try({
      try: () => {
        fs.mkdirSync(path.join(namespace, "blobs", "sha256"), { recursive: true })
        fs.writeFileSync(path.join(namespace, "changeset.json"), changeset.success)
        for (const [name, bytes] of copies) fs.writeFileSync(path.join(namespace, "blobs", "sha256", name), bytes)
      },
      catch: artifactFailure(`Copying the changeset ${file}`)
    })
    return undefined
  })

/**
 * Where each of the plan's outside edits lands, resolved by the engine's own path policy
 * (denied names such as `.git` and `.forkjoin` at any depth, on the name and where links lead;
 * no link out of the workspace): the first refused edit fails with the engine's error, so a
 * plan cannot use `between` to write where the engine never would. Also refused: a target
 * that is a folder, a link or anything but a regular file.
 */
const betweenTargets = (edits: NonNullable<RunPlan["between"]>) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const rels = edits.flatMap((e) => {
      const rel = normalizePath("write" in e ? e.write.path : e.delete.path)
      // RunPlan.decode already refused paths that do not normalize.
      return Result.isSuccess(rel) ? [rel.success] : []
    })
    const refuse = (rel: string, code: EngineError["code"], why: string, cause?: unknown) =>
      new EngineError({
        code,
        stage: Stage.resolve,
        paths: [rel],
        message: `The plan's between edit of '${rel}' was refused, and nothing of the run was written: ${why}`,
        ...(cause === undefined ? {} : { cause })
      })
    const inspected = yield* engine.inspect(rels)
    const targets: Array<string> = []
    for (const rel of rels) {
      const one = inspected.get(rel)
      if (one === undefined) return yield* refuse(rel, "path_invalid", "it could not be resolved.")
      if (Result.isFailure(one)) return yield* refuse(rel, one.failure.code, one.failure.message, one.failure)
      if (one.success.landing === undefined) return yield* refuse(rel, "path_outside_roots", "it leads through a link out of the workspace; use a path inside it.")
      const state = one.success.state
      if (state._tag === "Directory" || state._tag === "Other") {
        return yield* refuse(rel, "unsupported_file_type", `it is ${state._tag === "Other" ? state.description : "a folder"}; between edits write regular files only.`)
      }
      targets.push(path.join(engine.root, ...one.success.landing.split("/")))
    }
    return targets
  })

/**
 * The plan's outside edits, written directly to the files (deliberately not through the
 * engine: they are the drift a join must notice), each where the engine's resolution says it
 * lands, never through a final link.
 */
const writeBetween = (edits: NonNullable<RunPlan["between"]>) =>
  Effect.gen(function*() {
    const targets = yield* betweenTargets(edits)
    yield* Effect.try({
      try: () => {
        for (const [i, e] of edits.entries()) {
          const abs = targets[i]!
          if ("write" in e) {
            fs.mkdirSync(path.dirname(abs), { recursive: true })
            const fd = fs.openSync(abs, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | (fs.constants.O_NOFOLLOW ?? 0), 0o644)
            try {
              fs.writeFileSync(fd, e.write.content)
            } finally {
              fs.closeSync(fd)
            }
          } else fs.rmSync(abs, { force: true })
        }
      },
      catch: artifactFailure("Writing the plan's between edits")
    })
  })

/**
 * What `runPlan`, `resume`, `Conflicts` and `Rollback` need for the workspace `root` and the
 * history database `db` (`WorkspaceLayer.layer`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = WorkspaceLayer.layer
