/**
 * The merge probe's evidence file (SPEC §8): `assemble` it from a run's results, its `digestOf`
 * (sha256 of canonical JSON without timings, timestamps, digest and signature, so equal on every
 * run of one build on one kind of filesystem), its `statementOf` (everything but the signature
 * value, `createdAt` included: what a signature covers), `sign`/`verify` it with Ed25519,
 * `write` it atomically and `read` it back as a tagged result: missing, invalid (with which kind
 * of invalid: not a regular file, too large, truncated, not JSON, outdated, schema, digest
 * mismatch, inconsistent statuses) or ok.
 *
 * Does not own running the probe (`probes/`), the keys' files (`Keys.ts`) nor what the gate
 * requires of evidence (`Gate.ts`).
 *
 * @since 0.1.0
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import { describeSystemError, remedyOf } from "@forkjoin/patch/SystemError"
import { EngineFingerprint, type EvidenceSignature, FilesystemFacts, ProbeEvidence, type ProbeStatus, type ScenarioResult } from "@forkjoin/schema/Evidence"
import type { Sha256Hash } from "@forkjoin/schema/Ids"
import type { UtcTimestamp } from "@forkjoin/schema/UtcTimestamp"
import { describeSyntaxError, parseJson } from "@forkjoin/schema/JsonText"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { Buffer } from "node:buffer"
import { randomBytes, sign as signBytes, verify as verifyBytes, type KeyObject } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { AutonomyError } from "./AutonomyError.ts"
import { keyIdOf } from "./Keys.ts"
import { canonicalJson, jsonPath } from "./internal/jsonText.ts"
import { problemsOf } from "@forkjoin/schema/SchemaProblems"
import { readRegularFile } from "./internal/regularFile.ts"

// -------------------------------------------------------------------------------------
// digest
// -------------------------------------------------------------------------------------

/**
 * Evidence before its digest and signature: what `digestOf` covers (minus timings and `createdAt`).
 *
 * @category models
 * @since 0.1.0
 */
export type EvidenceBody = Omit<ProbeEvidence, "digest" | "signature">

/**
 * The evidence digest: sha256 of canonical JSON (keys sorted) of everything except `createdAt`,
 * `durationMs`, each scenario's `durationMs`, `digest` and `signature`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const digestOf = (evidence: EvidenceBody & Partial<Pick<ProbeEvidence, "digest" | "signature">>): Sha256Hash => {
  const { createdAt: _createdAt, durationMs: _durationMs, scenarios, ...rest } = evidence
  const content: Record<string, unknown> = { ...rest, scenarios: scenarios.map(({ durationMs: _d, ...s }) => s) }
  delete content["digest"]
  delete content["signature"]
  return sha256(canonicalJson(content))
}

const statusOf = (passed: boolean): ProbeStatus => (passed ? "passed" : "failed")

/**
 * What a probe run produced, before the status and digest are derived.
 *
 * @category models
 * @since 0.1.0
 */
export interface AssembleInput {
  readonly fingerprint: EngineFingerprint
  readonly filesystem: FilesystemFacts
  readonly scenarios: ReadonlyArray<ScenarioResult>
  readonly createdAt: UtcTimestamp
  readonly durationMs: number
}

/**
 * The evidence schemaVersion this build writes and reads. Version 1 signed only the digest,
 * which leaves `createdAt` out; its files are refused with what to run instead.
 *
 * @category models
 * @since 0.1.0
 */
export const SCHEMA_VERSION = 2

/**
 * The largest evidence file `read` opens (a probe writes a few tens of KB); anything larger
 * is refused unread.
 *
 * @category models
 * @since 0.1.0
 */
export const MAX_EVIDENCE_BYTES = 4 * 1024 * 1024

/**
 * Builds evidence (`SCHEMA_VERSION`): `failed` when any scenario failed, with its digest; unsigned.
 *
 * @category constructors
 * @since 0.1.0
 */
export const assemble = (input: AssembleInput): ProbeEvidence => {
  const body: EvidenceBody = {
    schemaVersion: SCHEMA_VERSION,
    kind: "forkjoin.merge-probe",
    fingerprint: input.fingerprint,
    filesystem: input.filesystem,
    status: statusOf(input.scenarios.every((s) => s.status === "passed")),
    scenarios: input.scenarios,
    createdAt: input.createdAt,
    durationMs: input.durationMs
  }
  return { ...body, digest: digestOf(body) }
}

