/**
 * `forkjoin conflicts` and `forkjoin resolve`: the conflicts the join held back, and closing
 * one with the child's side (of the conflicting lines, for text), the live file, or supplied content; both say on stderr (and in
 * `--json`'s `repairs`) what the startup repair of their engine did. The flags are in
 * `ConflictsCommand.ts` and `ResolveCommand.ts`. Both take run and conflict ids whole or
 * shortened as their text output shows them.
 *
 * @since 0.1.0
 */
import { Engine, type RepairOutcome } from "@forkjoin/engine/Engine"
import * as OrchestratorConflicts from "@forkjoin/orchestrator/Conflicts"
import type { ChildOutcome } from "@forkjoin/schema"
import type { ConflictRecord } from "@forkjoin/schema/Conflict"
import { ConflictId, MergeRunIdInput, type TransactionId } from "@forkjoin/schema/Ids"
import type { PatchHistoryRecord } from "@forkjoin/schema/PatchHistoryRecord"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import { conflictExcerpt } from "./internal/conflictText.ts"
import { UsageError } from "./internal/errors.ts"
import { orchestratorLayer } from "./internal/orchestratorLayer.ts"
import * as ShortIds from "./internal/shortIds.ts"
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
  /** The ids for text output. */
  readonly ids: ShortIds.ShortIds
  /** Only the open conflicts were asked for (`--open`). */
  readonly openOnly: boolean
}

/**
 * Lists the conflicts of the workspace, open and resolved (only the open ones with `open`, of
 * one run with `run`, whole or shortened).
 *
 * @category constructors
 * @since 0.1.0
 */
export const list = Effect.fn("Conflicts.list")(function*(
  request: { readonly workspace: string; readonly db?: string | undefined; readonly run?: string | undefined; readonly open?: boolean | undefined }
) {
  const root = yield* resolveWorkspace(request.workspace)
  const [[conflicts, ids], repairs] = yield* withRepairs(
    root,
    request.db,
    Effect.gen(function*() {
      const engine = yield* Engine
      const ids = yield* ShortIds.loadForDisplay(engine.environmentId)
      const runId = request.run === undefined ? undefined : yield* Schema.decodeUnknownEffect(MergeRunIdInput)(
        yield* ShortIds.expand(ids, "run", request.run, "--run")
      ).pipe(Effect.mapError((e) => new UsageError({ message: `--run: ${e.message}`, cause: e })))
      const conflicts = yield* OrchestratorConflicts.list({
        ...(runId === undefined ? {} : { runId }),
        ...(request.open === true ? { status: "open" as const } : {})
      })
      return [conflicts, ids] as const
    })
  ).pipe(Effect.provide(orchestratorLayer(root, historyDbOf(root, request.db))))
  return { conflicts, repairs, ids, openOnly: request.open === true } satisfies ConflictList
})

/**
 * `{ "ok": true, "conflicts": [ { conflictId, runId, childId, path, status, reason, text } ] }`
 * (a rollback's: `kind: "rollback"`, `transactionId` and `threadId` instead of `runId`, `childId`),
 * plus `"repairs": [...]` when the startup repair did something.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderListJson = ({ conflicts, repairs }: Pick<ConflictList, "conflicts" | "repairs">): string =>
  JSON.stringify({
    ok: true,
    conflicts: conflicts.map((c) => ({
      conflictId: c.conflictId,
      runId: c.runId,
      childId: c.childId,
      ...(c.kind === "rollback" ? { kind: c.kind, transactionId: c.transactionId, threadId: c.threadId } : {}),
      path: c.path,
      status: c.status,
      reason: c.reason,
      text: c.text,
      ...(c.resolution === undefined ? {} : { resolution: c.resolution })
    })),
    ...repairsField(repairs)
  }) + "\n"

/**
 * Each conflict (ids shortened) with its status, then the rendered conflict text of the open ones.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderListText = ({ conflicts, ids, openOnly }: Pick<ConflictList, "conflicts" | "ids" | "openOnly">): string => {
  if (conflicts.length === 0) return openOnly ? "No open conflicts.\n" : "No conflicts.\n"
  const lines: Array<string> = []
  for (const c of conflicts) {
    const id = ids.short(c.conflictId)
    lines.push(`${id}  ${c.status}${c.resolution === undefined ? "" : ` (${c.resolution.kind})`}  ${c.reason}`)
    if (c.status === "open") {
      lines.push(...conflictExcerpt(c.text).map((l) => `    ${l}`))
      lines.push(`  resolve: forkjoin resolve '${id}' --apply|--discard|--content FILE`)
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
  /** For a rollback's conflict: the transaction rolled back and how many of its conflicts stay open. */
  readonly rollback?: { readonly transactionId: TransactionId; readonly open: number } | undefined
  readonly repairs: ReadonlyArray<RepairOutcome>
  /** The ids for text output. */
  readonly ids: ShortIds.ShortIds
}

