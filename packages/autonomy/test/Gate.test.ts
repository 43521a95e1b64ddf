import { assert, describe, it } from "@effect/vitest"
import type { GateDecision } from "@forkjoin/schema/Autonomy"
import { utcTimestampFromMillis } from "@forkjoin/schema/UtcTimestamp"
import type { EngineFingerprint, FilesystemFacts, ProbeEvidence } from "@forkjoin/schema/Evidence"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { GateDecision as GateDecisionSchema } from "@forkjoin/schema/Autonomy"
import { TestClock } from "effect/testing"
import { createPrivateKey, createPublicKey } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Config from "../src/Config.ts"
import * as Evidence from "../src/Evidence.ts"
import * as Filesystem from "../src/Filesystem.ts"
import * as Fingerprint from "../src/Fingerprint.ts"
import * as Gate from "../src/Gate.ts"
import * as Keys from "../src/Keys.ts"
import { evidenceFor, NOW, passingScenarios, tempDir, writeJson } from "./helpers.ts"

const configOf = (workspace: string, env: Config.Env, file?: unknown): Config.ResolvedConfig =>
  Result.getOrThrow(Config.resolve({ workspace, env, file: file === undefined ? undefined : { path: path.join(workspace, "forkjoin.config.json"), text: JSON.stringify(file) } }))

const SAFE = { FORKJOIN_AUTONOMY: "safe" }

interface Case {
  readonly config: Config.ResolvedConfig
  readonly evidence?: ProbeEvidence | Evidence.ReadResult
  readonly fingerprint?: EngineFingerprint
  readonly filesystem?: FilesystemFacts
  readonly now?: number
  readonly trustedKeys?: ReadonlyArray<Gate.TrustedKey>
}

const ok = (evidence: ProbeEvidence): Evidence.ReadResult => ({ _tag: "Ok", path: "/ws/e.json", evidence })

const decide = (workspace: string, c: Case): GateDecision => {
  const evidence = c.evidence === undefined ? evidenceFor(workspace) : c.evidence
  return Gate.decide({
    config: c.config,
    evidence: "_tag" in evidence ? evidence : ok(evidence),
    fingerprint: c.fingerprint ?? Fingerprint.current(),
    filesystem: c.filesystem ?? Filesystem.factsOf(workspace),
    now: c.now ?? NOW,
    trustedKeys: c.trustedKeys ?? []
  })
}

const trusted = (publicPem: string, file = "/keys/ci.pem.pub"): Gate.TrustedKey => {
  const key = createPublicKey(publicPem)
  return { path: file, keyId: Keys.keyIdOf(key), key }
}

const reasonOf = (d: GateDecision, requirement: GateDecision["missing"][number]): string =>
  d.reasons.find((r) => r.requirement === requirement)?.message ?? assert.fail(`no reason for ${requirement}: ${JSON.stringify(d.reasons)}`)

const isDecision = Schema.is(GateDecisionSchema)

