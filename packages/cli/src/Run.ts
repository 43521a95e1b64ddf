/**
 * `forkjoin run PLAN.json`: reads and validates a plan file (schemaVersion 1), runs its
 * children (mutating children stage into overlays and export changesets), joins them into the
 * workspace through the engine, applies the plan's resolutions and reports the merge. With
 * `--export-only` it stops after the children; `--resume RUN_ID` (whole or shortened) finishes an
 * interrupted join. Text output shows ids shortened (`internal/shortIds.ts`), `--json` whole.
 * The flags are in `RunCommand.ts`, what a failure prints in `internal/errors.ts`.
 *
 * @since 0.1.0
 */
import * as Config from "@forkjoin/autonomy/Config"
import { Engine, type RepairOutcome } from "@forkjoin/engine/Engine"
import * as HostTools from "@forkjoin/drivers/HostTools"
import * as Models from "@forkjoin/drivers/Models"
import * as OrchestratorRun from "@forkjoin/orchestrator/Run"
import * as Artifacts from "@forkjoin/runtime/Artifacts"
import * as Children from "@forkjoin/runtime/Children"
import { PromptDriver } from "@forkjoin/runtime/Driver"
import * as RunPlan from "@forkjoin/runtime/RunPlan"
import { encodeChangeset } from "@forkjoin/runtime/Session"
import type { GateDecision } from "@forkjoin/schema/Autonomy"
import { type EnvironmentId, MergeRunIdInput, type ThreadId } from "@forkjoin/schema/Ids"
import { type ChildOutcome, type ChildOutcomeStatus, type ChildRefusal, type ChildVerifyResult, classOf } from "@forkjoin/schema/MergeRun"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Colour from "./internal/colour.ts"
import { RunFailed, UsageError } from "./internal/errors.ts"
import { methodNote } from "./internal/mergeNote.ts"
import { writeStderr } from "./internal/output.ts"
import { orchestratorLayer } from "./internal/orchestratorLayer.ts"
import * as ShortIds from "./internal/shortIds.ts"
import { engineLayer, historyDbOf, resolveWorkspace } from "./internal/workspace.ts"
import { repairsField, withRepairs } from "./Repair.ts"

/**
 * One `run` invocation, after flag parsing.
 *
 * @category models
 * @since 0.1.0
 */
export interface RunRequest {
  readonly planFile?: string | undefined
  readonly resume?: string | undefined
  readonly workspace: string
  readonly db?: string | undefined
  readonly exportOnly: boolean
  readonly threadId: ThreadId
  /** Live progress lines (a terminal); nothing when undefined. */
  readonly progress?: ((line: string) => Effect.Effect<void>) | undefined
  /** Read the short ids text output shows (the ids near the joined run's); `--json` leaves this off. */
  readonly shortIds?: boolean | undefined
  /** Run the children on this cluster's runners (`--cluster URL`); the join stays here. */
  readonly cluster?: ClusterRequest | undefined
}

/**
 * `--cluster` and its companions: the storage URL, the cluster secret's file, and the address
 * runners fetch the run's files from.
 *
 * @category models
 * @since 0.1.0
 */
export interface ClusterRequest {
  readonly url: string
  readonly secretFile?: string | undefined
  readonly objectsHost?: string | undefined
}

/**
 * Reads and validates the plan file; unreadable or invalid plans are a `UsageError` naming
 * the JSON path of the problem.
 *
 * @category constructors
 * @since 0.1.0
 */
export const readPlan = (file: string): Effect.Effect<RunPlan.RunPlan, UsageError> =>
  Effect.gen(function*() {
    const text = yield* Effect.try({
      try: () => fs.readFileSync(file, "utf8"),
      catch: (e) =>
        new UsageError({
          message: `cannot read plan file '${file}' (${e instanceof Error ? e.message : String(e)}).`,
          cause: e
        })
    })
    const plan = RunPlan.decodeJson(text)
    if (Result.isFailure(plan)) {
      return yield* new UsageError({ message: `plan file '${file}': ${plan.failure.message}`, cause: plan.failure })
    }
    return plan.success
  })

