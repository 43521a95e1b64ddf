/**
 * `forkjoin repair`: startup repair (SPEC §4.5) run on demand. Finishes, undoes or flags
 * every intent a crashed process left open, under the workspace lock; lists the
 * `commit_state_uncertain` outcomes nobody acknowledged yet, acknowledges one (`--ack ID`),
 * and with `--reset-history` deliberately adopts a history database the workspace does not
 * recognise (missing, emptied, another one), recording the reset. This module owns running
 * that and rendering it, and the notice every command that ran an implicit repair prints on
 * stderr (`announceRepairs`, `withRepairs`) and adds to its `--json` (`repairsField`; a
 * failure's line gets it through `noteRepairs` in `internal/errors.ts`).
 * The engine owns the repair itself, `RepairCommand.ts` the flags,
 * `internal/errors.ts` what a failure prints.
 *
 * @since 0.1.0
 */
import { Engine, type RepairOutcome, type UncertainOutcome } from "@forkjoin/engine/Engine"
import type { HistoryReset } from "@forkjoin/history/HistoryStore"
import * as Effect from "effect/Effect"
import { noteRepairs, repairsMember } from "./internal/errors.ts"
import { writeStderr } from "./internal/output.ts"
import { engineLayer, historyDbOf, resolveWorkspace } from "./internal/workspace.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * One `repair` invocation, after flag parsing.
 *
 * @category models
 * @since 0.1.0
 */
export interface RepairRequest {
  /** The `--workspace` directory as given; resolved to its real path. */
  readonly workspace: string
  /** `--db`, default `<workspace>/.forkjoin/history.db`. */
  readonly db?: string | undefined
  /** `--ack ID`: the record or transaction id of an uncertain outcome whose files were checked. */
  readonly ack?: string | undefined
  /** `--reset-history`: adopt a database the workspace does not recognise, recording the reset. */
  readonly resetHistory?: boolean | undefined
}

/**
 * What a repair did: one outcome per intent it found open.
 *
 * @category models
 * @since 0.1.0
 */
export type RepairReport = Effect.Success<(typeof Engine.Service)["repair"]>

/**
 * Everything `forkjoin repair` reports: the repair, the reset (when asked for and needed), the
 * acknowledgement (with `--ack`) and the uncertain outcomes still unacknowledged afterwards.
 *
 * @category models
 * @since 0.1.0
 */
export interface RepairResult {
  /** The workspace's real path and the explicit `--db`, for the commands the text suggests. */
  readonly root: string
  readonly db: string | undefined
  readonly report: RepairReport
  readonly resetRequested: boolean
  readonly reset: HistoryReset | undefined
  readonly acknowledged: UncertainOutcome | undefined
  readonly uncertain: ReadonlyArray<UncertainOutcome>
}

// -------------------------------------------------------------------------------------
// effectful shell
// -------------------------------------------------------------------------------------

/**
 * Runs the repair on the workspace's engine (not also at engine start: once is the point),
 * then the acknowledgement, then lists what is still uncertain.
 *
 * @category constructors
 * @since 0.1.0
 */
export const repair = Effect.fn("Repair.repair")(function*(request: RepairRequest) {
  const root = yield* resolveWorkspace(request.workspace)
  const db = historyDbOf(root, request.db)
  const resetRequested = request.resetHistory === true
  return yield* Effect.gen(function*() {
    const engine = yield* Engine
    const report = yield* engine.repair
    const acknowledged = request.ack === undefined ? undefined : yield* engine.acknowledge(request.ack)
    const uncertain = yield* engine.uncertainOutcomes
    return { root, db: request.db, report, resetRequested, reset: engine.historyReset, acknowledged, uncertain } satisfies RepairResult
  }).pipe(Effect.provide(engineLayer(root, db, resetRequested ? { repairOnStart: false, resetHistory: true } : { repairOnStart: false })))
})

/**
 * Prints what the engine's startup repair did, if anything, on stderr (one line per intent,
 * with how to acknowledge an uncertain outcome) and returns it, for a command's `--json`
 * `repairs` field; a failure later in the command carries it too (`noteRepairs`). Every
 * command that builds an engine with startup repair should call it.
 *
 * @category constructors
 * @since 0.1.0
 */
export const announceRepairs = (
  root: string,
  db?: string | undefined
): Effect.Effect<ReadonlyArray<RepairOutcome>, never, Engine> =>
  Effect.gen(function*() {
    const { outcomes } = (yield* Engine).startupRepair
    if (outcomes.length > 0) yield* writeStderr(renderNotice(outcomes, root, db))
    yield* noteRepairs(outcomes)
    return outcomes
  })