describe("Gate.decide: levels", () => {
  it("supervised by default: not_applicable, with how to promote", () => {
    const ws = tempDir()
    const d = decide(ws, { config: configOf(ws, {}) })
    assert.strictEqual(d.status, "not_applicable")
    assert.strictEqual(d.level, "supervised")
    assert.isFalse(d.mutatingSubagents)
    assert.deepStrictEqual(d.missing, [])
    assert.isNull(d.evidence)
    assert.include(d.message, "set FORKJOIN_AUTONOMY=safe or \"autonomy\": \"safe\" in forkjoin.config.json, run `forkjoin probe`, then `forkjoin gate`")
    assert.isTrue(isDecision(d))
  })

  it("off: not_applicable even with the flag", () => {
    const ws = tempDir()
    const d = decide(ws, { config: configOf(ws, { FORKJOIN_AUTONOMY: "off", FORKJOIN_MUTATING_SUBAGENTS: "1" }) })
    assert.strictEqual(d.status, "not_applicable")
    assert.include(d.message, "Level off (env FORKJOIN_AUTONOMY) allows analysis only")
  })

  it("safe with the flag turned off: not_applicable naming the flag", () => {
    const ws = tempDir()
    const d = decide(ws, { config: configOf(ws, { ...SAFE, FORKJOIN_MUTATING_SUBAGENTS: "no" }) })
    assert.strictEqual(d.status, "not_applicable")
    assert.include(d.message, "turned off by env FORKJOIN_MUTATING_SUBAGENTS")
  })

  it("bold: skipped with a warning, evidence not asked for", () => {
    const ws = tempDir()
    const d = decide(ws, { config: configOf(ws, { FORKJOIN_AUTONOMY: "bold" }), evidence: { _tag: "Missing", path: "/ws/e.json" } })
    assert.strictEqual(d.status, "skipped")
    assert.isTrue(d.mutatingSubagents)
    assert.deepStrictEqual(d.missing, [])
    assert.strictEqual(d.warnings.length, 1)
    assert.include(d.warnings[0]!, "mutating children run without checking probe evidence; the gate was skipped")
    assert.isTrue(Result.isSuccess(Gate.admitMutating(d)))
  })

  it("safe with fresh, matching evidence: passed", () => {
    const ws = tempDir()
    const d = decide(ws, { config: configOf(ws, SAFE) })
    assert.strictEqual(d.status, "passed")
    assert.deepStrictEqual(d.missing, [])
    assert.include(d.message, "meets every requirement")
    assert.strictEqual(d.evidence?.path, "/ws/e.json")
    assert.isTrue(Result.isSuccess(Gate.admitMutating(d)))
    assert.isTrue(isDecision(d))
  })

  it("supervised with the flag: gated too", () => {
    const ws = tempDir()
    assert.strictEqual(decide(ws, { config: configOf(ws, { FORKJOIN_MUTATING_SUBAGENTS: "yes" }) }).status, "passed")
    assert.strictEqual(
      decide(ws, { config: configOf(ws, { FORKJOIN_MUTATING_SUBAGENTS: "yes" }), evidence: { _tag: "Missing", path: "/x" } }).status,
      "blocked"
    )
  })
})