/**
 * What `run` did: only the children (`--export-only`), or the whole run with its join; and
 * what the engine's startup repair did first (already announced on stderr; absent or empty
 * when nothing was open).
 *
 * @category models
 * @since 0.1.0
 */
export type RunResult =
  | {
    readonly _tag: "Exported"
    readonly result: Children.RunResult
    readonly repairs?: ReadonlyArray<RepairOutcome> | undefined
    /** The gate's decision that admitted the mutating children (none for read-only plans). */
    readonly gate?: GateDecision | undefined
  }
  | {
    readonly _tag: "Joined"
    readonly outcome: OrchestratorRun.RunOutcome
    readonly repairs?: ReadonlyArray<RepairOutcome> | undefined
    /** The ids for text output (default: whole). */
    readonly ids?: ShortIds.ShortIds | undefined
  }

/**
 * Runs the plan (or resumes a run) and returns what happened; what the startup repair did is
 * announced on stderr before any child runs.
 *
 * @category constructors
 * @since 0.1.0
 */
export const run = Effect.fn("Run.run")(function*(request: RunRequest) {
  if ((request.planFile === undefined) === (request.resume === undefined)) {
    return yield* new UsageError({ message: "give either PLAN.json (to start a run) or --resume RUN_ID (to finish an interrupted one)." })
  }
  if (request.cluster !== undefined && request.cluster.url !== "none" && (request.resume !== undefined || request.exportOnly)) {
    return yield* new UsageError({ message: "--cluster runs a plan's children on runners and joins them here; it cannot be combined with --resume or --export-only." })
  }
  if (request.resume !== undefined && request.exportOnly) {
    return yield* new UsageError({ message: "--export-only runs children only; it cannot be combined with --resume." })
  }
  const root = yield* resolveWorkspace(request.workspace)
  const db = historyDbOf(root, request.db)
  if (request.resume !== undefined) {
    const resume = request.resume
    const [[outcome, ids], repairs] = yield* withRepairs(
      root,
      request.db,
      Effect.gen(function*() {
        const engine = yield* Engine
        const runId = yield* Schema.decodeUnknownEffect(MergeRunIdInput)(yield* ShortIds.expandIn(engine.environmentId, "run", resume, "--resume")).pipe(
          Effect.mapError((e) => new UsageError({ message: `--resume: ${e.message}`, cause: e }))
        )
        // A cluster run's join is a durable workflow: it resumes through it.
        const JoinState = yield* Effect.promise(() => import("@forkjoin/cluster/JoinState"))
        const durable = JoinState.isDurable(Artifacts.defaultRunDirectory(engine.root, runId))
        const proceed = durable ? (yield* Effect.promise(() => import("@forkjoin/cluster/JoinWorkflow"))).proceed : undefined
        const outcome = yield* OrchestratorRun.resume(runId, proceed)
        return [outcome, yield* idsFor(request.shortIds, engine.environmentId, [outcome])] as const
      })
    ).pipe(Effect.provide(orchestratorLayer(root, db)))
    yield* warnMerges(outcome.run.outcomes)
    return { _tag: "Joined", outcome, repairs, ids } satisfies RunResult
  }
  const planFile = request.planFile!
  const plan = yield* readPlan(planFile)
  if (request.exportOnly) {
    const prompted = yield* promptDriverFor(root, plan, request.progress)
    // Export-only children stage changesets meant for a join: admitted exactly like a run.
    const gate = yield* OrchestratorRun.admit(plan, { root })
    yield* warnGate(gate)
    const runId = `run-${randomUUID()}`
    const [result, repairs] = yield* withRepairs(
      root,
      request.db,
      OrchestratorRun.exportOnly(plan, { runId, runDirectory: Artifacts.defaultRunDirectory(root, runId) }).pipe(withPromptDriver(prompted))
    ).pipe(
      Effect.provide(engineLayer(root, db)),
      Effect.mapError((e) => (e._tag === "EngineError" ? e : new RunFailed({ message: e.message, cause: e })))
    )
    return { _tag: "Exported", result, repairs, gate } satisfies RunResult
  }
  const cluster = yield* clusterOf(root, request.cluster)
  const onCluster = cluster === undefined ? undefined : yield* clusterFor(plan, cluster)
  // On a cluster, prompt tasks run on the runners with their models: none is needed here.
  const prompted = onCluster === undefined ? yield* promptDriverFor(root, plan, request.progress) : undefined
  const [[outcome, ids], repairs] = yield* withRepairs(
    root,
    request.db,
    Effect.gen(function*() {
      const remote = onCluster === undefined ? undefined : yield* onCluster
      const outcome = yield* OrchestratorRun.runPlan(plan, {
        planDirectory: path.dirname(path.resolve(planFile)),
        callerThreadId: request.threadId,
        ...(request.progress === undefined ? {} : { progress: request.progress }),
        ...(remote === undefined ? {} : { remote: remote.attempt, proceed: remote.proceed })
      }).pipe(withPromptDriver(prompted))
      const engine = yield* Engine
      return [outcome, yield* idsFor(request.shortIds, engine.environmentId, [outcome])] as const
    }).pipe(Effect.scoped)
  ).pipe(
    Effect.provide(orchestratorLayer(root, db))
  )
  yield* warnGate(outcome.run.gate)
  yield* warnMerges(outcome.run.outcomes)
  return { _tag: "Joined", outcome, repairs, ids } satisfies RunResult
})

