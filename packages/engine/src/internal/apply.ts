/**
 * The two ways into the write path: an `apply_patch` text (parsed and planned by
 * `@forkjoin/patch` against the live files) and a precomputed plan (checked against its
 * baseline). Both run stages 1–5 (`prepare.ts`), take the in-process path locks and the
 * cross-process workspace lock, and run stages 6–10 (`commitLocked.ts`).
 */
import { parsePatch, patchTargets, planPatch } from "@forkjoin/patch"
import type { PatchHistoryRecord } from "@forkjoin/schema"
import type { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Effect from "effect/Effect"
import type { EngineConfig, LockedSteps, PatchRequest, PlanRequest, RequestContext } from "../Engine.ts"
import { Grants } from "../Grant.ts"
import { checkBaseline } from "./baseline.ts"
import { type CommitDeps, commitLocked } from "./commitLocked.ts"
import * as Fault from "../Fault.ts"
import { checkPatchSize, limitsOf } from "./limits.ts"
import { withPathLocks, type WorkspaceLock } from "./lock.ts"
import { type Compile, prepare } from "./prepare.ts"
import { CurrentListener } from "../Progress.ts"

/** The engine as the write path sees it. */
export interface ApplyDeps extends CommitDeps {
  readonly config: EngineConfig
  readonly lock: WorkspaceLock
  readonly lockTimeoutMs: number
}

/**
 * Stages 3–5 and then 6–10 under the path locks (sorted) and the workspace lock, all inside
 * the workspace lock's in-process part: the stages let the event loop turn, and another apply
 * of this engine waits for this one, then plans against its result.
 */
const transact = <E, R>(
  deps: ApplyDeps,
  request: RequestContext,
  rels: ReadonlyArray<string>,
  compile: Compile,
  isPatch: boolean,
  locked?: LockedSteps<E, R>
): Effect.Effect<PatchHistoryRecord, EngineError | E, R> =>
  deps.lock.serially(Effect.gen(function*() {
    const onProgress = request.onProgress ?? (yield* CurrentListener)
    const prepared = yield* prepare({ ...deps, budgets: deps.config.budgets }, request, {
      rels,
      limits: limitsOf(deps.config.limits, request.limits),
      grant: request.grant ?? Grants.writeCreateDirs,
      compile,
      isPatch,
      onProgress
    })
    const keys = prepared.steps.map((s) => (deps.ctx.caseInsensitive ? s.absolute.toLowerCase() : s.absolute))
    return yield* withPathLocks(
      keys,
      deps.lock.held(deps.lockTimeoutMs, prepared.plan.files.map((f) => f.path), commitLocked(deps, prepared, locked), onProgress)
    )
  }))

/** Applies an apply_patch text all-or-nothing. */
export const applyPatch = (deps: ApplyDeps, request: PatchRequest): Effect.Effect<PatchHistoryRecord, EngineError> =>
  Effect.gen(function*() {
    const tooLarge = checkPatchSize(request.patch, limitsOf(deps.config.limits, request.limits))
    if (tooLarge !== undefined) return yield* tooLarge
    yield* Fault.afterStage(Stage.normalize)
    const profile = request.profile ?? "native"
    const parsed = parsePatch(request.patch, { profile })
    if (parsed._tag === "Failure") return yield* parsed.failure
    const rels = patchTargets(parsed.success)
    if (rels._tag === "Failure") return yield* rels.failure
    const grant = request.grant ?? Grants.writeCreateDirs
    return yield* transact<never, never>(
      deps,
      request,
      rels.success,
      (files) =>
        planPatch(parsed.success, files, {
          profile,
          allowOverwrite: grant.overwrite,
          preserveLineEndings: request.preserveLineEndings ?? false
        }),
      true
    )
  })

/** Applies a precomputed plan all-or-nothing; every planned `before` must be the live content. */
export const applyPlan = <E, R>(deps: ApplyDeps, request: PlanRequest<E, R>): Effect.Effect<PatchHistoryRecord, EngineError | E, R> =>
  Effect.gen(function*() {
    const rels = [...new Set(request.plan.files.flatMap((f) => (f.moveFrom === undefined ? [f.path] : [f.path, f.moveFrom])))]
    yield* Fault.afterStage(Stage.normalize)
    return yield* transact(deps, request, rels, (files) => checkBaseline(request.plan, files), false, request.locked)
  })
