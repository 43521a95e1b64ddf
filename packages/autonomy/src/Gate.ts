/**
 * The promotion gate (SPEC §7): whether mutating children may run. `decide` is pure: from the
 * effective configuration, the evidence read result, the running fingerprint, the workspace's
 * filesystem facts, the time and the trusted keys it returns a `GateDecision` — `not_applicable`
 * (the level grants no mutating children), `skipped` (`bold`, with a warning), `passed`, or
 * `blocked` with every failed requirement and one reason each. `evaluate` gathers those inputs
 * for a workspace; `admitMutating` turns a decision into the refusal a run prints.
 *
 * Does not own running the probe, writing evidence, or recording a `bold` skip in a run's
 * artifacts and history (the orchestrator does, from the decision's `warnings`). Kept light:
 * no engine, no SQLite, no source hashing in the bundle, so `forkjoin gate` starts fast.
 *
 * @since 0.1.0
 */
import { type AutonomyLevel, type GateDecision, GateRequirement } from "@forkjoin/schema/Autonomy"
import type { EngineFingerprint, FilesystemFacts, ProbeEvidence } from "@forkjoin/schema/Evidence"
import type { Sha256Hash } from "@forkjoin/schema/Ids"
import { utcTimestampFromMillis } from "@forkjoin/schema/UtcTimestamp"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type { KeyObject } from "node:crypto"
import * as Age from "./Age.ts"
import { AutonomyError } from "./AutonomyError.ts"
import * as Config from "./Config.ts"
import * as Evidence from "./Evidence.ts"
import * as Filesystem from "./Filesystem.ts"
import * as Fingerprint from "./Fingerprint.ts"
import * as Keys from "./Keys.ts"
import { scenarios as catalogue, type ScenarioSpec } from "./Scenarios.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * A public key the gate trusts: the file it came from, its id and the key.
 *
 * @category models
 * @since 0.1.0
 */
export interface TrustedKey {
  readonly path: string
  readonly keyId: Sha256Hash
  readonly key: KeyObject
}

/**
 * The configuration the gate decides under (a resolved, possibly plan-lowered configuration).
 *
 * @category models
 * @since 0.1.0
 */
export type GateConfig = Pick<
  Config.ResolvedConfig,
  "workspace" | "autonomy" | "mutatingSubagents" | "evidence" | "maxEvidenceAge" | "trustedKeys"
>

/**
 * Everything `decide` looks at. `scenarios` defaults to the catalogue; `warnings` are carried
 * into the decision (a plan asking for more than allowed, ...).
 *
 * @category models
 * @since 0.1.0
 */
export interface DecideInput {
  readonly config: GateConfig
  readonly evidence: Evidence.ReadResult
  readonly fingerprint: EngineFingerprint
  readonly filesystem: FilesystemFacts
  readonly now: number
  readonly trustedKeys: ReadonlyArray<TrustedKey>
  readonly scenarios?: ReadonlyArray<ScenarioSpec>
  readonly warnings?: ReadonlyArray<string>
}

/**
 * How far in the future (by this machine's clock) evidence may claim to be created before it
 * is refused: clocks of a CI machine and a laptop drift a little.
 *
 * @category models
 * @since 0.1.0
 */
export const CLOCK_SKEW_MS = 5 * 60_000

// Requirements are reported in the schema's order, which is the order a user fixes them in.
const ORDER: ReadonlyArray<GateRequirement> = GateRequirement.literals

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

const mutatingOf = (config: GateConfig): boolean => Config.grantOf(config) !== "refused"

/**
 * The decision that needs no evidence: `not_applicable` when the configuration grants no
 * mutating children (with how to promote), `skipped` at `bold` (with a warning); `undefined`
 * when the evidence decides.
 *
 * @category constructors
 * @since 0.1.0
 */