/**
 * The cluster of a run: `--cluster` (`none` runs here), else the workspace configuration's
 * `cluster`, else none. A configuration that does not load is left to the gate, which says why.
 */
const clusterOf = (root: string, flag: ClusterRequest | undefined) =>
  Effect.gen(function*() {
    if (flag !== undefined) return flag.url === "none" ? undefined : flag
    const config = yield* Effect.result(Config.load(root, process.env))
    const configured = Result.isSuccess(config) ? config.success.cluster : undefined
    return configured === undefined ? undefined : { url: configured.url, secretFile: configured.secretFile, objectsHost: configured.objectsHost } satisfies ClusterRequest
  })

/**
 * The cluster a run's children go to, checked before any child starts: plans whose children a
 * runner would refuse (checks without a cluster secret) are refused, the URL and the secret must load, and (when the effect is
 * provided) the storage must answer; `start` then needs a registered runner and serves the
 * run's files. All of these are usage errors (exit 2).
 */
const clusterFor = (plan: RunPlan.RunPlan, request: ClusterRequest) =>
  Effect.gen(function*() {
    const Cluster = yield* Effect.promise(() => import("@forkjoin/cluster"))
    const url = Cluster.ClusterUrl.parse(request.url)
    if (Result.isFailure(url)) return yield* new UsageError({ message: `--cluster: ${url.failure.message}`, cause: url.failure })
    const secret = yield* Cluster.ClusterAuth.optionalSecret(request.secretFile, process.env).pipe(
      Effect.mapError((e) => new UsageError({ message: `--cluster: ${e.message}`, cause: e }))
    )
    const checked = plan.tasks.filter((t) => t.childVerify !== undefined).map((t) => t.id)
    if (checked.length > 0 && Option.isNone(secret)) {
      return yield* new UsageError({
        message: `--cluster: tasks ${checked.join(", ")} run a command (childVerify), which runners do only for a parent that signs with the ` +
          "cluster secret; give this run and every runner the same --secret-file (or FORKJOIN_CLUSTER_SECRET)"
      })
    }
    const refused = (e: { readonly message: string }) =>
      new UsageError({ message: `--cluster: ${"code" in e && typeof e.code === "string" ? `${e.code}: ` : ""}${e.message}`, cause: e })
    // Run in the run's scope: the storage is checked (and a runner looked for) before any child starts.
    return Effect.gen(function*() {
      const member = yield* Layer.build(Cluster.Sharding.layer(url.success, process.cwd(), Option.none(), secret)).pipe(Effect.mapError(refused))
      const started = yield* Cluster.Parent.start({ secret, host: request.objectsHost }).pipe(Effect.provideContext(member), Effect.mapError(refused))
      // The join stays here, as a durable workflow: a killed parent resumes it with --resume.
      return { attempt: started.remote, proceed: Cluster.JoinWorkflow.proceed }
    })
  })

/**
 * Every id and message of `outcomes` that `renderText` shortens: the run, its merges and their
 * transactions, its conflicts, and why it did not finish.
 *
 * @category combinators
 * @since 0.1.0
 */