// -------------------------------------------------------------------------------------
// signatures
// -------------------------------------------------------------------------------------

/**
 * Who signs a statement: the algorithm and the signer's key id (part of what is signed, so a
 * signature cannot be relabelled as another key's).
 *
 * @category models
 * @since 0.1.0
 */
export type Signer = Pick<EvidenceSignature, "alg" | "keyId">

// Names what the bytes are, so a signature over a statement can never be taken for one over
// anything else (a schemaVersion 1 signature covered the bare digest string).
const STATEMENT_CONTEXT = "forkjoin.merge-probe.signed-statement"

/**
 * The statement a signature covers, as the exact text signed (canonical JSON, UTF-8): the
 * evidence's every field but `signature` — the digest, `createdAt`, the fingerprint, the
 * filesystem facts, the status, every scenario with its timings — and the signer. Unlike the
 * digest it changes on every run (`createdAt`, timings), so any edited field breaks the
 * signature.
 *
 * @category constructors
 * @since 0.1.0
 */
export const statementOf = (evidence: ProbeEvidence, signer: Signer): string => {
  const { signature: _signature, ...covered } = evidence
  return canonicalJson({ context: STATEMENT_CONTEXT, signer: { alg: signer.alg, keyId: signer.keyId }, evidence: covered })
}

/**
 * Signs evidence with an Ed25519 private key: the digest is recomputed from the content, then
 * the statement (`statementOf`) is signed (`signature: { alg, keyId, value }`). `key_invalid`
 * for a key that is not an Ed25519 private key.
 *
 * @category combinators
 * @since 0.1.0
 */
export const sign = (evidence: ProbeEvidence, privateKey: KeyObject): Result.Result<ProbeEvidence, AutonomyError> => {
  if (privateKey.type !== "private" || privateKey.asymmetricKeyType !== "ed25519") {
    return Result.fail(new AutonomyError({
      code: "key_invalid",
      paths: [],
      message: `evidence is signed with an Ed25519 private key, got a ${privateKey.type} ${privateKey.asymmetricKeyType ?? "unknown"} key; create one with \`forkjoin keygen --out KEYFILE\`.`
    }))
  }
  const { signature: _old, ...unsigned } = evidence
  const content: ProbeEvidence = { ...unsigned, digest: digestOf(unsigned) }
  const signer: Signer = { alg: "ed25519", keyId: keyIdOf(privateKey) }
  const value = signBytes(null, Buffer.from(statementOf(content, signer), "utf8"), privateKey).toString("base64")
  return Result.succeed({ ...content, signature: { ...signer, value } })
}

/**
 * True when the evidence is signed by `publicKey`: the signature names that key and verifies
 * over the evidence's statement as it stands, so an edit of any field (`createdAt` included)
 * fails. (That the digest matches the content is `read`'s check.)
 *
 * @category guards
 * @since 0.1.0
 */
export const verify = (evidence: ProbeEvidence, publicKey: KeyObject): boolean => {
  const signature = evidence.signature
  if (signature === undefined || signature.alg !== "ed25519" || signature.keyId !== keyIdOf(publicKey)) return false
  try {
    return verifyBytes(null, Buffer.from(statementOf(evidence, signature), "utf8"), publicKey, Buffer.from(signature.value, "base64"))
  } catch {
    return false
  }
}

// -------------------------------------------------------------------------------------
// reading
// -------------------------------------------------------------------------------------

/**
 * Why an evidence file was refused: `not_regular_file` (a folder, named pipe, device or socket:
 * never opened for reading), `too_large` (over `MAX_EVIDENCE_BYTES`, not read), `unreadable`
 * (I/O), `truncated`, `not_json`, `outdated` (an older schemaVersion, say what to re-run),
 * `schema` (wrong shape, with JSON paths), `digest_mismatch` (the content was changed after
 * the digest was computed, or the digest was edited), `inconsistent` (statuses that contradict
 * the assertions, duplicate scenarios). Stable: scripts match on them.
 *
 * @category models
 * @since 0.1.0
 */
export const InvalidReason = Schema.Literals([
  "not_regular_file",
  "too_large",
  "unreadable",
  "truncated",
  "not_json",
  "outdated",
  "schema",
  "digest_mismatch",
  "inconsistent"
])

