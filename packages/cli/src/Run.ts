/**
 * `forkjoin run PLAN.json --export-only`: reads and validates a plan file (schemaVersion 1),
 * runs its children through the session runtime — mutating children stage into overlays and
 * export changesets, read-only children only read — and reports each child's status,
 * observations and changeset. The shared workspace is never written. Without `--export-only`
 * the run is refused: the join arrives with the orchestrator issue.
 *
 * @since 0.1.0
 */
import { Engine } from "@forkjoin/engine/Engine"
import { layerSqlite } from "@forkjoin/history/HistoryStoreSqlite"
import * as Artifacts from "@forkjoin/runtime/Artifacts"
import * as Children from "@forkjoin/runtime/Children"
import * as RunPlan from "@forkjoin/runtime/RunPlan"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { resolveWorkspace, UsageError } from "./Apply.ts"

/**
 * One `run` invocation, after flag parsing.
 *
 * @category models
 * @since 0.1.0
 */
export interface RunRequest {
  readonly planFile: string
  readonly workspace: string
  readonly db?: string | undefined
  readonly exportOnly: boolean
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
      catch: (e) => new UsageError({ message: `cannot read plan file '${file}' (${e instanceof Error ? e.message : String(e)}).` })
    })
    const plan = RunPlan.decodeJson(text)
    if (Result.isFailure(plan)) return yield* new UsageError({ message: `plan file '${file}': ${plan.failure.message}` })
    return plan.success
  })

/**
 * Runs the plan export-only and returns the run result (children in task order).
 *
 * @category constructors
 * @since 0.1.0
 */
export const run = Effect.fn("Run.run")(function*(request: RunRequest) {
  if (!request.exportOnly) {
    return yield* new UsageError({
      message: "forkjoin run needs --export-only for now: joining children's changesets into the workspace arrives with " +
        "the orchestrator issue (\"Orchestrator & the transactional join\"). Add --export-only to run the children and print their changesets."
    })
  }
  const root = yield* resolveWorkspace(request.workspace)
  const plan = yield* readPlan(request.planFile)
  const runId = `run-${randomUUID()}`
  const db = request.db ?? path.join(root, ".forkjoin", "history.db")
  const layer = Engine.layer({ root }).pipe(Layer.provide(layerSqlite(db)))
  return yield* Children.runExportOnly(plan, { runId, runDirectory: Artifacts.defaultRunDirectory(root, runId) }).pipe(
    Effect.provide(layer),
    Effect.mapError((e) => e instanceof UsageError ? e : new RunFailed({ message: e.message }))
  )
})

/**
 * The run could not complete (engine start, artifact or blob I/O): exit 1.
 *
 * @category errors
 * @since 0.1.0
 */
export class RunFailed extends Schema.TaggedError<RunFailed>()("RunFailed", {
  message: Schema.String
}) {}

/**
 * Exit 0 when every child finished cleanly, else 1.
 *
 * @category combinators
 * @since 0.1.0
 */
export const exitCodeOf = (result: Children.RunResult): 0 | 1 => result.results.every((r) => r.status === "finished") ? 0 : 1

/**
 * The `--json` line: `{ runId, results: [ { id, status, observations, changeset? } ] }`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderJson = (result: Children.RunResult): string =>
  JSON.stringify({
    runId: result.runId,
    results: result.results.map((r) => ({
      id: r.id,
      status: r.status,
      attempts: r.attempts,
      observations: r.observations,
      ...(r.changeset === undefined ? {} : { changeset: r.changeset }),
      artifacts: r.artifacts
    }))
  }) + "\n"

/**
 * Human output: one line per child, then each changeset entry.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderText = (result: Children.RunResult): string => {
  const lines = [`run ${result.runId}`]
  for (const r of result.results) {
    const refused = r.observations.filter((s) => !s.observation.ok).length
    lines.push(`${r.id}: ${r.status} (${r.observations.length} actions, ${refused} refused) artifacts ${r.artifacts}`)
    const entries = (r.changeset as { entries?: ReadonlyArray<{ kind: string; path: string; moveFrom?: string }> } | undefined)?.entries ?? []
    for (const e of entries) lines.push(`  ${e.kind} ${e.moveFrom === undefined ? "" : `${e.moveFrom} -> `}${e.path}`)
  }
  return lines.join("\n") + "\n"
}
