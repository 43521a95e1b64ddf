/**
 * Autonomy levels, the configuration file and the promotion gate's decision (SPEC §7).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Sha256Hash } from "./Ids.ts"
import { UtcTimestamp } from "./UtcTimestamp.ts"

/**
 * `off`: analysis only; `supervised`: the parent edits, children are read-only; `safe`:
 * mutating children when the gate passes; `bold`: mutating children without the gate (logged).
 *
 * @category models
 * @since 0.1.0
 */
export const AutonomyLevel = Schema.Literals(["off", "supervised", "safe", "bold"])

/**
 * @category models
 * @since 0.1.0
 */
export type AutonomyLevel = typeof AutonomyLevel.Type

/**
 * A boolean setting as written by people: JSON `true`/`false`, or `1/true/yes/on`,
 * `0/false/no/off` (any case).
 *
 * @category models
 * @since 0.1.0
 */
export const BooleanSetting = Schema.Union([
  Schema.Boolean,
  Schema.Literals(["1", "true", "yes", "on", "0", "false", "no", "off"])
])

/**
 * A model provider's wire protocol: OpenAI-compatible Chat Completions, or Anthropic Messages.
 *
 * @category models
 * @since 0.1.0
 */
export const ModelProviderKind = Schema.Literals(["openai", "anthropic"])

/**
 * How one model provider is reached (every key optional; the environment and built-in
 * defaults fill the rest). The API key itself is never in the file: `apiKeyEnv` names the
 * environment variable holding it.
 *
 * @category models
 * @since 0.1.0
 */
export const ModelProviderConfig = Schema.Struct({
  /** OpenAI-compatible: up to `/v1` (`https://api.openai.com/v1`); Anthropic: the host (`https://api.anthropic.com`). */
  baseUrl: Schema.optionalKey(Schema.String.check(Schema.isNonEmpty())),
  model: Schema.optionalKey(Schema.String.check(Schema.isNonEmpty())),
  /** The environment variable holding the key (default `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`). */
  apiKeyEnv: Schema.optionalKey(Schema.String.check(Schema.isPattern(/^[A-Za-z_][A-Za-z0-9_]*$/))),
  stream: Schema.optionalKey(Schema.Boolean),
  /** One request's budget; with streaming, the longest silence between two chunks (default 120000). */
  timeoutMs: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThan(0))),
  /** Retries after a 429 or a 5xx (default 3), waiting `retry-after` or an exponential backoff. */
  maxRetries: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10 }))),
  /** First backoff in ms (default 500), doubled per retry. */
  retryBaseMs: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))),
  /** Most output tokens per reply (default 4096). */
  maxTokens: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThan(0))),
  /** Most bytes of one answer (default 33554432, 32 MiB); a larger one is refused as soon as it passes. */
  maxResponseBytes: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThan(0)))
})

/**
 * Limits of one model session: tokens (input plus output), tool calls, wall-clock time.
 *
 * @category models
 * @since 0.1.0
 */
export const SessionLimitsConfig = Schema.Struct({
  tokenBudget: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThan(0))),
  maxSteps: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThan(0))),
  timeoutMs: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThan(0)))
})

/**
 * The `models` section: the default provider and model, each provider's settings, and the
 * limits of the parent's and each child's session.
 *
 * @category models
 * @since 0.1.0
 */
export const ModelsConfig = Schema.Struct({
  provider: Schema.optionalKey(ModelProviderKind),
  model: Schema.optionalKey(Schema.String.check(Schema.isNonEmpty())),
  providers: Schema.optionalKey(Schema.Struct({
    openai: Schema.optionalKey(ModelProviderConfig),
    anthropic: Schema.optionalKey(ModelProviderConfig)
  })),
  limits: Schema.optionalKey(Schema.Struct({
    parent: Schema.optionalKey(SessionLimitsConfig),
    child: Schema.optionalKey(SessionLimitsConfig)
  }))
})

/**
 * A workspace's cluster: its storage URL (`postgres://...` or `sqlite:PATH`), the cluster
 * secret's file (relative to the workspace root) and the address runners fetch a run's files from.
 *
 * @category models
 * @since 0.1.0
 */