/**
 * @category models
 * @since 0.1.0
 */
export type InvalidReason = typeof InvalidReason.Type

/**
 * What reading an evidence file found: `Missing`, `Invalid` (the first reason, and every
 * problem for people; with the decoded `evidence` when only its digest or consistency failed,
 * so a signature can still be checked against it) or `Ok`.
 *
 * @category models
 * @since 0.1.0
 */
export const ReadResult = Schema.Union([
  Schema.TaggedStruct("Missing", { path: Schema.String }),
  Schema.TaggedStruct("Invalid", {
    path: Schema.String,
    reason: InvalidReason,
    problems: Schema.Array(Schema.String),
    evidence: Schema.optionalKey(ProbeEvidence)
  }),
  Schema.TaggedStruct("Ok", { path: Schema.String, evidence: ProbeEvidence })
])

/**
 * @category models
 * @since 0.1.0
 */
export type ReadResult = typeof ReadResult.Type

const invalid = (file: string, reason: InvalidReason, problems: ReadonlyArray<string>, evidence?: ProbeEvidence): ReadResult => ({
  _tag: "Invalid",
  path: file,
  reason,
  problems,
  ...(evidence === undefined ? {} : { evidence })
})

const decodeEvidence = Schema.decodeUnknownResult(ProbeEvidence, { onExcessProperty: "error", errors: "all" })

const short = (digest: string): string => digest.slice(0, 19)

/**
 * Checks evidence text (pure): JSON, the schema (every problem with its JSON path), each
 * scenario's status against its assertions and the top-level status against the scenarios,
 * then the digest against the content.
 *
 * @category constructors
 * @since 0.1.0
 */
export const parse = (file: string, text: string): ReadResult => {
  const rerun = "run `forkjoin probe` to write it again"
  const json = parseJson(text)
  if (!json.ok) {
    const e = json.error
    return e.truncated
      ? invalid(file, "truncated", [`the file ends early (${describeSyntaxError(e)}): it was cut off while being written or copied; ${rerun}`])
      : invalid(file, "not_json", [`the file is not JSON (${describeSyntaxError(e)}); ${rerun}`])
  }
  const raw = json.value
  if (raw !== null && typeof raw === "object" && !Array.isArray(raw)) {
    const version: unknown = (raw as Record<string, unknown>)["schemaVersion"]
    if (version === 1) {
      // Version 1 signed only the digest, so its createdAt could be edited under a valid signature.
      return (raw as Record<string, unknown>)["signature"] === undefined
        ? invalid(file, "outdated", [`$.schemaVersion is 1: the evidence was written by an older forkjoin; ${rerun} with this build`])
        : invalid(file, "outdated", [
          "$.schemaVersion is 1: the evidence is signed in the old format, whose signature does not cover createdAt, so this build refuses it; " +
          "re-run `forkjoin probe --sign KEYFILE` with this build to sign it again"
        ])
    }
    if (typeof version === "number" && version !== SCHEMA_VERSION) {
      return invalid(file, "schema", [`$.schemaVersion is ${version}; this build reads evidence schemaVersion ${SCHEMA_VERSION}: run \`forkjoin probe\` with this build`])
    }
    const kind: unknown = (raw as Record<string, unknown>)["kind"]
    if (kind !== undefined && kind !== "forkjoin.merge-probe") {
      return invalid(file, "schema", [`$.kind is ${JSON.stringify(kind)}: this is not merge-probe evidence (expected "forkjoin.merge-probe"); point the gate at the file \`forkjoin probe\` writes`])
    }
  }
  const decoded = decodeEvidence(raw)
  if (Result.isFailure(decoded)) {
    return invalid(
      file,
      "schema",
      problemsOf(decoded.failure.issue).map((p) => `$${jsonPath(p.path)}: ${p.message}`).concat(`the file is not merge-probe evidence of this format; ${rerun}`)
    )
  }
  const evidence = decoded.success
  const problems: Array<string> = []
  const computed = digestOf(evidence)
  if (computed !== evidence.digest) {
    problems.push(
      `the digest does not match the content (recorded ${short(evidence.digest)}…, content gives ${short(computed)}…): ` +
        `the file was edited after the probe wrote it; ${rerun}`
    )
  }
  const inconsistent: Array<string> = []
  const seen = new Set<string>()
  evidence.scenarios.forEach((s, i) => {
    if (seen.has(s.id)) inconsistent.push(`$.scenarios[${i}].id: scenario ${JSON.stringify(s.id)} appears twice`)
    seen.add(s.id)
    const expected = statusOf(s.assertions.every((a) => a.passed))
    if (s.status !== expected) {
      inconsistent.push(`$.scenarios[${i}].status: scenario ${JSON.stringify(s.id)} says ${s.status} but its assertions say ${expected}`)
    }
  })
  const overall = statusOf(evidence.scenarios.every((s) => s.status === "passed"))
  if (evidence.status !== overall) inconsistent.push(`$.status: the evidence says ${evidence.status} but its scenarios say ${overall}`)
  if (inconsistent.length > 0) problems.push(...inconsistent.map((p) => `${p} (edited?); ${rerun}`))
  if (problems.length > 0) return invalid(file, computed !== evidence.digest ? "digest_mismatch" : "inconsistent", problems, evidence)
  return { _tag: "Ok", path: file, evidence }
}