export const shownIds = (outcomes: ReadonlyArray<OrchestratorRun.RunOutcome>): ReadonlyArray<string> =>
  outcomes.flatMap((o) => [
    o.runId,
    ...o.run.outcomes.flatMap((c) => (c.transactionId === undefined ? [] : [c.transactionId])),
    ...o.conflicts.map((c) => c.conflictId),
    ...(o.finish.ok ? [] : [o.finish.message])
  ])

/**
 * The short ids of what the text shows of `outcomes` when `wanted` (text output), else every id
 * whole without reading anything (`--json`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const idsFor = (wanted: boolean | undefined, environmentId: EnvironmentId, outcomes: ReadonlyArray<OrchestratorRun.RunOutcome>) =>
  wanted === true ? ShortIds.loadForDisplay(environmentId, shownIds(outcomes)) : Effect.succeed(ShortIds.fullIds)

/**
 * The model that drives the plan's `prompt` tasks, chosen from the workspace's configuration
 * (or `OPENAI_BASE_URL`/`ANTHROPIC_BASE_URL` and their keys); none when the plan has no prompt
 * task. A missing or bad model setting is a usage error naming it, before any child starts.
 */
const promptDriverFor = (root: string, plan: RunPlan.RunPlan, progress: RunRequest["progress"]) =>
  Effect.gen(function*() {
    if (!plan.tasks.some((t) => t.prompt !== undefined)) return undefined
    const choice = yield* Models.forWorkspace(root, process.env)
    if (Result.isFailure(choice)) {
      return yield* new UsageError({ message: `the plan has prompt tasks, which need a model: ${choice.failure.message}`, cause: choice.failure })
    }
    return HostTools.promptDriver(choice.success.model, choice.success.child, progress)
  })

const withPromptDriver = (driver: PromptDriver["Service"] | undefined) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  driver === undefined ? effect : Effect.provideService(effect, PromptDriver, driver)

/** The gate's warnings (a `bold` skip, a plan asking for more than allowed) on stderr: they are on record too. */
const warnGate = (gate: GateDecision | undefined) =>
  gate === undefined || gate.warnings.length === 0
    ? Effect.void
    : writeStderr(gate.warnings.map((w) => `${Colour.forStderr().yellow("warning")}: ${w}\n`).join(""))

/**
 * The join's warnings about how children were merged (a grammar that could not be loaded), one
 * `warning:` line each however many children it concerned, coloured with `palette`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const mergeWarnings = (outcomes: ReadonlyArray<ChildOutcome>, palette: Colour.Palette = Colour.forStderr()): string =>
  [...new Set(outcomes.flatMap((o) => (o.warnings ?? []).map((w) => w.message)))].map((m) => `${palette.yellow("warning")}: ${m}\n`).join("")

/** The join's merge warnings on stderr: they are on record in the outcomes too. */
const warnMerges = (outcomes: ReadonlyArray<ChildOutcome>) => {
  const text = mergeWarnings(outcomes)
  return text === "" ? Effect.void : writeStderr(text)
}

/** The merged paths of an outcome, each with how it was merged when the outcome says (some by syntax tree). */
const mergedDetail = (c: ChildOutcome): string => {
  const how = new Map((c.mergedPaths ?? []).map((m) => [m.path, m]))
  return (c.autoMergedPaths ?? []).map((p) => {
    const m = how.get(p)
    return m === undefined ? p : `${p} ${methodNote(m)}`
  }).join(", ")
}

/**
 * Exit 0 when the run finished (export-only: every child finished cleanly), else 1.
 *
 * @category combinators
 * @since 0.1.0
 */
export const exitCodeOf = (result: RunResult): 0 | 1 =>
  result._tag === "Exported"
    ? result.result.results.every((r) => r.status === "finished") ? 0 : 1
    : result.outcome.finish.ok ? 0 : 1