export const preliminary = (config: GateConfig, now: number, warnings: ReadonlyArray<string> = []): GateDecision | undefined => {
  const grant = Config.grantOf(config)
  if (grant === "gated") return undefined
  const base = { level: config.autonomy.value, mutatingSubagents: mutatingOf(config), missing: [], reasons: [], evidence: null, decidedAt: utcTimestampFromMillis(now) }
  if (grant === "refused") {
    return {
      status: "not_applicable",
      ...base,
      warnings: [...warnings],
      message: `Mutating children are not allowed, so the gate does not apply. ${Config.grantSentence(config)}`
    }
  }
  const warning = `Autonomy level bold (${config.autonomy.source}): mutating children run without checking probe evidence; the gate was skipped.`
  return {
    status: "skipped",
    ...base,
    warnings: [...warnings, warning],
    message: `${warning} Use level safe to require passing evidence from \`forkjoin probe\`.`
  }
}

const probeAgain = (config: GateConfig): string => `run \`forkjoin probe --workspace ${config.workspace}\` with this build`

const scenarioProblems = (evidence: ProbeEvidence, required: ReadonlyArray<ScenarioSpec>): ReadonlyArray<string> => {
  const problems: Array<string> = []
  for (const spec of required) {
    const found = evidence.scenarios.find((s) => s.id === spec.id)
    if (found === undefined) {
      problems.push(`required scenario ${spec.id} (${spec.title}) is absent from the evidence`)
      continue
    }
    const failed = found.assertions.filter((a) => !a.passed)
    if (found.status === "failed" || failed.length > 0) {
      const what = failed.map((a) => `assertion "${a.name}"${a.detail === undefined ? "" : ` (${a.detail})`}`).join(", ")
      problems.push(`scenario ${spec.id} failed${what === "" ? "" : `: ${what}`}`)
    }
  }
  return problems
}

const fingerprintProblems = (recorded: EngineFingerprint, running: EngineFingerprint): ReadonlyArray<string> => {
  const problems: Array<string> = []
  if (recorded.version !== running.version) problems.push(`version ${recorded.version} in the evidence, ${running.version} running`)
  if (recorded.scenarioSetDigest !== running.scenarioSetDigest) {
    problems.push(`scenario set ${recorded.scenarioSetDigest.slice(0, 19)}… in the evidence, ${running.scenarioSetDigest.slice(0, 19)}… running`)
  }
  if (recorded.sourceDigest !== running.sourceDigest) {
    problems.push(`sources ${recorded.sourceDigest.slice(0, 19)}… in the evidence, ${running.sourceDigest.slice(0, 19)}… running`)
  }
  return problems
}

const signatureCheck = (
  config: GateConfig,
  evidence: ProbeEvidence,
  trustedKeys: ReadonlyArray<TrustedKey>,
  found: Map<GateRequirement, string>,
  warnings: Array<string>
): void => {
  const signature = evidence.signature
  if (trustedKeys.length === 0) {
    if (signature !== undefined) {
      warnings.push(`The evidence is signed by ${signature.keyId}, but no trusted keys are configured, so the signature was not checked.`)
    }
    return
  }
  const trusted = trustedKeys.map((k) => `${k.path} (${k.keyId.slice(0, 19)}…)`).join(", ")
  if (signature === undefined) {
    found.set(
      "signature_missing",
      `Trusted keys are configured (${config.trustedKeys.source}) but the evidence is not signed: produce it with \`forkjoin probe --sign KEYFILE\` using the private key of ${trusted}.`
    )
    return
  }
  const signer = trustedKeys.find((k) => k.keyId === signature.keyId)
  if (signer === undefined) {
    found.set(
      "untrusted_signer",
      `The evidence is signed by key ${signature.keyId}, which is not trusted (trusted: ${trusted}): ` +
        "sign it with a trusted key, or trust the signer's public key with --trust or gate.trustedKeys."
    )
  } else if (!Evidence.verify(evidence, signer.key)) {
    found.set(
      "signature_invalid",
      `The signature does not verify against ${signer.path}, the trusted key it names: a signed field (createdAt, the build fingerprint, ` +
        "the filesystem facts, the status, the scenarios or the digest) or the signature itself was changed after signing. " +
        `${probeAgain(config)} and sign it again with --sign.`
    )
  }
}

