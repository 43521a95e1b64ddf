/**
 * The stable error vocabulary of forkjoin (SPEC §3, §6). Every rejection anywhere in the
 * product carries one of these codes, the engine stage that raised it, the paths involved
 * and a message a model can act on. This module owns the codes and the stage numbers only.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * Engine error codes (SPEC §3). Stable: clients and models match on them.
 *
 * @category models
 * @since 0.1.0
 */
export const EngineErrorCode = Schema.Literals([
  "request_invalid",
  "input_too_large",
  "patch_syntax",
  "version_guard_failed",
  "path_invalid",
  "path_outside_roots",
  "path_denied_by_policy",
  // A request with a write scope: a path lands (links followed, under the lock) outside it,
  // or at another path inside it than the one named (a link swapped in on its way).
  "path_outside_scope",
  "path_redirected",
  "permission_denied",
  "target_missing",
  "target_exists",
  "context_not_found",
  "ambiguous_context",
  "unsupported_file_type",
  "unsafe_move",
  "directory_create_denied",
  "budget_exceeded",
  "stale_file",
  "lock_timeout",
  "commit_failed",
  "history_unavailable",
  // The workspace remembers a history the database does not hold (missing, emptied, another
  // workspace's, an older copy): refused until restored or reset (`forkjoin repair --reset-history`).
  "history_missing"
])

/**
 * @category models
 * @since 0.1.0
 */
export type EngineErrorCode = typeof EngineErrorCode.Type

/**
 * The ten engine stages of SPEC §3, numbered as the spec numbers them.
 *
 * @category models
 * @since 0.1.0
 */
export const Stage = {
  normalize: 1,
  parse: 2,
  resolve: 3,
  authorize: 4,
  plan: 5,
  lock: 6,
  stage: 7,
  commit: 8,
  persist: 9,
  publish: 10
} as const

/**
 * A stage number, 1..10.
 *
 * @category models
 * @since 0.1.0
 */
export const StageNumber = Schema.Literals([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])

/**
 * @category models
 * @since 0.1.0
 */
export type StageNumber = typeof StageNumber.Type