/**
 * Resolves one conflict (named whole or shortened); resolves to the written record (none for `--discard`) and, when the
 * child's last conflict closed, the child's new outcome.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolve = Effect.fn("Conflicts.resolve")(function*(request: ResolveRequest) {
  const chosen = [request.apply, request.discard, request.content !== undefined].filter(Boolean).length
  if (chosen !== 1) return yield* new UsageError({ message: "give exactly one of --apply, --discard or --content FILE." })
  yield* Schema.decodeUnknownEffect(ConflictId)(request.conflictId).pipe(
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
  const [[resolved, ids], repairs] = yield* withRepairs(
    root,
    request.db,
    Effect.gen(function*() {
      const engine = yield* Engine
      const named = yield* ShortIds.expandIn(engine.environmentId, "conflict", request.conflictId, "CONFLICT_ID")
      const resolved = yield* OrchestratorConflicts.resolve(ConflictId.make(named), resolution)
      return [resolved, yield* ShortIds.loadForDisplay(engine.environmentId)] as const
    })
  ).pipe(Effect.provide(orchestratorLayer(root, historyDbOf(root, request.db))))
  return { record: resolved.record, outcome: resolved.outcome, rollback: resolved.rollback, repairs, ids } satisfies ResolveResult
})

/**
 * `{ "ok": true, "transactionId"?, "outcome"?, "rollbackOf"?, "openConflicts"?, "repairs"? }`
 * (`rollbackOf` and `openConflicts` for a rollback's conflict; `repairs` when the startup
 * repair did something).
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderResolveJson = (r: ResolveResult): string =>
  JSON.stringify({
    ok: true,
    ...(r.record === undefined ? {} : { transactionId: r.record.transactionId }),
    ...(r.outcome === undefined ? {} : { outcome: r.outcome }),
    ...(r.rollback === undefined ? {} : { rollbackOf: r.rollback.transactionId, openConflicts: r.rollback.open }),
    ...repairsField(r.repairs)
  }) + "\n"

/**
 * What was written, and what happened to the child (ids shortened).
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderResolveText = (
  r: {
    readonly record: PatchHistoryRecord | undefined
    readonly outcome: ChildOutcome | undefined
    readonly rollback?: ResolveResult["rollback"]
    readonly ids: ShortIds.ShortIds
  }
): string =>
  r.rollback !== undefined
    ? (r.rollback.open > 0
      ? `Resolved. The rollback of ${r.ids.short(r.rollback.transactionId)} waits for ${r.rollback.open} more conflict(s); ` +
        "nothing is written until the last is resolved ('forkjoin conflicts --open' lists them)."
      : r.record === undefined
      ? `Resolved. The rollback of ${r.ids.short(r.rollback.transactionId)} had nothing left to write.`
      : `Resolved. Rolled back ${r.ids.short(r.rollback.transactionId)} as ${r.ids.short(r.record.transactionId)} (record #${r.record.commitOrdinal}).`) +
      "\n"
    : [
    r.record === undefined ? "Resolved: the live file was kept." : `Resolved as ${r.ids.short(r.record.transactionId)}.`,
    ...(r.outcome === undefined
      ? ["The child has other open conflicts."]
      : [`Child ${r.outcome.childId}: ${r.outcome.status}${r.outcome.transactionId === undefined ? "" : ` (${r.ids.short(r.outcome.transactionId)})`}.`])
  ].join("\n") + "\n"