/**
 * Decides the gate (pure). At `off`/`supervised` without the flag, or with the flag off:
 * `not_applicable`; at `bold`: `skipped`; otherwise `passed` when the evidence meets every
 * requirement, else `blocked` with every failed requirement in `missing` and one reason each.
 *
 * @category constructors
 * @since 0.1.0
 */
export const decide = (input: DecideInput): GateDecision => {
  const { config, now } = input
  const warnings = [...(input.warnings ?? [])]
  const early = preliminary(config, now, warnings)
  if (early !== undefined) return early
  const found = new Map<GateRequirement, string>()
  const read = input.evidence
  let evidence: ProbeEvidence | undefined
  if (read._tag === "Missing") {
    found.set(
      "evidence_missing",
      `No evidence at ${read.path} (${config.evidence.source}): ${probeAgain(config)} to write it there, ` +
        `or point --evidence, ${Config.ENV.evidence} or gate.evidence at the evidence file.`
    )
  } else if (read._tag === "Invalid") {
    found.set("evidence_invalid", `The evidence ${read.path} is not valid (${read.reason}): ${read.problems.join("; ")}.`)
  } else {
    evidence = read.evidence
    const created = Date.parse(evidence.createdAt)
    if (created > now + CLOCK_SKEW_MS) {
      found.set(
        "evidence_invalid",
        `The evidence ${read.path} claims to be created at ${evidence.createdAt}, ${Age.format(created - now)} ahead of this machine's clock: ` +
          `check the clocks of both machines, then ${probeAgain(config)}.`
      )
    } else if (now - created > config.maxEvidenceAge.value.millis) {
      found.set(
        "evidence_stale",
        `The evidence is ${Age.format(now - created)} old (created ${evidence.createdAt}), over the limit of ${config.maxEvidenceAge.value.text} ` +
          `(${config.maxEvidenceAge.source}): ${probeAgain(config)}, or raise the limit with ${Config.ENV.maxEvidenceAge} or gate.maxEvidenceAge.`
      )
    }
    const failedScenarios = scenarioProblems(evidence, (input.scenarios ?? catalogue).filter((s) => s.required))
    if (failedScenarios.length > 0) {
      found.set(
        "scenario_failed",
        `${failedScenarios.join("; ")}. The merge machinery did not hold up on this build: fix what the probe reports, then ${probeAgain(config)}.`
      )
    }
    const fingerprint = fingerprintProblems(evidence.fingerprint, input.fingerprint)
    if (fingerprint.length > 0) {
      found.set("fingerprint_mismatch", `The evidence was recorded by another build (${fingerprint.join("; ")}): ${probeAgain(config)}.`)
    }
    const differing = Filesystem.sameKind(evidence.filesystem, input.filesystem)
    if (differing.length > 0) {
      const facts = differing.map((k) => `${k} ${String(evidence!.filesystem[k])} in the evidence, ${String(input.filesystem[k])} here`).join("; ")
      found.set(
        "filesystem_mismatch",
        `The evidence was recorded on another kind of filesystem than the workspace's (${facts}): ${probeAgain(config)} on this machine.`
      )
    }
  }
  // Checked on evidence whose digest or statuses failed too: an edited field of a signed file is
  // named as a broken signature, not only as an invalid file.
  const checked = evidence ?? (read._tag === "Invalid" ? read.evidence : undefined)
  if (checked !== undefined) signatureCheck(config, checked, input.trustedKeys, found, warnings)
  const missing = ORDER.filter((r) => found.has(r))
  const reasons = missing.map((requirement) => ({ requirement, message: found.get(requirement)! }))
  const evidenceInfo: GateDecision["evidence"] = evidence === undefined
    ? { path: read.path }
    : {
      path: read.path,
      digest: evidence.digest,
      createdAt: evidence.createdAt,
      ...(evidence.signature === undefined ? {} : { signer: evidence.signature.keyId })
    }
  const base = {
    level: config.autonomy.value,
    mutatingSubagents: true,
    missing,
    reasons,
    evidence: evidenceInfo,
    warnings,
    decidedAt: utcTimestampFromMillis(now)
  }
  if (missing.length === 0) {
    const created = Date.parse(evidence!.createdAt)
    const signed = evidence!.signature === undefined || input.trustedKeys.length === 0
      ? ""
      : `, signed by ${input.trustedKeys.find((k) => k.keyId === evidence!.signature!.keyId)!.path}`
    return {
      status: "passed",
      ...base,
      message: `The gate passed at level ${config.autonomy.value}: the evidence ${read.path} (${Age.format(Math.max(0, now - created))} old${signed}) ` +
        "meets every requirement; mutating children may run."
    }
  }
  return {
    status: "blocked",
    ...base,
    message: `The gate is blocked at level ${config.autonomy.value} (${missing.join(", ")}): mutating children will not run. ` +
      `${reasons.map((r) => r.message).join(" ")}`
  }
}