export const ClusterConfig = Schema.Struct({
  url: Schema.String.check(Schema.isNonEmpty()),
  secretFile: Schema.optionalKey(Schema.String.check(Schema.isNonEmpty())),
  objectsHost: Schema.optionalKey(Schema.String.check(Schema.isNonEmpty()))
})

/**
 * @category models
 * @since 0.1.0
 */
export type ClusterConfig = typeof ClusterConfig.Type

/**
 * `forkjoin.config.json` at the workspace root (schemaVersion 1). Unknown keys are refused, so a
 * misspelt setting is an error rather than silently ignored.
 *
 * @category models
 * @since 0.1.0
 */
export const ForkjoinConfigFile = Schema.Struct({
  $schema: Schema.optionalKey(Schema.String),
  schemaVersion: Schema.optionalKey(Schema.Literal(1)),
  autonomy: Schema.optionalKey(AutonomyLevel),
  mutatingSubagents: Schema.optionalKey(BooleanSetting),
  gate: Schema.optionalKey(Schema.Struct({
    /** Where the evidence is, relative to the workspace root (default `.forkjoin/evidence/merge-probe.json`). */
    evidence: Schema.optionalKey(Schema.String),
    /** How old evidence may be, like `7d`, `24h`, `30m` (default `7d`). */
    maxEvidenceAge: Schema.optionalKey(Schema.String),
    /** Public keys (PEM files, relative to the workspace root); when set, evidence must be signed by one. */
    trustedKeys: Schema.optionalKey(Schema.Array(Schema.String))
  })),
  /** Model providers, the default model and session limits (`forkjoin agent`, `forkjoin mcp`). */
  models: Schema.optionalKey(ModelsConfig),
  /** Where `forkjoin run` sends its children and `forkjoin status` looks for runners (`--cluster` wins). */
  cluster: Schema.optionalKey(ClusterConfig)
})

/**
 * @category models
 * @since 0.1.0
 */
export type ForkjoinConfigFile = typeof ForkjoinConfigFile.Type

/**
 * What the gate decided: `passed` (evidence meets every requirement), `blocked` (it does not:
 * see `missing`), `skipped` (`bold`: no evidence asked for), `not_applicable` (mutating
 * children are not allowed at this level at all).
 *
 * @category models
 * @since 0.1.0
 */
export const GateStatus = Schema.Literals(["passed", "blocked", "skipped", "not_applicable"])

/**
 * @category models
 * @since 0.1.0
 */
export type GateStatus = typeof GateStatus.Type

/**
 * A requirement the evidence failed, in the order a user fixes them (the gate reports them so).
 * Stable: scripts match on these.
 *
 * @category models
 * @since 0.1.0
 */
export const GateRequirement = Schema.Literals([
  "evidence_missing",
  "evidence_invalid",
  "scenario_failed",
  "fingerprint_mismatch",
  "evidence_stale",
  "filesystem_mismatch",
  "signature_missing",
  "signature_invalid",
  "untrusted_signer"
])

/**
 * @category models
 * @since 0.1.0
 */
export type GateRequirement = typeof GateRequirement.Type

/**
 * The promotion gate's decision: `{ status, missing, evidence }` plus the level it decided at,
 * one reason per missing requirement, warnings (`bold`'s skip) and a message saying what to do.
 *
 * @category models
 * @since 0.1.0
 */
export const GateDecision = Schema.Struct({
  status: GateStatus,
  level: AutonomyLevel,
  mutatingSubagents: Schema.Boolean,
  missing: Schema.Array(GateRequirement),
  reasons: Schema.Array(Schema.Struct({ requirement: GateRequirement, message: Schema.String })),
  evidence: Schema.NullOr(Schema.Struct({
    path: Schema.String,
    digest: Schema.optionalKey(Sha256Hash),
    createdAt: Schema.optionalKey(UtcTimestamp),
    signer: Schema.optionalKey(Sha256Hash)
  })),
  warnings: Schema.Array(Schema.String),
  message: Schema.String,
  decidedAt: UtcTimestamp
})

/**
 * @category models
 * @since 0.1.0
 */
export type GateDecision = typeof GateDecision.Type
