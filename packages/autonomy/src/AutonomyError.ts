/**
 * The one error of `@forkjoin/autonomy`: a bad configuration (file or environment), a bad key,
 * evidence that cannot be written, a filesystem that cannot be probed, or a mutating child
 * refused by the gate. A stable `code`, the files involved, a message that says what was wrong
 * and what to do, and the underlying cause.
 *
 * Does not own the gate's verdicts themselves: a blocked gate is a `GateDecision` value (see
 * `Gate.ts`); only `Gate.admitMutating` turns it into a refusal.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * Autonomy error codes. Stable: scripts and the CLI's exit codes match on them.
 *
 * - `config_invalid`: `forkjoin.config.json` is unreadable, not JSON, not an object, has an
 *   unknown key or a bad value (the message names the file and the JSON path).
 * - `env_invalid`: a `FORKJOIN_*` variable holds a value that is not allowed (named in the message).
 * - `key_invalid`: a key file is missing, not PEM, the wrong kind (public for private or the
 *   reverse) or not Ed25519.
 * - `key_exists`: `keygen` would overwrite an existing key file.
 * - `key_unwritable`, `evidence_unwritable`: the file could not be written.
 * - `filesystem_unprobeable`: the temporary probe folder could not be created in the workspace.
 * - `fingerprint_unavailable`: the running build's sources could not be found to fingerprint it.
 * - `mutating_not_allowed`: the level does not allow mutating children (gate `not_applicable`).
 * - `gate_blocked`: the gate is blocked, so mutating children do not start.
 *
 * @category models
 * @since 0.1.0
 */
export const AutonomyErrorCode = Schema.Literals([
  "config_invalid",
  "env_invalid",
  "key_invalid",
  "key_exists",
  "key_unwritable",
  "evidence_unwritable",
  "filesystem_unprobeable",
  "fingerprint_unavailable",
  "mutating_not_allowed",
  "gate_blocked"
])

/**
 * @category models
 * @since 0.1.0
 */
export type AutonomyErrorCode = typeof AutonomyErrorCode.Type

/**
 * A refused or failed autonomy operation; `message` speaks to the user (what, where, what to do).
 *
 * @category errors
 * @since 0.1.0
 */
export class AutonomyError extends Schema.TaggedError<AutonomyError>()("AutonomyError", {
  code: AutonomyErrorCode,
  paths: Schema.Array(Schema.String),
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}