/**
 * Reads an evidence file: `Missing` when it does not exist, `Invalid` when it is not a regular
 * file or is over `MAX_EVIDENCE_BYTES` (refused without reading: a named pipe or a device
 * never blocks or floods the gate), cannot be read or is not valid evidence (see `parse`),
 * else `Ok`. Never fails.
 *
 * @category constructors
 * @since 0.1.0
 */
export const read = (file: string): Effect.Effect<ReadResult> =>
  Effect.sync(() => {
    const absolute = path.resolve(file)
    const found = readRegularFile(absolute, MAX_EVIDENCE_BYTES)
    const pointAt = "point --evidence (or gate.evidence) at the JSON file `forkjoin probe` writes"
    switch (found._tag) {
      case "Missing":
        return { _tag: "Missing", path: absolute }
      case "NotRegular":
        return invalid(absolute, "not_regular_file", [`${absolute} is ${found.kind}, not a regular file, so it was not read; ${pointAt}`])
      case "TooLarge":
        return invalid(absolute, "too_large", [
          `${absolute} is ${found.size} bytes or more, over the ${MAX_EVIDENCE_BYTES} bytes evidence may have, so it was not read; ${pointAt}`
        ])
      case "Failed": {
        const remedy = remedyOf(found.cause)
        return invalid(absolute, "unreadable", [`the file cannot be read (${describeSystemError(found.cause)})${remedy === undefined ? "" : `; ${remedy}`}`])
      }
      case "Text":
        return parse(absolute, found.text)
    }
  })

// -------------------------------------------------------------------------------------
// writing
// -------------------------------------------------------------------------------------

// Best-effort cleanup after a failed write; the write's own error is the one reported.
const removeQuietly = (file: string): void => {
  try {
    fs.rmSync(file, { force: true })
  } catch {
    // the folder itself is unusable: nothing was left there
  }
}

/**
 * Writes evidence as pretty JSON, atomically (a temp file in the same folder, then a rename),
 * creating the folder. `evidence_unwritable` with what to do when it cannot.
 *
 * @category constructors
 * @since 0.1.0
 */
export const write = (file: string, evidence: ProbeEvidence): Effect.Effect<void, AutonomyError> =>
  Effect.suspend(() => {
    const absolute = path.resolve(file)
    const temp = `${absolute}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`
    try {
      fs.mkdirSync(path.dirname(absolute), { recursive: true })
      const fd = fs.openSync(temp, "w")
      try {
        fs.writeSync(fd, `${JSON.stringify(evidence, null, 2)}\n`)
        // On disk before the rename publishes it: a crash never leaves an empty evidence file.
        fs.fsyncSync(fd)
      } finally {
        fs.closeSync(fd)
      }
      fs.renameSync(temp, absolute)
      return Effect.void
    } catch (cause) {
      removeQuietly(temp)
      const remedy = remedyOf(cause)
      return Effect.fail(new AutonomyError({
        code: "evidence_unwritable",
        paths: [absolute],
        message: `cannot write the evidence to ${absolute} (${describeSystemError(cause)})` +
          `${remedy === undefined ? "" : `; ${remedy}`}; or choose another file with --out.`,
        cause
      }))
    }
  })
