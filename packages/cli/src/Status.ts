/**
 * `forkjoin status`: what needs attention in a workspace: joins a crash interrupted (resume
 * them with `forkjoin run --resume RUN_ID`) and open conflicts. The flags are in
 * `StatusCommand.ts`.
 *
 * @since 0.1.0
 */
import { Engine } from "@forkjoin/engine/Engine"
import { MergeStore } from "@forkjoin/history/MergeStore"
import type { ConflictRecord } from "@forkjoin/schema/Conflict"
import type { MergeRun } from "@forkjoin/schema/MergeRun"
import * as Effect from "effect/Effect"
import { toHistoryCommandError } from "./internal/errors.ts"
import { orchestratorLayer } from "./internal/orchestratorLayer.ts"
import { historyDbOf, resolveWorkspace } from "./internal/workspace.ts"

/**
 * What `status` reports.
 *
 * @category models
 * @since 0.1.0
 */
export interface StatusReport {
  readonly interruptedRuns: ReadonlyArray<MergeRun>
  readonly openConflicts: ReadonlyArray<ConflictRecord>
}

/**
 * Reads the interrupted runs and open conflicts of the workspace.
 *
 * @category constructors
 * @since 0.1.0
 */
export const status = Effect.fn("Status.status")(function*(request: { readonly workspace: string; readonly db?: string | undefined }) {
  const root = yield* resolveWorkspace(request.workspace)
  return yield* Effect.gen(function*() {
    const engine = yield* Engine
    const store = yield* MergeStore
    const interruptedRuns = yield* store.listRuns({ environmentId: engine.environmentId, status: "running" })
    const openConflicts = yield* store.listConflicts({ environmentId: engine.environmentId, status: "open" })
    return { interruptedRuns, openConflicts } satisfies StatusReport
  }).pipe(Effect.mapError(toHistoryCommandError("read")), Effect.provide(orchestratorLayer(root, historyDbOf(root, request.db))))
})

/**
 * `{ "ok": true, "interruptedRuns": [ { runId, createdAt, pending } ], "openConflicts": [ { conflictId, path } ] }`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderJson = (r: StatusReport): string =>
  JSON.stringify({
    ok: true,
    interruptedRuns: r.interruptedRuns.map((run) => ({
      runId: run.runId,
      createdAt: run.createdAt,
      pending: run.outcomes.filter((o) => o.status === "pending").map((o) => o.childId)
    })),
    openConflicts: r.openConflicts.map((c) => ({ conflictId: c.conflictId, runId: c.runId, childId: c.childId, path: c.path }))
  }) + "\n"

/**
 * One line per item, with the command that deals with it; "Nothing needs attention." otherwise.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderText = (r: StatusReport): string => {
  if (r.interruptedRuns.length === 0 && r.openConflicts.length === 0) return "Nothing needs attention.\n"
  const lines: Array<string> = []
  for (const run of r.interruptedRuns) {
    const pending = run.outcomes.filter((o) => o.status === "pending").length
    lines.push(`interrupted run ${run.runId} (${pending} child(ren) not joined yet): forkjoin run --resume ${run.runId}`)
  }
  for (const c of r.openConflicts) lines.push(`open conflict ${c.conflictId}: forkjoin resolve '${c.conflictId}' --apply|--discard|--content FILE`)
  return lines.join("\n") + "\n"
}
