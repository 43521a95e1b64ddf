/**
 * `forkjoin gc`: removes the artifact folders of finished runs (`.forkjoin/runs/<run-id>/`)
 * older than `--older-than D` (default 7d) and says what it removed, the bytes freed and
 * what it kept and why; with `--prune-snapshots-older-than D` (off by default) it also drops
 * the content of snapshots only records older than D use (records and hashes stay). The flags
 * are in `GcCommand.ts`; what may go is decided in `@forkjoin/orchestrator/Gc` and the history
 * store, never here.
 *
 * @since 0.1.0
 */
import * as Age from "@forkjoin/autonomy/Age"
import { Engine } from "@forkjoin/engine/Engine"
import * as OrchestratorGc from "@forkjoin/orchestrator/Gc"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { UsageError } from "./internal/errors.ts"
import * as ShortIds from "./internal/shortIds.ts"
import { orchestratorLayer } from "./internal/orchestratorLayer.ts"
import { historyDbOf, resolveWorkspace } from "./internal/workspace.ts"

/**
 * The age `--older-than` takes when it is not given.
 *
 * @category models
 * @since 0.1.0
 */
export const DEFAULT_OLDER_THAN = "7d"

/**
 * Parses an age like `30m`, `24h` or `7d`: a whole number then `s`, `m`, `h` or `d`; anything
 * else is the reason it is refused.
 *
 * @category constructors
 * @since 0.1.0
 */
export const parseOlderThan = (text: string): Result.Result<Duration.Duration, string> => parseAge("--older-than", text)

/** `parseOlderThan` for any flag: the refusal names `flag`. */
const parseAge = (flag: string, text: string): Result.Result<Duration.Duration, string> =>
  Result.mapError(Age.parse(text), (reason) => `${flag}: ${reason}.`)

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
  readonly pruneSnapshotsOlderThan?: string | undefined
  /** Read the short ids text output shows (the ids near the runs it names); `--json` leaves this off. */
  readonly shortIds?: boolean | undefined
}

/**
 * What `gc` did, with the ages it was given (for the human output).
 *
 * @category models
 * @since 0.1.0
 */
export interface GcResult {
  readonly olderThan: string
  readonly pruneSnapshotsOlderThan?: string | undefined
  readonly report: OrchestratorGc.GcReport
  /** The ids for text output (default: whole). */
  readonly ids?: ShortIds.ShortIds | undefined
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
  const prune = request.pruneSnapshotsOlderThan === undefined
    ? undefined
    : parseAge("--prune-snapshots-older-than", request.pruneSnapshotsOlderThan)
  if (prune !== undefined && Result.isFailure(prune)) return yield* new UsageError({ message: prune.failure })
  const root = yield* resolveWorkspace(request.workspace)
  const [report, ids] = yield* Effect.gen(function*() {
    const report = yield* OrchestratorGc.gc({ olderThan: parsed.success, pruneSnapshotsOlderThan: prune?.success })
    const named = [...report.removed.map((r) => r.runId), ...report.kept.map((k) => k.runId)]
    return [report, request.shortIds === true ? yield* ShortIds.loadForDisplay((yield* Engine).environmentId, named) : ShortIds.fullIds] as const
  }).pipe(Effect.provide(orchestratorLayer(root, historyDbOf(root, request.db))))
  return { olderThan, pruneSnapshotsOlderThan: request.pruneSnapshotsOlderThan, report, ids } satisfies GcResult
})

/**
 * `{ "ok": true, "removed": [ { runId, bytes } ], "kept": [ { runId, reason } ] }`, plus
 * `"snapshots": { snapshotsPruned, chunksRemoved, bytesFreed, databaseBytesBefore,
 * databaseBytesAfter }` when snapshot retention ran.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderJson = (result: GcResult): string =>
  JSON.stringify({
    ok: true,
    removed: result.report.removed,
    kept: result.report.kept,
    ...(result.report.snapshots === undefined ? {} : { snapshots: result.report.snapshots })
  }) + "\n"

const whyKept = (kept: OrchestratorGc.KeptRun, olderThan: string): string => {
  switch (kept.reason) {
    case "live":
      return "a forkjoin process is running or resuming it right now; run gc again once it has ended"
    case "live_session":
      return "the agent session that started it is still running; run gc again once it has ended"
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
  // Only ids the history knows are cut (an export-only run's never reached it).
  const shown = (text: string) => (result.ids ?? ShortIds.fullIds).shortIn(text)
  const lines = [
    ...removed.map((r) => `removed ${shown(r.runId)} (${r.bytes} bytes)`),
    ...kept.map((k) => shown(`kept ${k.runId}: ${whyKept(k, result.olderThan)}`))
  ]
  const freed = removed.reduce((n, r) => n + r.bytes, 0)
  lines.push(
    removed.length === 0
      ? `Nothing to remove: no finished run older than ${result.olderThan}.`
      : `freed ${freed} bytes from ${removed.length} run folder(s)`
  )
  const s = result.report.snapshots
  if (s !== undefined) {
    lines.push(
      s.snapshotsPruned === 0
        ? `No snapshot to prune: none is used only by records older than ${result.pruneSnapshotsOlderThan}.`
        : `pruned the content of ${s.snapshotsPruned} snapshot(s) used only by records older than ` +
          `${result.pruneSnapshotsOlderThan} (${s.chunksRemoved} chunk(s), ${s.bytesFreed} bytes; history database ` +
          `${s.databaseBytesBefore} -> ${s.databaseBytesAfter} bytes); records and hashes are kept`
    )
  }
  return lines.join("\n") + "\n"
}
