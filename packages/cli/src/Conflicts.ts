/**
 * `forkjoin conflicts` and `forkjoin resolve`: the conflicts the join held back, and closing
 * one with the child's side (of the conflicting lines, for text), the live file, or supplied content; both say on stderr (and in
 * `--json`'s `repairs`) what the startup repair of their engine did. The flags are in
 * `ConflictsCommand.ts` and `ResolveCommand.ts`.
 *
 * @since 0.1.0
 */
import type { RepairOutcome } from "@forkjoin/engine/Engine"
import * as OrchestratorConflicts from "@forkjoin/orchestrator/Conflicts"
import type { ChildOutcome } from "@forkjoin/schema"
import type { ConflictRecord } from "@forkjoin/schema/Conflict"
import { ConflictId, MergeRunIdInput } from "@forkjoin/schema/Ids"
import type { PatchHistoryRecord } from "@forkjoin/schema/PatchHistoryRecord"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import { conflictExcerpt } from "./internal/conflictText.ts"
import { UsageError } from "./internal/errors.ts"
import { orchestratorLayer } from "./internal/orchestratorLayer.ts"
import { historyDbOf, resolveWorkspace } from "./internal/workspace.ts"
import { repairsField, withRepairs } from "./Repair.ts"

/**
 * The conflicts `list` found, and what the startup repair did first (already on stderr).
 *
 * @category models
 * @since 0.1.0
 */
export interface ConflictList {
  readonly conflicts: ReadonlyArray<ConflictRecord>
  readonly repairs: ReadonlyArray<RepairOutcome>
}

/**
 * Lists the conflicts of the workspace (of one run with `run`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const list = Effect.fn("Conflicts.list")(function*(request: { readonly workspace: string; readonly db?: string | undefined; readonly run?: string | undefined }) {
  const runId = request.run === undefined
    ? undefined
    : yield* Schema.decodeUnknownEffect(MergeRunIdInput)(request.run).pipe(Effect.mapError((e) => new UsageError({ message: `--run: ${e.message}`, cause: e })))
  const root = yield* resolveWorkspace(request.workspace)
  const [conflicts, repairs] = yield* withRepairs(root, request.db, OrchestratorConflicts.list(runId === undefined ? {} : { runId })).pipe(
    Effect.provide(orchestratorLayer(root, historyDbOf(root, request.db)))
  )
  return { conflicts, repairs } satisfies ConflictList
})

/**
 * `{ "ok": true, "conflicts": [ { conflictId, runId, childId, path, status, reason, text } ] }`,
 * plus `"repairs": [...]` when the startup repair did something.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderListJson = ({ conflicts, repairs }: ConflictList): string =>
  JSON.stringify({
    ok: true,
    conflicts: conflicts.map((c) => ({
      conflictId: c.conflictId,
      runId: c.runId,
      childId: c.childId,
      path: c.path,
      status: c.status,
      reason: c.reason,
      text: c.text,
      ...(c.resolution === undefined ? {} : { resolution: c.resolution })
    })),
    ...repairsField(repairs)
  }) + "\n"

/**
 * Each conflict with its status, then the rendered conflict text of the open ones.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderListText = ({ conflicts }: ConflictList): string => {
  if (conflicts.length === 0) return "No conflicts.\n"
  const lines: Array<string> = []
  for (const c of conflicts) {
    lines.push(`${c.conflictId}  ${c.status}${c.resolution === undefined ? "" : ` (${c.resolution.kind})`}  ${c.reason}`)
    if (c.status === "open") {
      lines.push(...conflictExcerpt(c.text).map((l) => `    ${l}`))
      lines.push(`  resolve: forkjoin resolve '${c.conflictId}' --apply|--discard|--content FILE`)
    }
  }
  return lines.join("\n") + "\n"
}

/**
 * One `resolve` invocation, after flag parsing: exactly one of `apply`, `discard`, `content`.
 *
 * @category models
 * @since 0.1.0
 */
export interface ResolveRequest {
  readonly conflictId: string
  readonly workspace: string
  readonly db?: string | undefined
  readonly apply: boolean
  readonly discard: boolean
  readonly content?: string | undefined
}

/**
 * What `resolve` did: the written record (none for `--discard`), the child's new outcome when
 * its last conflict closed, and what the startup repair did first (already on stderr).
 *
 * @category models
 * @since 0.1.0
 */
export interface ResolveResult {
  readonly record: PatchHistoryRecord | undefined
  readonly outcome: ChildOutcome | undefined
  readonly repairs: ReadonlyArray<RepairOutcome>
}

/**
 * Resolves one conflict; resolves to the written record (none for `--discard`) and, when the
 * child's last conflict closed, the child's new outcome.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolve = Effect.fn("Conflicts.resolve")(function*(request: ResolveRequest) {
  const chosen = [request.apply, request.discard, request.content !== undefined].filter(Boolean).length
  if (chosen !== 1) return yield* new UsageError({ message: "give exactly one of --apply, --discard or --content FILE." })
  const conflictId = yield* Schema.decodeUnknownEffect(ConflictId)(request.conflictId).pipe(
    Effect.mapError((e) => new UsageError({ message: `CONFLICT_ID: ${e.message}`, cause: e }))
  )
  let resolution: OrchestratorConflicts.Resolution = request.apply ? { kind: "apply" } : { kind: "discard" }
  if (request.content !== undefined) {
    const file = request.content
    const bytes = yield* Effect.try({
      try: () => fs.readFileSync(file),
      catch: (e) => new UsageError({ message: `cannot read --content file '${file}' (${e instanceof Error ? e.message : String(e)}).`, cause: e })
    })
    resolution = { kind: "content", bytes }
  }
  const root = yield* resolveWorkspace(request.workspace)
  const [resolved, repairs] = yield* withRepairs(root, request.db, OrchestratorConflicts.resolve(conflictId, resolution)).pipe(
    Effect.provide(orchestratorLayer(root, historyDbOf(root, request.db)))
  )
  return { record: resolved.record, outcome: resolved.outcome, repairs } satisfies ResolveResult
})

/**
 * `{ "ok": true, "transactionId"?, "outcome"?, "repairs"? }` (`repairs` when the startup repair
 * did something).
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderResolveJson = (r: ResolveResult): string =>
  JSON.stringify({
    ok: true,
    ...(r.record === undefined ? {} : { transactionId: r.record.transactionId }),
    ...(r.outcome === undefined ? {} : { outcome: r.outcome }),
    ...repairsField(r.repairs)
  }) + "\n"

/**
 * What was written, and what happened to the child.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderResolveText = (r: { readonly record: PatchHistoryRecord | undefined; readonly outcome: ChildOutcome | undefined }): string =>
  [
    r.record === undefined ? "Resolved: the live file was kept." : `Resolved as ${r.record.transactionId}.`,
    ...(r.outcome === undefined
      ? ["The child has other open conflicts."]
      : [`Child ${r.outcome.childId}: ${r.outcome.status}${r.outcome.transactionId === undefined ? "" : ` (${r.outcome.transactionId})`}.`])
  ].join("\n") + "\n"
