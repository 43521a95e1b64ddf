/**
 * The merge probe's evidence (SPEC §8) and what it is made of: the engine fingerprint of the
 * build that ran it, the facts of the filesystem it ran on, and each scenario's assertions.
 * `digest` covers everything but timings and timestamps, so two runs of one build on one kind
 * of filesystem produce the same digest; `signature` (optional) signs a statement covering the
 * digest and every other field (`createdAt` included).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Sha256Hash } from "./Ids.ts"
import { UtcTimestamp } from "./UtcTimestamp.ts"

/**
 * Which build ran the probe: the package version, the digest of the scenario catalogue, and a
 * digest of every package's source files (the same from the bundle and from source).
 *
 * @category models
 * @since 0.1.0
 */
export const EngineFingerprint = Schema.Struct({
  version: Schema.String,
  scenarioSetDigest: Sha256Hash,
  sourceDigest: Sha256Hash
})

/**
 * @category models
 * @since 0.1.0
 */
export type EngineFingerprint = typeof EngineFingerprint.Type

/**
 * What the probe found out about the filesystem it ran on. `type` is the kernel's name for it
 * (`ext4`, `tmpfs`, `overlayfs`, ... or `unknown:0x…`); `fsyncHonoured` means fsync of a file and
 * of its directory returned success (a disk that lies about flushing cannot be seen from here).
 *
 * @category models
 * @since 0.1.0
 */
export const FilesystemFacts = Schema.Struct({
  type: Schema.String,
  atomicRename: Schema.Boolean,
  fsyncHonoured: Schema.Boolean,
  caseSensitive: Schema.Boolean,
  symlinks: Schema.Boolean
})

/**
 * @category models
 * @since 0.1.0
 */
export type FilesystemFacts = typeof FilesystemFacts.Type

/**
 * One checked fact of a scenario. `detail` says what was seen when it failed; it never holds
 * random ids, temp paths or timings (it is part of the digest).
 *
 * @category models
 * @since 0.1.0
 */
export const ProbeAssertion = Schema.Struct({
  name: Schema.String,
  passed: Schema.Boolean,
  detail: Schema.optionalKey(Schema.String)
})

/**
 * @category models
 * @since 0.1.0
 */
export type ProbeAssertion = typeof ProbeAssertion.Type

/**
 * A scenario passed when every one of its assertions did.
 *
 * @category models
 * @since 0.1.0
 */
export const ProbeStatus = Schema.Literals(["passed", "failed"])

/**
 * @category models
 * @since 0.1.0
 */
export type ProbeStatus = typeof ProbeStatus.Type

/**
 * One scenario's result. `durationMs` is left out of the digest.
 *
 * @category models
 * @since 0.1.0
 */
export const ScenarioResult = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  status: ProbeStatus,
  assertions: Schema.Array(ProbeAssertion),
  durationMs: Schema.Number
})

/**
 * @category models
 * @since 0.1.0
 */
export type ScenarioResult = typeof ScenarioResult.Type

/**
 * An Ed25519 signature over the evidence's signed statement: every field but `signature` itself,
 * with the signer's `alg` and `keyId` (`@forkjoin/autonomy`'s `Evidence.statementOf`). `keyId` is
 * `sha256:` of the public key's DER (SPKI) bytes; `value` is base64.
 *
 * @category models
 * @since 0.1.0
 */
export const EvidenceSignature = Schema.Struct({
  alg: Schema.Literal("ed25519"),
  keyId: Sha256Hash,
  value: Schema.String
})

/**
 * @category models
 * @since 0.1.0
 */
export type EvidenceSignature = typeof EvidenceSignature.Type

/**
 * The merge probe's evidence file (schemaVersion 2: the signature covers the whole file, not
 * only its digest), written by `forkjoin probe` and read by `forkjoin gate`.
 *
 * @category models
 * @since 0.1.0
 */
export const ProbeEvidence = Schema.Struct({
  schemaVersion: Schema.Literal(2),
  kind: Schema.Literal("forkjoin.merge-probe"),
  fingerprint: EngineFingerprint,
  filesystem: FilesystemFacts,
  status: ProbeStatus,
  scenarios: Schema.Array(ScenarioResult),
  createdAt: UtcTimestamp,
  durationMs: Schema.Number,
  digest: Sha256Hash,
  signature: Schema.optionalKey(EvidenceSignature)
})

/**
 * @category models
 * @since 0.1.0
 */
export type ProbeEvidence = typeof ProbeEvidence.Type