describe("Gate.decide: blocked, one reason per failed requirement", () => {
  it("evidence_missing says how to produce it", () => {
    const ws = tempDir()
    const d = decide(ws, { config: configOf(ws, SAFE), evidence: { _tag: "Missing", path: path.join(ws, ".forkjoin/evidence/merge-probe.json") } })
    assert.strictEqual(d.status, "blocked")
    assert.deepStrictEqual(d.missing, ["evidence_missing"])
    assert.include(reasonOf(d, "evidence_missing"), `run \`forkjoin probe --workspace ${ws}\``)
    const refusal = Gate.admitMutating(d)
    assert.isTrue(Result.isFailure(refusal) && refusal.failure.code === "gate_blocked" && refusal.failure.message.startsWith("Mutating children were not started."))
  })

  it("evidence_invalid carries the read problems", () => {
    const ws = tempDir()
    const text = JSON.stringify(evidenceFor(ws))
    const d = decide(ws, { config: configOf(ws, SAFE), evidence: Evidence.parse("/ws/e.json", text.slice(0, 100)) })
    assert.deepStrictEqual(d.missing, ["evidence_invalid"])
    assert.include(reasonOf(d, "evidence_invalid"), "is not valid (truncated): the file ends early")
  })

  it("scenario_failed names every failed scenario and assertion, and absent required ones", () => {
    const ws = tempDir()
    const scenarios = passingScenarios()
    scenarios[3] = { ...scenarios[3]!, status: "failed", assertions: [{ name: "drift refused", passed: false, detail: "the child was applied" }, { name: "workspace kept", passed: true }] }
    scenarios[5] = { ...scenarios[5]!, status: "failed", assertions: [{ name: "refused", passed: false }] }
    const withoutLast = scenarios.slice(0, -1)
    const d = decide(ws, { config: configOf(ws, SAFE), evidence: evidenceFor(ws, { scenarios: withoutLast }) })
    assert.deepStrictEqual(d.missing, ["scenario_failed"])
    const reason = reasonOf(d, "scenario_failed")
    assert.include(reason, `scenario ${scenarios[3]!.id} failed: assertion "drift refused" (the child was applied)`)
    assert.include(reason, `scenario ${scenarios[5]!.id} failed: assertion "refused"`)
    assert.include(reason, `required scenario ${scenarios.at(-1)!.id} (${scenarios.at(-1)!.title}) is absent from the evidence`)
    assert.notInclude(reason, "workspace kept")
  })

  for (const [part, change, says] of [
    ["version", { version: "0.0.9" }, "version 0.0.9 in the evidence"],
    ["scenario set", { scenarioSetDigest: `sha256:${"1".repeat(64)}` }, "scenario set sha256:111111111111… in the evidence"],
    ["sources", { sourceDigest: `sha256:${"2".repeat(64)}` }, "sources sha256:222222222222… in the evidence"]
  ] as const) {
    it(`fingerprint_mismatch names the ${part}`, () => {
      const ws = tempDir()
      const fp = Fingerprint.current()
      const e = Evidence.assemble({ ...evidenceFor(ws), fingerprint: { ...fp, ...change } as EngineFingerprint })
      const d = decide(ws, { config: configOf(ws, SAFE), evidence: e })
      assert.deepStrictEqual(d.missing, ["fingerprint_mismatch"])
      const reason = reasonOf(d, "fingerprint_mismatch")
      assert.include(reason, "recorded by another build")
      assert.include(reason, says)
      for (const other of ["version ", "scenario set ", "sources "].filter((p) => !says.startsWith(p))) assert.notInclude(reason, `${other}sha256`)
    })
  }

  it("evidence_stale: age against the limit and its source; fresh at the limit", () => {
    const ws = tempDir()
    const config = configOf(ws, SAFE, { gate: { maxEvidenceAge: "24h" } })
    const stale = decide(ws, { config, evidence: evidenceFor(ws, { ageMs: 25 * 3_600_000 }) })
    assert.deepStrictEqual(stale.missing, ["evidence_stale"])
    assert.include(reasonOf(stale, "evidence_stale"), "The evidence is 1d 1h old")
    assert.include(reasonOf(stale, "evidence_stale"), "over the limit of 24h (forkjoin.config.json gate.maxEvidenceAge)")
    assert.strictEqual(decide(ws, { config, evidence: evidenceFor(ws, { ageMs: 24 * 3_600_000 }) }).status, "passed")
    const week = decide(ws, { config: configOf(ws, SAFE), evidence: evidenceFor(ws, { ageMs: 8 * 86_400_000 }) })
    assert.include(reasonOf(week, "evidence_stale"), "over the limit of 7d (built-in default)")
  })

  it("a createdAt in the future beyond the clock skew is invalid; within it, fine", () => {
    const ws = tempDir()
    const config = configOf(ws, SAFE)
    const future = decide(ws, { config, evidence: evidenceFor(ws, { ageMs: -3_600_000 }) })
    assert.deepStrictEqual(future.missing, ["evidence_invalid"])
    assert.include(reasonOf(future, "evidence_invalid"), "1h ahead of this machine's clock")
    assert.strictEqual(decide(ws, { config, evidence: evidenceFor(ws, { ageMs: -60_000 }) }).status, "passed")
  })

  it("filesystem_mismatch names the differing facts", () => {
    const ws = tempDir()
    const here = Filesystem.factsOf(ws)
    const elsewhere: FilesystemFacts = { ...here, type: here.type === "ntfs" ? "ext4" : "ntfs", caseSensitive: !here.caseSensitive }
    const d = decide(ws, { config: configOf(ws, SAFE), evidence: evidenceFor(ws, { filesystem: elsewhere }), filesystem: here })
    assert.deepStrictEqual(d.missing, ["filesystem_mismatch"])
    const reason = reasonOf(d, "filesystem_mismatch")
    assert.include(reason, `type ${elsewhere.type} in the evidence, ${here.type} here`)
    assert.include(reason, `caseSensitive ${elsewhere.caseSensitive} in the evidence, ${here.caseSensitive} here`)
    assert.notInclude(reason, "symlinks")
  })

  it("filesystem_mismatch from real facts: evidence from /dev/shm (tmpfs here) against a disk workspace", () => {
    const ws = tempDir()
    const shmFacts = Filesystem.factsOf(tempDir(fs.existsSync("/dev/shm") ? "/dev/shm" : undefined))
    const wsFacts = Filesystem.factsOf(ws)
    const d = decide(ws, { config: configOf(ws, SAFE), evidence: evidenceFor(ws, { filesystem: shmFacts }), filesystem: wsFacts })
    assert.strictEqual(d.missing.includes("filesystem_mismatch"), shmFacts.type !== wsFacts.type)
  })

  it("every failed requirement at once, in a stable order", () => {
    const ws = tempDir()
    const scenarios = passingScenarios()
    scenarios[0] = { ...scenarios[0]!, status: "failed", assertions: [{ name: "applied", passed: false }] }
    const here = Filesystem.factsOf(ws)
    const e = Evidence.assemble({
      ...evidenceFor(ws, { ageMs: 30 * 86_400_000, scenarios }),
      fingerprint: { ...Fingerprint.current(), version: "0.0.1" },
      filesystem: { ...here, symlinks: !here.symlinks }
    })
    const d = decide(ws, { config: configOf(ws, SAFE), evidence: e, filesystem: here, trustedKeys: [trusted(Keys.generate().publicPem)] })
    assert.strictEqual(d.status, "blocked")
    assert.deepStrictEqual(d.missing, ["scenario_failed", "fingerprint_mismatch", "evidence_stale", "filesystem_mismatch", "signature_missing"])
    assert.deepStrictEqual(d.reasons.map((r) => r.requirement), d.missing)
    assert.include(d.message, "The gate is blocked at level safe (scenario_failed, fingerprint_mismatch, evidence_stale, filesystem_mismatch, signature_missing)")
    assert.isTrue(isDecision(d))
  })
})

