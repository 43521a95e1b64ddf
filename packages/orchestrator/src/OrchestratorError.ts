/**
 * The one error of the orchestrator's own refusals (the engine's stay `EngineError`): a
 * stable `code`, the paths involved, an actionable message and the underlying cause.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * Orchestrator error codes. Stable: clients and models match on them.
 *
 * @category models
 * @since 0.1.0
 */
export const OrchestratorErrorCode = Schema.Literals([
  "rollback_drift",
  "rollback_conflicted",
  "rollback_unavailable",
  "unknown_transaction",
  "unknown_conflict",
  "conflict_already_resolved",
  "conflict_stale",
  "unresolved_subagent_conflicts",
  "unknown_run",
  "run_cancelled",
  "run_not_resumable",
  "run_busy",
  "mutating_subagents_in_open_batch",
  "mutating_subagents_not_granted",
  "promotion_gate_blocked",
  "model_unavailable",
  "artifacts_unavailable",
  // What a child did cannot be recorded as JSON (nested too deeply, too large): not a folder problem.
  "artifact_unserializable",
  "store_unavailable",
  "verification_unavailable",
  "join_state_unavailable"
])

/**
 * @category models
 * @since 0.1.0
 */
export type OrchestratorErrorCode = typeof OrchestratorErrorCode.Type

/**
 * A refused or failed orchestrator operation.
 *
 * @category errors
 * @since 0.1.0
 */
export class OrchestratorError extends Schema.TaggedError<OrchestratorError>()("OrchestratorError", {
  code: OrchestratorErrorCode,
  paths: Schema.Array(Schema.String),
  message: Schema.String,
  /** For `rollback_drift`: the later transaction that changed a path, when known. */
  laterTransactionId: Schema.optional(Schema.String),
  /** For `rollback_conflicted`: the ids of the conflicts held. */
  conflictIds: Schema.optional(Schema.Array(Schema.String)),
  cause: Schema.optional(Schema.Defect())
}) {}

/**
 * Maps a history or merge-store failure met while doing `what` to `store_unavailable`,
 * keeping it as the cause.
 *
 * @category constructors
 * @since 0.1.0
 */
export const storeFailure = (what: string) => (cause: { readonly message: string }): OrchestratorError =>
  new OrchestratorError({
    code: "store_unavailable",
    paths: [],
    message: `${what} failed: ${cause.message}. Check the history database, then try again.`,
    cause
  })
