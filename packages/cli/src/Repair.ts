/**
 * `forkjoin repair`: startup repair (SPEC §4.5) run on demand. Finishes, undoes or flags
 * every intent a crashed process left open, under the workspace lock. This module owns
 * running it and rendering its outcomes; the engine owns the repair itself, `RepairCommand.ts`
 * the flags, `internal/errors.ts` what a failure prints.
 *
 * @since 0.1.0
 */
import { Engine } from "@forkjoin/engine/Engine"
import * as Effect from "effect/Effect"
import { engineLayer, historyDbOf, resolveWorkspace } from "./internal/workspace.ts"

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
}

/**
 * What a repair did: one outcome per intent it found open.
 *
 * @category models
 * @since 0.1.0
 */
export type RepairReport = Effect.Success<(typeof Engine.Service)["repair"]>

/**
 * Runs the repair on the workspace's engine (not also at engine start: once is the point).
 *
 * @category constructors
 * @since 0.1.0
 */
export const repair = Effect.fn("Repair.repair")(function*(request: RepairRequest) {
  const root = yield* resolveWorkspace(request.workspace)
  return yield* Engine.use((engine) => engine.repair).pipe(
    Effect.provide(engineLayer(root, historyDbOf(root, request.db), { repairOnStart: false }))
  )
})

/**
 * The `--json` line: `{"ok":true,"outcomes":[...]}`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderJson = (report: RepairReport): string => JSON.stringify({ ok: true, outcomes: report.outcomes }) + "\n"

/**
 * Human text: one `<action> <transaction>: <message>` line per outcome, or that there was
 * nothing to repair.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderText = (report: RepairReport): string =>
  report.outcomes.length === 0
    ? "Nothing to repair: no open intents.\n"
    : report.outcomes.map((o) => `${o.action} ${o.transactionId}: ${o.message}\n`).join("")
