/**
 * `forkjoin gc`: removes the artifact folders of finished runs (`.forkjoin/runs/<run-id>/`)
 * older than `--older-than D` (default 7d) and says what it removed, the bytes freed and
 * what it kept and why. The flags are in `GcCommand.ts`; which folders may go is decided in
 * `@forkjoin/orchestrator/Gc`, never here.
 *
 * @since 0.1.0
 */
import * as OrchestratorGc from "@forkjoin/orchestrator/Gc"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { UsageError } from "./internal/errors.ts"
import { orchestratorLayer } from "./internal/orchestratorLayer.ts"
import { historyDbOf, resolveWorkspace } from "./internal/workspace.ts"

/**
 * The age `--older-than` takes when it is not given.
 *
 * @category models
 * @since 0.1.0
 */
export const DEFAULT_OLDER_THAN = "7d"

const UNIT_MILLIS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/**
 * Parses an age like `30m`, `24h` or `7d`: a whole number then `s`, `m`, `h` or `d`; anything
 * else is the reason it is refused.
 *
 * @category constructors
 * @since 0.1.0
 */
export const parseOlderThan = (text: string): Result.Result<Duration.Duration, string> => {
  const m = /^(\d{1,15})([smhd])$/.exec(text)
  const millis = m === null ? Number.NaN : Number(m[1]) * UNIT_MILLIS[m[2]!]!
  return Number.isSafeInteger(millis)
    ? Result.succeed(Duration.millis(millis))
    : Result.fail(`--older-than: '${text}' is not an age like 30m, 24h or 7d (a whole number followed by s, m, h or d).`)
}

/**
 * One `gc` invocation, after flag parsing.
 *
 * @category models
 * @since 0.1.0
 */
export interface GcRequest {
  readonly workspace: string
  readonly db?: string | undefined
  readonly olderThan?: string | undefined
}

/**
 * What `gc` did, with the age it was given (for the human output).
 *
 * @category models
 * @since 0.1.0
 */
export interface GcResult {
  readonly olderThan: string
  readonly report: OrchestratorGc.GcReport
}

/**
 * Removes the workspace's finished runs' folders older than the requested age.
 *
 * @category constructors
 * @since 0.1.0
 */
export const gc = Effect.fn("Gc.gc")(function*(request: GcRequest) {
  const olderThan = request.olderThan ?? DEFAULT_OLDER_THAN
  const parsed = parseOlderThan(olderThan)
  if (Result.isFailure(parsed)) return yield* new UsageError({ message: parsed.failure })
  const root = yield* resolveWorkspace(request.workspace)
  const report = yield* OrchestratorGc.gc({ olderThan: parsed.success }).pipe(
    Effect.provide(orchestratorLayer(root, historyDbOf(root, request.db)))
  )
  return { olderThan, report } satisfies GcResult
})

/**
 * `{ "ok": true, "removed": [ { runId, bytes } ], "kept": [ { runId, reason } ] }`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderJson = (result: GcResult): string =>
  JSON.stringify({ ok: true, removed: result.report.removed, kept: result.report.kept }) + "\n"

const whyKept = (kept: OrchestratorGc.KeptRun, olderThan: string): string => {
  switch (kept.reason) {
    case "running":
      return `its join is unfinished; finish it with 'forkjoin run --resume ${kept.runId}'`
    case "blocked":
    case "open_conflicts":
      return `open conflicts need it; 'forkjoin conflicts --run ${kept.runId}' lists them`
    case "recent":
      return `newer than ${olderThan}`
  }
}

/**
 * One line per removed run (with its bytes) and per kept run (with why), then the bytes freed.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderText = (result: GcResult): string => {
  const { kept, removed } = result.report
  const lines = [
    ...removed.map((r) => `removed ${r.runId} (${r.bytes} bytes)`),
    ...kept.map((k) => `kept ${k.runId}: ${whyKept(k, result.olderThan)}`)
  ]
  const freed = removed.reduce((n, r) => n + r.bytes, 0)
  lines.push(
    removed.length === 0
      ? `Nothing to remove: no finished run older than ${result.olderThan}.`
      : `freed ${freed} bytes from ${removed.length} run folder(s)`
  )
  return lines.join("\n") + "\n"
}
