/**
 * `forkjoin run PLAN.json --export-only`: reads and validates a plan file (schemaVersion 1),
 * runs its children through the session runtime — mutating children stage into overlays and
 * export changesets, read-only children only read — and reports each child's status,
 * observations and changeset. The shared workspace is never written. Without `--export-only`
 * the run is refused: the join arrives with the orchestrator issue. The flags are in
 * `RunCommand.ts`, what a failure prints in `internal/errors.ts`.
 *
 * @since 0.1.0
 */
import * as Artifacts from "@forkjoin/runtime/Artifacts"
import * as Children from "@forkjoin/runtime/Children"
import * as RunPlan from "@forkjoin/runtime/RunPlan"
import { encodeChangeset } from "@forkjoin/runtime/Session"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import { RunFailed, UsageError } from "./internal/errors.ts"
import { engineLayer, historyDbOf, resolveWorkspace } from "./internal/workspace.ts"

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
  return yield* Children.runExportOnly(plan, { runId, runDirectory: Artifacts.defaultRunDirectory(root, runId) }).pipe(
    Effect.provide(engineLayer(root, historyDbOf(root, request.db))),
    Effect.mapError((e) => new RunFailed({ message: e.message, cause: e }))
  )
})

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
      ...(r.changeset === undefined ? {} : { changeset: encodeChangeset(r.changeset) }),
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
    for (const e of r.changeset?.entries ?? []) lines.push(`  ${e.kind} ${e.moveFrom === undefined ? "" : `${e.moveFrom} -> `}${e.path}`)
  }
  return lines.join("\n") + "\n"
}
