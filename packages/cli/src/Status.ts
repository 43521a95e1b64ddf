/**
 * `forkjoin status`: what needs attention in a workspace: joins a crash interrupted (resume
 * them with `forkjoin run --resume RUN_ID`), open conflicts, children whose verification failed
 * while their change stayed applied (`forkjoin rollback TRANSACTION_ID`), and `commit_state_uncertain`
 * outcomes nobody acknowledged (`forkjoin repair --ack ID`); also the history resets recorded
 * for the workspace, the runners of its cluster (`--cluster`, or the configuration's), and what the startup repair of this very call did (stderr, and `repairs`
 * in `--json`). The flags are in `StatusCommand.ts`.
 *
 * @since 0.1.0
 */
import { Engine, type RepairOutcome, type UncertainOutcome } from "@forkjoin/engine/Engine"
import type { HistoryReset } from "@forkjoin/history/HistoryStore"
import { MergeStore } from "@forkjoin/history/MergeStore"
import type { ConflictRecord } from "@forkjoin/schema/Conflict"
import type { ClusterRunners } from "@forkjoin/schema/GatewayApi"
import type { MergeRun } from "@forkjoin/schema/MergeRun"
import * as Conflicts from "@forkjoin/orchestrator/Conflicts"
import * as Rollback from "@forkjoin/orchestrator/Rollback"
import * as Verify from "@forkjoin/orchestrator/Verify"
import * as Effect from "effect/Effect"
import { configuredCluster, runnersOf } from "./internal/clusterRunners.ts"
import { toHistoryCommandError } from "./internal/errors.ts"
import { orchestratorLayer } from "./internal/orchestratorLayer.ts"
import * as ShortIds from "./internal/shortIds.ts"
import { historyDbOf, openWorkspace } from "./internal/workspace.ts"
import { announceRepairs, reasonText, uncertainLine } from "./Repair.ts"

/**
 * What `status` reports.
 *
 * @category models
 * @since 0.1.0
 */
export interface StatusReport {
  /** The workspace's real path and the explicit `--db`, for the commands the text suggests. */
  readonly root: string
  readonly db: string | undefined
  readonly interruptedRuns: ReadonlyArray<MergeRun>
  readonly openConflicts: ReadonlyArray<ConflictRecord>
  /** Children with every conflict resolved whose other changes are not applied yet (`forkjoin run --resume`). */
  readonly unsettledChildren?: ReadonlyArray<{ readonly runId: string; readonly childId: string }>
  /** Transactions whose held rollback has every conflict resolved but was not applied (`forkjoin rollback TX`). */
  readonly unfinishedRollbacks?: ReadonlyArray<string>
  /** `verification_failed` children whose transaction no rollback has undone yet. */
  readonly verificationFailures?: ReadonlyArray<Verify.VerificationFailure>
  /** Unacknowledged `commit_state_uncertain` outcomes, in commit order. */
  readonly uncertainOutcomes: ReadonlyArray<UncertainOutcome>
  /** Recorded resets of the workspace's history, oldest first. */
  readonly historyResets: ReadonlyArray<HistoryReset>
  /** What the startup repair of this call did. */
  readonly repairs: ReadonlyArray<RepairOutcome>
  /** Set on the first open after the folder was moved: where it was and where it is (its history came along). */
  readonly moved: { readonly from: string; readonly to: string } | undefined
  /** Set on the first open of a copy whose original is still in place: the original's path. */
  readonly copiedFrom: string | undefined
  /** The ids for text output (default: whole). */
  readonly ids?: ShortIds.ShortIds | undefined
  /** The cluster's runners (`--cluster`, or the configuration's), or why they could not be listed. */
  readonly cluster?: ClusterRunners | undefined
}

/**
 * Reads the interrupted runs, open conflicts, uncertain outcomes and history resets of the
 * workspace; the startup repair this runs is announced on stderr.
 *
 * @category constructors
 * @since 0.1.0
 */
export const status = Effect.fn("Status.status")(function*(
  request: { readonly workspace: string; readonly db?: string | undefined; readonly cluster?: string | undefined }
) {
  const { copiedFrom, moved, root } = yield* openWorkspace(request.workspace)
  const configured = request.cluster ?? (yield* configuredCluster(root))
  const cluster = configured === undefined || configured === "none" ? undefined : yield* runnersOf(configured, process.cwd())
  return yield* Effect.gen(function*() {
    const engine = yield* Engine
    const repairs = yield* announceRepairs(root, request.db)
    const store = yield* MergeStore
    const { interruptedRuns, openConflicts, unsettledChildren, verificationFailures } = yield* Effect.all({
      interruptedRuns: store.listRuns({ environmentId: engine.environmentId, status: "running" }),
      openConflicts: store.listConflicts({ environmentId: engine.environmentId, status: "open" }),
      unsettledChildren: Conflicts.unsettled(engine.environmentId),
      verificationFailures: Verify.failures(engine.environmentId)
    }).pipe(Effect.mapError(toHistoryCommandError("read")))
    const unfinishedRollbacks = yield* Rollback.unfinished
    const uncertainOutcomes = yield* engine.uncertainOutcomes
    const historyResets = yield* engine.historyResets
    const ids = yield* ShortIds.loadForDisplay(engine.environmentId)
    return {
      root,
      db: request.db,
      interruptedRuns,
      openConflicts,
      unsettledChildren,
      unfinishedRollbacks,
      verificationFailures,
      uncertainOutcomes,
      historyResets,
      repairs,
      moved,
      copiedFrom,
      ids,
      cluster
    } satisfies StatusReport
  }).pipe(Effect.provide(orchestratorLayer(root, historyDbOf(root, request.db))))
})