const childJson = (r: Children.ChildResult) => ({
  id: r.id,
  status: r.status,
  attempts: r.attempts,
  observations: r.observations,
  ...(r.refusals.length === 0 ? {} : { refusals: r.refusals }),
  ...(r.childVerify === undefined ? {} : { childVerify: r.childVerify }),
  ...(r.changeset === undefined ? {} : { changeset: encodeChangeset(r.changeset) }),
  artifacts: r.artifacts,
  ...(r.ranOn === undefined ? {} : { ranOn: r.ranOn }),
  ...(r.error === undefined ? {} : { error: r.error })
})

/**
 * The `--json` line. Export-only: `{ ok, runId, results }` (`ok`: every child finished). A run: `{ ok, runId, mergePlan,
 * results, mergeExecution: { status, outcomes }, conflicts, finish }`, `ok` = `finish.ok`.
 * Either ends with `repairs` when the startup repair did something.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderJson = (result: RunResult): string => {
  if (result._tag === "Exported") {
    return JSON.stringify({
      ok: exitCodeOf(result) === 0,
      runId: result.result.runId,
      results: result.result.results.map(childJson),
      ...(result.gate === undefined ? {} : { gate: result.gate }),
      ...repairsField(result.repairs)
    }) + "\n"
  }
  const o = result.outcome
  return JSON.stringify({
    ok: o.finish.ok,
    runId: o.runId,
    mergePlan: o.run.mergePlan,
    results: o.results.map(childJson),
    mergeExecution: { status: o.run.status, outcomes: o.run.outcomes },
    conflicts: o.conflicts.map((c) => ({ conflictId: c.conflictId, childId: c.childId, path: c.path, status: c.status, reason: c.reason })),
    finish: o.finish.ok ? { ok: true } : { ok: false, code: o.finish.code, message: o.finish.message },
    ...(o.run.gate === undefined ? {} : { gate: o.run.gate }),
    ...repairsField(result.repairs)
  }) + "\n"
}

/** Output lines of a child's check shown in text (all of them are in `--json` and its log). */
const CHECK_LINES = 10

/** A child's check in text, `indent`ed: how it ended, then its last output lines. */
const checkLines = (check: ChildVerifyResult | undefined, indent: string): Array<string> =>
  check === undefined
    ? []
    : [`${indent}check (attempt ${check.attempt}): ${check.status}: ${check.summary}`, ...check.output.slice(-CHECK_LINES).map((l) => `${indent}  | ${l}`)]

const pad = (s: string, n: number) => s + " ".repeat(Math.max(1, n - s.length))

/** A child's status in colour: landed green, held back (conflict, drift) or discarded yellow, refused or failed red, `noop` plain. */
const statusColour = (palette: Colour.Palette, status: ChildOutcomeStatus): string => {
  switch (classOf(status)) {
    case "landed":
      return palette.green(status)
    case "held":
    case "dropped":
      return palette.yellow(status)
    case "unchanged":
      return status
    case "failed":
      return palette.red(status)
  }
}

