/**
 * Engine stage 5 (budgets): per-turn and per-workspace write budgets over the recorded
 * history. Reads usage from the `HistoryStore`; the comparison itself is pure. A busy or
 * corrupt history database is `history_unavailable` (stage 7, as the usage read has always
 * reported). Owns no planning.
 */
import type { HistoryStore, Usage } from "@forkjoin/history/HistoryStore"
import type { Plan } from "@forkjoin/patch"
import type { EnvironmentId, TurnId } from "@forkjoin/schema"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Effect from "effect/Effect"
import type { Budgets } from "../Engine.ts"
import { fromStoreError } from "../HistoryFailure.ts"

/** Refuses a plan that would bring `used` over `maxBytes` / `maxFiles` of `scope`. */
export const checkBudget = (
  plan: Plan,
  used: Usage,
  maxBytes: number | undefined,
  maxFiles: number | undefined,
  scope: string
): EngineError | undefined => {
  const bytes = plan.files.reduce((n, f) => n + (f.after?.length ?? 0), 0)
  const files = plan.files.length
  return (maxBytes !== undefined && used.bytes + bytes > maxBytes) || (maxFiles !== undefined && used.files + files > maxFiles)
    ? new EngineError({
      code: "budget_exceeded",
      stage: Stage.plan,
      paths: plan.files.map((f) => f.path),
      message: `This request would bring the ${scope} to ${used.bytes + bytes} bytes / ${
        used.files + files
      } files, over its budget of ${maxBytes ?? "∞"} bytes / ${maxFiles ?? "∞"} files. Write less or ask for a larger budget.`
    })
    : undefined
}

/** Checks the turn budget, then the workspace budget, reading each usage only when that budget is set. */
export const checkBudgets = (deps: {
  readonly store: HistoryStore["Service"]
  readonly environmentId: EnvironmentId
  readonly budgets: Budgets | undefined
}, turnId: TurnId, plan: Plan): Effect.Effect<void, EngineError> =>
  Effect.gen(function*() {
    const b = deps.budgets
    if (b === undefined) return
    if (b.turnBytes !== undefined || b.turnFiles !== undefined) {
      const used = yield* deps.store.usage(deps.environmentId, turnId).pipe(
        Effect.mapError((e) => fromStoreError(e, Stage.stage, [], "Reading the turn's usage failed"))
      )
      const over = checkBudget(plan, used, b.turnBytes, b.turnFiles, `turn '${turnId}'`)
      if (over !== undefined) return yield* over
    }
    if (b.workspaceBytes !== undefined || b.workspaceFiles !== undefined) {
      const used = yield* deps.store.usage(deps.environmentId, undefined).pipe(
        Effect.mapError((e) => fromStoreError(e, Stage.stage, [], "Reading the workspace usage failed"))
      )
      const over = checkBudget(plan, used, b.workspaceBytes, b.workspaceFiles, "workspace")
      if (over !== undefined) return yield* over
    }
  })