/**
 * `{ "ok": true, "interruptedRuns": [ { runId, createdAt, pending } ], "openConflicts": [ { conflictId, path } ],
 * "unsettledChildren": [ { runId, childId } ], "unfinishedRollbacks": [ { transactionId } ],
 * "verificationFailures": [ { runId, childId, transactionId } ],
 * "uncertainOutcomes": [ { recordId, transactionId, commitOrdinal, committedAt, paths } ], "historyResets": [...],
 * "repairs": [...], "moved"?: { from, to }, "copiedFrom"?: path }` (`moved` and `copiedFrom` only on the
 * first open after the folder was moved or copied).
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
    openConflicts: r.openConflicts.map((c) => ({ conflictId: c.conflictId, runId: c.runId, childId: c.childId, path: c.path })),
    unsettledChildren: r.unsettledChildren ?? [],
    unfinishedRollbacks: (r.unfinishedRollbacks ?? []).map((transactionId) => ({ transactionId })),
    verificationFailures: r.verificationFailures ?? [],
    uncertainOutcomes: r.uncertainOutcomes,
    historyResets: r.historyResets,
    repairs: r.repairs,
    ...(r.moved === undefined ? {} : { moved: r.moved }),
    ...(r.copiedFrom === undefined ? {} : { copiedFrom: r.copiedFrom }),
    ...(r.cluster === undefined ? {} : { cluster: r.cluster })
  }) + "\n"

/**
 * One line per item, with the command that deals with it ("Nothing needs attention." when
 * there is none), then one line per recorded history reset; run and conflict ids shortened.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderText = (r: StatusReport): string => {
  const lines: Array<string> = []
  const ids = r.ids ?? ShortIds.fullIds
  for (const run of r.interruptedRuns) {
    const pending = run.outcomes.filter((o) => o.status === "pending").length
    lines.push(`interrupted run ${ids.short(run.runId)} (${pending} child(ren) not joined yet): forkjoin run --resume ${ids.short(run.runId)}`)
  }
  for (const c of r.openConflicts) lines.push(`open conflict: forkjoin resolve '${ids.short(c.conflictId)}' --apply|--discard|--content FILE`)
  for (const u of r.unsettledChildren ?? []) {
    lines.push(`child ${u.childId} of run ${ids.short(u.runId)} has every conflict resolved but the rest of its changes not applied: forkjoin run --resume ${ids.short(u.runId)}`)
  }
  for (const tx of r.unfinishedRollbacks ?? []) {
    lines.push(`the rollback of ${ids.shortIn(tx)} has every held conflict resolved but was not applied: forkjoin rollback ${ids.shortIn(tx)}`)
  }
  for (const f of r.verificationFailures ?? []) {
    lines.push(
      `verification failed for child ${f.childId} of run ${ids.short(f.runId)} and its change is still applied: ` +
        `put its files right, then forkjoin rollback ${ids.shortIn(f.transactionId)}`
    )
  }
  for (const u of r.uncertainOutcomes) lines.push(uncertainLine(u, r.root, r.db))
  if (lines.length === 0) lines.push("Nothing needs attention.")
  for (const reset of r.historyResets) {
    lines.push(
      `history reset ${reset.resetAt}: the previous history (${reset.previousHistoryId}, up to record #${reset.previousLastOrdinal}) ` +
        `was ${reasonText(reset.reason)}; records since are in ${reset.historyId}`
    )
  }
  const c = r.cluster
  if (c !== undefined) {
    lines.push(
      c.error !== undefined
        ? `cluster ${c.url}: runners cannot be listed (${c.error})`
        : c.runners.length === 0
        ? `cluster ${c.url}: no runner has joined; start one with 'forkjoin runner --cluster URL'`
        : `cluster ${c.url}: ${c.runners.length} runner(s): ${c.runners.join(", ")}${c.unhealthy.length === 0 ? "" : `; not answering: ${c.unhealthy.join(", ")}`}`
    )
  }
  return lines.join("\n") + "\n"
}