/**
 * What `evaluate` needs: the workspace, and optionally the evidence file and trusted public
 * keys given on the command line (they win over the configuration), the environment (default
 * `process.env`) and the plan's `autonomy` (which can only lower the level).
 *
 * @category models
 * @since 0.1.0
 */
export interface EvaluateInput {
  readonly workspace: string
  readonly evidencePath?: string | undefined
  readonly trust?: ReadonlyArray<string> | undefined
  readonly env?: Config.Env | undefined
  readonly planLevel?: AutonomyLevel | undefined
}

/**
 * Decides the gate for a workspace: loads the configuration, applies flags and the plan's
 * level, and — only when the evidence decides — reads the trusted keys and the evidence, checks
 * the workspace's filesystem and fingerprints the running build. Fails only on a bad
 * configuration or key, or a workspace that cannot be probed.
 *
 * @category constructors
 * @since 0.1.0
 */
export const evaluate = Effect.fn("Gate.evaluate")(function*(input: EvaluateInput) {
  const loaded = yield* Config.load(input.workspace, input.env ?? process.env)
  const lowering = Config.lowerTo(Config.withFlags(loaded, { evidence: input.evidencePath, trustedKeys: input.trust }), input.planLevel)
  const config = lowering.config
  const warnings = lowering.message === undefined ? [] : [lowering.message]
  const now = yield* Clock.currentTimeMillis
  const early = preliminary(config, now, warnings)
  if (early !== undefined) return early
  const trustedKeys = yield* Effect.forEach(config.trustedKeys.value, (file) =>
    Keys.readPublic(file).pipe(Effect.map((key): TrustedKey => ({ path: file, keyId: Keys.keyIdOf(key), key }))))
  const evidence = yield* Evidence.read(config.evidence.value)
  const filesystem = yield* Effect.try({
    try: () => Filesystem.factsOf(config.workspace),
    catch: (cause) =>
      cause instanceof AutonomyError
        ? cause
        : new AutonomyError({ code: "filesystem_unprobeable", paths: [config.workspace], message: `cannot check the workspace's filesystem: ${String(cause)}`, cause })
  })
  const fingerprint = yield* Effect.try({
    try: () => Fingerprint.current(),
    catch: (cause) =>
      new AutonomyError({
        code: "fingerprint_unavailable",
        paths: [],
        message: cause instanceof Error ? cause.message : String(cause),
        cause
      })
  })
  return decide({ config, evidence, fingerprint, filesystem, now, trustedKeys, warnings })
})

/**
 * Whether mutating children may start under a decision: `passed` and `skipped` admit; else
 * the refusal a run prints (`mutating_not_allowed` for `not_applicable`, `gate_blocked` for
 * `blocked`), carrying the decision's message.
 *
 * @category constructors
 * @since 0.1.0
 */
export const admitMutating = (decision: GateDecision): Result.Result<void, AutonomyError> => {
  switch (decision.status) {
    case "passed":
    case "skipped":
      return Result.succeed(undefined)
    case "not_applicable":
      return Result.fail(new AutonomyError({ code: "mutating_not_allowed", paths: [], message: decision.message }))
    case "blocked":
      return Result.fail(new AutonomyError({
        code: "gate_blocked",
        paths: decision.evidence === null ? [] : [decision.evidence.path],
        message: `Mutating children were not started. ${decision.message} Then run \`forkjoin gate\` to check.`
      }))
  }
}