describe("Gate.decide: signatures", () => {
  const pair = Keys.generate()
  const other = Keys.generate()
  const sign = (e: ProbeEvidence, privatePem: string) => Result.getOrThrow(Evidence.sign(e, createPrivateKey(privatePem)))

  it("signed evidence passes with the trusted key, recording the signer", () => {
    const ws = tempDir()
    const d = decide(ws, { config: configOf(ws, SAFE), evidence: sign(evidenceFor(ws), pair.privatePem), trustedKeys: [trusted(pair.publicPem)] })
    assert.strictEqual(d.status, "passed")
    assert.strictEqual(d.evidence?.signer, pair.keyId)
    assert.include(d.message, "signed by /keys/ci.pem.pub")
  })

  it("a signature from another key is untrusted_signer", () => {
    const ws = tempDir()
    const d = decide(ws, { config: configOf(ws, SAFE), evidence: sign(evidenceFor(ws), other.privatePem), trustedKeys: [trusted(pair.publicPem)] })
    assert.deepStrictEqual(d.missing, ["untrusted_signer"])
    assert.include(reasonOf(d, "untrusted_signer"), `signed by key ${other.keyId}, which is not trusted`)
  })

  it("content edited and its digest recomputed after signing: signature_invalid", () => {
    const ws = tempDir()
    const scenarios = passingScenarios()
    scenarios[0] = { ...scenarios[0]!, status: "failed", assertions: [{ name: "applied", passed: false }] }
    const failedSigned = sign(evidenceFor(ws, { scenarios }), pair.privatePem)
    // An attacker flips the failure to a pass and recomputes the (unkeyed) digest.
    const forgedBody = { ...failedSigned, status: "passed" as const, scenarios: passingScenarios() }
    const forged = { ...forgedBody, digest: Evidence.digestOf(forgedBody) }
    const read = Evidence.parse("/ws/e.json", JSON.stringify(forged))
    assert.strictEqual(read._tag, "Ok")
    const d = decide(ws, { config: configOf(ws, SAFE), evidence: read, trustedKeys: [trusted(pair.publicPem)] })
    assert.deepStrictEqual(d.missing, ["signature_invalid"])
    assert.include(reasonOf(d, "signature_invalid"), "The signature does not verify against /keys/ci.pem.pub")
  })

  it("a signature value edited: signature_invalid", () => {
    const ws = tempDir()
    const e = sign(evidenceFor(ws), pair.privatePem)
    const flipped = Buffer.from(e.signature!.value, "base64")
    flipped[0] = flipped[0]! ^ 1
    const d = decide(ws, { config: configOf(ws, SAFE), evidence: { ...e, signature: { ...e.signature!, value: flipped.toString("base64") } }, trustedKeys: [trusted(pair.publicPem)] })
    assert.deepStrictEqual(d.missing, ["signature_invalid"])
  })

  it("an edited digest on signed evidence is refused as invalid and as a broken signature", () => {
    const ws = tempDir()
    const e = sign(evidenceFor(ws), pair.privatePem)
    const read = Evidence.parse("/ws/e.json", JSON.stringify({ ...e, digest: `sha256:${"c".repeat(64)}` }))
    const d = decide(ws, { config: configOf(ws, SAFE), evidence: read, trustedKeys: [trusted(pair.publicPem)] })
    assert.deepStrictEqual(d.missing, ["evidence_invalid", "signature_invalid"])
    assert.include(reasonOf(d, "evidence_invalid"), "the digest does not match the content")
  })

  // The stale-evidence attack: createdAt is outside the digest, so only the signature can catch it.
  it("stale signed evidence whose createdAt is edited to look fresh: signature_invalid, not passed", () => {
    const ws = tempDir()
    const stale = sign(evidenceFor(ws, { ageMs: 30 * 86_400_000 }), pair.privatePem)
    const keys = [trusted(pair.publicPem)]
    assert.deepStrictEqual(decide(ws, { config: configOf(ws, SAFE), evidence: stale, trustedKeys: keys }).missing, ["evidence_stale"])
    const freshened = { ...stale, createdAt: utcTimestampFromMillis(NOW - 60_000) }
    const read = Evidence.parse("/ws/e.json", JSON.stringify(freshened))
    assert.strictEqual(read._tag, "Ok")
    const d = decide(ws, { config: configOf(ws, SAFE), evidence: read, trustedKeys: keys })
    assert.strictEqual(d.status, "blocked")
    assert.deepStrictEqual(d.missing, ["signature_invalid"])
    assert.include(reasonOf(d, "signature_invalid"), "a signed field (createdAt, the build fingerprint")
  })

  it("an edited fingerprint or filesystem fact of signed evidence: signature_invalid, with or without the digest recomputed", () => {
    const ws = tempDir()
    const e = sign(evidenceFor(ws), pair.privatePem)
    const keys = [trusted(pair.publicPem)]
    assert.strictEqual(decide(ws, { config: configOf(ws, SAFE), evidence: e, trustedKeys: keys }).status, "passed")
    // Evidence from another build and another filesystem, edited to claim this one's.
    const foreign = sign(evidenceFor(ws, { filesystem: { ...Filesystem.factsOf(ws), type: "ntfs" } }), pair.privatePem)
    const edits: ReadonlyArray<readonly [string, ProbeEvidence, ReadonlyArray<string>]> = [
      ["fingerprint", { ...e, fingerprint: { ...e.fingerprint, sourceDigest: `sha256:${"e".repeat(64)}` as ProbeEvidence["digest"] } }, ["fingerprint_mismatch"]],
      ["filesystem fact", { ...foreign, filesystem: e.filesystem }, []]
    ]
    for (const [what, edited, also] of edits) {
      for (const digest of ["kept", "recomputed"] as const) {
        const text = JSON.stringify(digest === "kept" ? edited : { ...edited, digest: Evidence.digestOf(edited) })
        const d = decide(ws, { config: configOf(ws, SAFE), evidence: Evidence.parse("/ws/e.json", text), trustedKeys: keys })
        // With its digest kept the file is invalid, so the other requirements are not judged on it.
        const expected = digest === "kept" ? ["evidence_invalid", "signature_invalid"] : [...also, "signature_invalid"]
        assert.deepStrictEqual([...d.missing].sort(), expected.sort(), `${what}, digest ${digest}`)
        assert.include(reasonOf(d, "signature_invalid"), "was changed after signing", `${what}, digest ${digest}`)
      }
    }
  })

  it("unsigned evidence with trusted keys configured: signature_missing; signed without trusted keys: a warning", () => {
    const ws = tempDir()
    const unsigned = decide(ws, { config: configOf(ws, SAFE), trustedKeys: [trusted(pair.publicPem)] })
    assert.deepStrictEqual(unsigned.missing, ["signature_missing"])
    assert.include(reasonOf(unsigned, "signature_missing"), "forkjoin probe --sign KEYFILE")
    const noTrust = decide(ws, { config: configOf(ws, SAFE), evidence: sign(evidenceFor(ws), pair.privatePem) })
    assert.strictEqual(noTrust.status, "passed")
    assert.isTrue(noTrust.warnings.some((w) => w.includes("no trusted keys are configured, so the signature was not checked")))
  })

  it("any one of several trusted keys is enough", () => {
    const ws = tempDir()
    const d = decide(ws, {
      config: configOf(ws, SAFE),
      evidence: sign(evidenceFor(ws), other.privatePem),
      trustedKeys: [trusted(pair.publicPem), trusted(other.publicPem, "/keys/other.pub")]
    })
    assert.strictEqual(d.status, "passed")
  })
})