/**
 * Runs `effect` after `announceRepairs` and pairs its value with the outcomes, for the
 * commands whose work needs the engine: the notice comes first, the `--json` carries them.
 *
 * @category combinators
 * @since 0.1.0
 */
export const withRepairs = <A, E, R>(
  root: string,
  db: string | undefined,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<readonly [A, ReadonlyArray<RepairOutcome>], E, R | Engine> =>
  Effect.flatMap(announceRepairs(root, db), (repairs) => Effect.map(effect, (value) => [value, repairs] as const))

// -------------------------------------------------------------------------------------
// rendering
// -------------------------------------------------------------------------------------

/**
 * The `repairs` member of a command's `--json` line: present only when a repair ran, so the
 * line of an ordinary call stays as it was.
 *
 * @category combinators
 * @since 0.1.0
 */
export const repairsField: (
  repairs: ReadonlyArray<RepairOutcome> | undefined
) => { readonly repairs?: ReadonlyArray<RepairOutcome> } = repairsMember

const ackCommand = (root: string, db: string | undefined, recordId: string): string =>
  `forkjoin repair --workspace '${root}'${db === undefined ? "" : ` --db '${db}'`} --ack ${recordId}`

/**
 * The stderr notice of an implicit repair: `forkjoin: repaired after a crash: <action>
 * <transaction>: <message>` per outcome, and for an uncertain one the command that acknowledges it.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderNotice = (outcomes: ReadonlyArray<RepairOutcome>, root: string, db?: string | undefined): string =>
  outcomes.map((o) =>
    `forkjoin: repaired after a crash: ${o.action} ${o.transactionId}: ${o.message}\n` +
    (o.action === "uncertain" && o.recordId !== undefined ? `  once checked: ${ackCommand(root, db, o.recordId)}\n` : "")
  ).join("")

/**
 * The `--json` line: `{"ok":true,"outcomes":[...]}` (what this repair did), plus `uncertain`
 * (the unacknowledged uncertain outcomes), `reset` and `acknowledged` when there are any.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderJson = (result: RepairResult): string =>
  JSON.stringify({
    ok: true,
    outcomes: result.report.outcomes,
    ...(result.uncertain.length === 0 ? {} : { uncertain: result.uncertain }),
    ...(result.reset === undefined ? {} : { reset: result.reset }),
    ...(result.acknowledged === undefined ? {} : { acknowledged: result.acknowledged })
  }) + "\n"

/**
 * Human text: one `<action> <transaction>: <message>` line per outcome, the reset, the
 * acknowledgement, and each uncertain outcome still unacknowledged with the command that
 * acknowledges it; or that there was nothing to repair.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderText = (result: RepairResult): string => {
  const lines: Array<string> = result.report.outcomes.map((o) => `${o.action} ${o.transactionId}: ${o.message}`)
  if (result.resetRequested) {
    const r = result.reset
    lines.push(
      r === undefined
        ? "Nothing to reset: the history database is the history this workspace remembers."
        : `history reset: this workspace's history is now ${r.historyId}; the previous one (${r.previousHistoryId}, up to ` +
          `record #${r.previousLastOrdinal}) was ${reasonText(r.reason)}. New records continue from this database.`
    )
  }
  if (result.acknowledged !== undefined) {
    lines.push(`acknowledged ${result.acknowledged.recordId} (${result.acknowledged.transactionId})`)
  }
  for (const u of result.uncertain) lines.push(uncertainLine(u, result.root, result.db))
  if (result.report.outcomes.length === 0 && result.uncertain.length === 0 && result.acknowledged === undefined) {
    lines.unshift("Nothing to repair: no open intents.")
  }
  return lines.join("\n") + "\n"
}

/**
 * One unacknowledged uncertain outcome as `repair` and `status` print it.
 *
 * @category combinators
 * @since 0.1.0
 */
export const uncertainLine = (u: UncertainOutcome, root: string, db?: string | undefined): string =>
  `uncertain outcome ${u.recordId} (${u.transactionId}, record #${u.commitOrdinal}): left alone after a crash, matching ` +
  `neither their previous nor their new content: ${u.paths.join(", ")}; check them, then: ${ackCommand(root, db, u.recordId)}`

/**
 * What a reset's reason says about the previous database.
 *
 * @category combinators
 * @since 0.1.0
 */
export const reasonText = (reason: HistoryReset["reason"]): string =>
  reason === "missing" ? "missing or empty" : reason === "different" ? "replaced by another history" : "an older copy"
