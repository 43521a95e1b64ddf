/**
 * Engine stages 1–5 of one request, before any lock: shape limits, version guards, resolution
 * of every target, the grant, the plan (compiled by the caller from the live files), new
 * directories and budgets. Each check is its stage's module; this one only runs them in SPEC
 * order, with the crash-test fault points between stages. Stages 6–10 are `commitLocked.ts`.
 */
import type { HistoryStore } from "@forkjoin/history/HistoryStore"
import type { FileState, Plan } from "@forkjoin/patch"
import type { EnvironmentId } from "@forkjoin/schema"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Effect from "effect/Effect"
import type * as Result from "effect/Result"
import type { Budgets, Limits, RequestContext } from "../Engine.ts"
import type { Grant } from "../Grant.ts"
import { authorizePlan, checkDirectories, checkWriteGrant, missingDirectories } from "./authorize.ts"
import { checkBudgets } from "./budgets.ts"
import type { Prepared } from "./commitLocked.ts"
import { stepsOf } from "./commit.ts"
import * as Fault from "../Fault.ts"
import type { ProgressListener } from "../Progress.ts"
import { checkGuardForm, checkGuards, guardsOf } from "./guards.ts"
import { checkFileCount, checkFileSizes } from "./limits.ts"
import { checkScope, checkScopeForm } from "./scope.ts"
import { type ResolveContext, type ResolvedTarget, resolvingTargets } from "./resolve.ts"
import { toEngineError } from "./toEngineError.ts"
import { runWithTurns } from "./turns.ts"

/** What stages 1–5 need from the engine. */
export interface PrepareDeps {
  readonly ctx: ResolveContext
  readonly store: HistoryStore["Service"]
  readonly environmentId: EnvironmentId
  readonly budgets: Budgets | undefined
}

/** Builds the plan from the live state of the resolved targets (stage 5). */
export type Compile = (
  files: ReadonlyMap<string, FileState>,
  targets: ReadonlyMap<string, ResolvedTarget>
) => Result.Result<Plan, EngineError>

/** Fails with `error` when there is one. */
const check = (error: EngineError | undefined): Effect.Effect<void, EngineError> =>
  error === undefined ? Effect.void : Effect.fail(error)

/**
 * Runs stages 1–5 for the request's target paths `rels`. `isPatch`: the planner already
 * enforced the overwrite grant, so the plan authorization is skipped.
 */
export const prepare = (
  deps: PrepareDeps,
  request: RequestContext,
  options: {
    readonly rels: ReadonlyArray<string>
    readonly limits: Limits
    readonly grant: Grant
    readonly compile: Compile
    readonly isPatch: boolean
    readonly onProgress?: ProgressListener | undefined
  }
): Effect.Effect<Prepared, EngineError> =>
  Effect.gen(function*() {
    const { compile, grant, limits, onProgress, rels } = options
    // Stage 1: limits on the shape of the request.
    yield* check(checkFileCount(rels, limits))
    yield* check(checkScopeForm(request.writeScope))
    // Stage 2 (guards): well-formed version guards.
    const guards = guardsOf(request.expect)
    yield* check(checkGuardForm(guards))
    yield* Fault.afterStage(Stage.parse)
    // Stage 3: resolve every target (and every guarded path).
    const guardPaths = guards.map(([p]) => p).filter((p) => !rels.includes(p))
    const all = [...rels, ...guardPaths]
    onProgress?.({ _tag: "Resolving", paths: all.length })
    const resolved = yield* runWithTurns(() => resolvingTargets(deps.ctx, all), (e) => toEngineError(e, Stage.resolve, all))
    const targets = new Map(resolved.map((t) => [t.path, t]))
    const files = new Map(resolved.map((t) => [t.path, t.state]))
    yield* check(checkGuards(guards, files))
    yield* Fault.afterStage(Stage.resolve)
    // Stage 4: authorize.
    yield* check(checkWriteGrant(grant, rels))
    // Where stage 3 found each path lands (re-checked under the lock at stage 6).
    if (request.writeScope !== undefined) {
      const written = new Set(rels)
      yield* check(checkScope(deps.ctx, request.writeScope, resolved.filter((t) => written.has(t.path)), Stage.authorize))
    }
    yield* Fault.afterStage(Stage.authorize)
    // Stage 5: plan the exact virtual workspace.
    onProgress?.({ _tag: "Planning", paths: rels.length })
    const compiled = yield* Effect.try({ try: () => compile(files, targets), catch: (e) => toEngineError(e, Stage.plan, rels) })
    if (compiled._tag === "Failure") return yield* compiled.failure
    const plan = compiled.success
    if (plan.files.length === 0) {
      return yield* new EngineError({
        code: "patch_syntax",
        stage: Stage.plan,
        paths: rels,
        message: "The request changes nothing (every file already has the requested content)."
      })
    }
    yield* check(checkFileSizes(plan, limits))
    if (!options.isPatch) yield* check(authorizePlan(plan, grant))
    const steps = yield* Effect.try({ try: () => stepsOf(plan, targets), catch: (e) => toEngineError(e, Stage.plan, rels) })
    const missingDirs = missingDirectories(steps.filter((s) => s.after !== undefined).map((s) => s.absolute))
    yield* check(checkDirectories(missingDirs, grant, deps.ctx.root))
    yield* checkBudgets(deps, request.turnId, plan)
    yield* Fault.afterStage(Stage.plan)
    return { request, plan, steps, targets, missingDirs, onProgress }
  })