describe("Gate.evaluate (files, environment and clock)", () => {
  const writeEvidence = (ws: string, e: ProbeEvidence, rel = ".forkjoin/evidence/merge-probe.json") => writeJson(path.join(ws, rel), e)

  it.effect("the default level answers not_applicable with how to promote, reading nothing", () =>
    Effect.gen(function*() {
      const ws = tempDir()
      const d = yield* Gate.evaluate({ workspace: ws, env: {} })
      assert.strictEqual(d.status, "not_applicable")
      assert.include(d.message, "FORKJOIN_AUTONOMY=safe")
      assert.deepStrictEqual(fs.readdirSync(ws), [])
    }))

  it.effect("FORKJOIN_AUTONOMY=safe with evidence from this build on this filesystem passes; nothing is left in the workspace", () =>
    Effect.gen(function*() {
      const ws = tempDir()
      yield* TestClock.setTime(NOW)
      writeEvidence(ws, evidenceFor(ws))
      const d = yield* Gate.evaluate({ workspace: ws, env: SAFE })
      assert.strictEqual(d.status, "passed", d.message)
      assert.strictEqual(d.decidedAt, new Date(NOW).toISOString())
      assert.deepStrictEqual(fs.readdirSync(path.join(ws, ".forkjoin")), ["evidence"])
    }))

  it.effect("no evidence yet: blocked, evidence_missing", () =>
    Effect.gen(function*() {
      const ws = tempDir()
      const d = yield* Gate.evaluate({ workspace: ws, env: SAFE })
      assert.strictEqual(d.status, "blocked")
      assert.deepStrictEqual(d.missing, ["evidence_missing"])
      assert.strictEqual(d.evidence?.path, path.join(ws, ".forkjoin/evidence/merge-probe.json"))
    }))

  it.effect("a stale file: the clock decides", () =>
    Effect.gen(function*() {
      const ws = tempDir()
      writeEvidence(ws, evidenceFor(ws))
      yield* TestClock.setTime(NOW + 8 * 86_400_000)
      const d = yield* Gate.evaluate({ workspace: ws, env: SAFE })
      assert.deepStrictEqual(d.missing, ["evidence_stale"])
    }))

  it.effect("config file settings: evidence path, max age and trusted keys (relative to the workspace)", () =>
    Effect.gen(function*() {
      const ws = tempDir()
      yield* TestClock.setTime(NOW)
      const written = yield* Keys.writePair(path.join(ws, "keys", "ci.pem"))
      const privateKey = yield* Keys.readPrivate(written.privateFile)
      writeEvidence(ws, Result.getOrThrow(Evidence.sign(evidenceFor(ws, { ageMs: 2 * 3_600_000 }), privateKey)), "ci/evidence.json")
      writeJson(path.join(ws, "forkjoin.config.json"), {
        autonomy: "safe",
        gate: { evidence: "ci/evidence.json", maxEvidenceAge: "3h", trustedKeys: ["keys/ci.pem.pub"] }
      })
      const d = yield* Gate.evaluate({ workspace: ws, env: {} })
      assert.strictEqual(d.status, "passed", d.message)
      assert.strictEqual(d.evidence?.signer, written.keyId)

      const otherKey = yield* Keys.writePair(path.join(tempDir(), "other.pem"))
      const viaFlag = yield* Gate.evaluate({ workspace: ws, env: {}, trust: [otherKey.publicFile] })
      assert.deepStrictEqual(viaFlag.missing, ["untrusted_signer"])
    }))

  it.effect("--evidence overrides the configured path", () =>
    Effect.gen(function*() {
      const ws = tempDir()
      yield* TestClock.setTime(NOW)
      const file = path.join(tempDir(), "carried.json")
      writeJson(file, evidenceFor(ws))
      const d = yield* Gate.evaluate({ workspace: ws, env: { ...SAFE, FORKJOIN_EVIDENCE: "nowhere.json" }, evidencePath: file })
      assert.strictEqual(d.status, "passed", d.message)
      assert.strictEqual(d.evidence?.path, file)
    }))

  it.effect("a trusted key file that is missing or a private key fails with key_invalid", () =>
    Effect.gen(function*() {
      const ws = tempDir()
      const missing = yield* Effect.flip(Gate.evaluate({ workspace: ws, env: SAFE, trust: [path.join(ws, "absent.pub")] }))
      assert.strictEqual(missing.code, "key_invalid")
      const pair = yield* Keys.writePair(path.join(ws, "k.pem"))
      const wrongKind = yield* Effect.flip(Gate.evaluate({ workspace: ws, env: SAFE, trust: [pair.privateFile] }))
      assert.strictEqual(wrongKind.code, "key_invalid")
      assert.include(wrongKind.message, "is a private key where a public key is expected")
    }))

  it.effect("bad configuration fails the evaluation before anything is read", () =>
    Effect.gen(function*() {
      const ws = tempDir()
      assert.strictEqual((yield* Effect.flip(Gate.evaluate({ workspace: ws, env: { FORKJOIN_AUTONOMY: "yolo" } }))).code, "env_invalid")
      fs.writeFileSync(path.join(ws, "forkjoin.config.json"), "{ autonomy: safe }")
      const e = yield* Effect.flip(Gate.evaluate({ workspace: ws, env: {} }))
      assert.strictEqual(e.code, "config_invalid")
      assert.include(e.message, "line 1, column 3: expected a key in double quotes")
    }))

  it.effect("a plan cannot raise the level; it can lower it", () =>
    Effect.gen(function*() {
      const ws = tempDir()
      const capped = yield* Gate.evaluate({ workspace: ws, env: {}, planLevel: "bold" })
      assert.strictEqual(capped.status, "not_applicable")
      assert.strictEqual(capped.level, "supervised")
      assert.isTrue(capped.warnings.some((w) => w.includes("The plan asks for autonomy bold, but the configuration allows supervised")))
      const lowered = yield* Gate.evaluate({ workspace: ws, env: { FORKJOIN_AUTONOMY: "bold" }, planLevel: "safe" })
      assert.strictEqual(lowered.level, "safe")
      assert.deepStrictEqual(lowered.missing, ["evidence_missing"])
      const refusal = Gate.admitMutating(yield* Gate.evaluate({ workspace: ws, env: { FORKJOIN_AUTONOMY: "bold" }, planLevel: "supervised" }))
      assert.isTrue(Result.isFailure(refusal) && refusal.failure.code === "mutating_not_allowed")
    }))
})