/**
 * Human output: export-only lists each child and its changeset entries; a run prints the
 * join table (child, status, detail; read-only children too, and each refused edit below its
 * child), the transaction that undoes a child's merge, the open conflicts with the command that
 * resolves them, and whether the run finished, ids shortened (`result.ids`). The status column is coloured with `palette` (default: the
 * palette of stdout, colour only on a terminal without `NO_COLOR`).
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderText = (result: RunResult, palette: Colour.Palette = Colour.forStdout()): string => {
  if (result._tag === "Exported") {
    const r0 = result.result
    const lines = [`run ${r0.runId}`]
    for (const r of r0.results) {
      const refused = r.observations.filter((s) => !s.observation.ok).length
      lines.push(`${r.id}: ${r.status} (${r.observations.length} actions, ${refused} refused) artifacts ${r.artifacts}`)
      lines.push(...checkLines(r.childVerify, "  "))
      for (const e of r.changeset?.entries ?? []) lines.push(`  ${e.kind} ${e.moveFrom === undefined ? "" : `${e.moveFrom} -> `}${e.path}`)
    }
    return lines.join("\n") + "\n"
  }
  const o = result.outcome
  const ids = result.ids ?? ShortIds.fullIds
  // A child's merge is `subagent_merge:<run-id>/<child>`: said once below, not on every row.
  const mergeOf = (childId: string) => `subagent_merge:${o.runId}/${childId}`
  const lines = [`run ${ids.short(o.runId)}: ${o.run.status}`]
  for (const r of o.results) {
    if (r.status !== "finished") lines.push(`  child ${r.id} ended ${r.status} after ${r.attempts} attempt(s)${r.error === undefined ? "" : `: ${r.error.message}`}`)
    // A check that passed is said with the join's row; one that failed explains the ending here.
    if (r.status === "check_failed") lines.push(...checkLines(r.childVerify, "    "))
  }
  const readOnly: ReadonlyArray<string> = o.run.mergePlan.readOnlyResultIds
  const width = Math.max(5, ...o.run.outcomes.map((c) => c.childId.length), ...readOnly.map((id) => id.length)) + 2
  lines.push(`  ${pad("child", width)} ${pad("status", 32)}detail`)
  // Task order (the children's results are in it; a resumed run has none: outcomes, then read-only).
  const order = o.results.length > 0 ? o.results.map((r) => r.id) : [...o.run.outcomes.map((c) => c.childId), ...readOnly]
  const refusalLines = (refusals: ReadonlyArray<ChildRefusal> | undefined) => {
    for (const r of refusals ?? []) lines.push(`  ${" ".repeat(width)} refused: ${r.tool}${r.path === undefined ? "" : ` ${r.path}`} (${r.code}, step ${r.step})`)
  }
  for (const id of order) {
    const c = o.run.outcomes.find((x) => x.childId === id)
    if (c === undefined) {
      if (!readOnly.includes(id)) continue
      const r = o.results.find((x) => x.id === id)
      const detail = r === undefined ? "" : `${r.status} (${r.observations.length} actions), nothing to join`
      lines.push(`  ${pad(id, width)} ${pad("read_only", 32)}${detail}`)
      refusalLines(r?.refusals)
      continue
    }
    const transaction = c.transactionId === undefined || c.transactionId === mergeOf(c.childId) ? undefined : ids.short(c.transactionId)
    const detail = c.conflictPaths !== undefined
      ? `conflicts: ${c.conflictPaths.join(", ")}`
      : c.autoMergedPaths !== undefined
      ? transaction === undefined ? `merged: ${mergedDetail(c)}` : `${transaction} (merged: ${mergedDetail(c)})`
      : c.failedPath !== undefined
      ? `${c.failedPath}: ${c.reason ?? ""}`
      : classOf(c.status) === "landed"
      ? transaction ?? c.reason ?? ""
      : c.reason ?? transaction ?? ""
    // Padded first: colour codes must not count towards the column width.
    lines.push(`  ${pad(c.childId, width)} ${pad(c.status, 32).replace(c.status, statusColour(palette, c.status))}${detail}`.trimEnd())
    refusalLines(c.refusals)
    // A failed check was shown with the child's ending above; a passing one is one line here.
    const check = c.childVerify ?? o.results.find((x) => x.id === id)?.childVerify
    if (check?.status === "passed") lines.push(...checkLines(check, `  ${" ".repeat(width)} `).slice(0, 1))
    if (c.ranOn !== undefined) lines.push(`  ${" ".repeat(width)} ran on runner ${c.ranOn}`)
  }
  if (o.run.outcomes.some((c) => c.transactionId === mergeOf(c.childId))) {
    lines.push(`undo a child's merge: forkjoin rollback ${ids.short(mergeOf("<child>"))}`)
  }
  const open = o.conflicts.filter((c) => c.status === "open")
  if (open.length > 0) {
    lines.push("open conflicts:")
    for (const c of open) lines.push(`  ${c.path} of ${c.childId} (${c.reason}): forkjoin resolve '${ids.short(c.conflictId)}' --apply|--discard|--content FILE`)
  }
  // Blocked by the conflicts just listed: say what to do rather than list them again.
  const blocked = !o.finish.ok && o.finish.code === "unresolved_subagent_conflicts" && open.length > 0
  lines.push(
    o.finish.ok
      ? palette.green("finished")
      : `${palette.red("not finished")}: ${blocked ? `resolve the open conflict${open.length === 1 ? "" : "s"} above` : ids.shortIn(o.finish.message)}`
  )
  return lines.join("\n") + "\n"
}
