import { assert, describe, it } from "@effect/vitest"
import type { ProbeEvidence } from "@forkjoin/schema/Evidence"
import { utcTimestampFromMillis } from "@forkjoin/schema/UtcTimestamp"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import fc from "fast-check"
import { Buffer } from "node:buffer"
import { execFileSync } from "node:child_process"
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign as signBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Evidence from "../src/Evidence.ts"
import * as Keys from "../src/Keys.ts"
import { evidenceFor, passingScenarios, tempDir } from "./helpers.ts"

// Rebuilds a JSON value with every object's keys in a shuffled order (same content).
const shuffleKeys = (value: unknown, rand: () => number): unknown => {
  if (Array.isArray(value)) return value.map((v) => shuffleKeys(v, rand))
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value)
    for (let i = entries.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1))
      ;[entries[i], entries[j]] = [entries[j]!, entries[i]!]
    }
    return Object.fromEntries(entries.map(([k, v]) => [k, shuffleKeys(v, rand)]))
  }
  return value
}

const signed = (evidence: ProbeEvidence, privatePem: string): ProbeEvidence =>
  Result.getOrThrow(Evidence.sign(evidence, createPrivateKey(privatePem)))

const invalidOf = (result: Evidence.ReadResult) => {
  if (result._tag !== "Invalid") assert.fail(`expected Invalid, got ${result._tag}`)
  return result
}

describe("Evidence.digestOf", () => {
  it("is stable under key order (property)", () => {
    const evidence = evidenceFor(tempDir())
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        let s = seed >>> 0
        const rand = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32)
        const shuffled = shuffleKeys(evidence, rand) as ProbeEvidence
        return Evidence.digestOf(shuffled) === evidence.digest
      }),
      { numRuns: 50 }
    )
  })

  it("ignores timings, createdAt, digest and signature", () => {
    const dir = tempDir()
    const a = evidenceFor(dir)
    const b = Evidence.assemble({
      fingerprint: a.fingerprint,
      filesystem: a.filesystem,
      scenarios: passingScenarios(999),
      createdAt: utcTimestampFromMillis(Date.parse(a.createdAt) + 3_600_000),
      durationMs: 98765
    })
    assert.strictEqual(b.digest, a.digest)
    assert.strictEqual(Evidence.digestOf({ ...a, digest: b.digest }), a.digest)
    assert.strictEqual(signed(a, Keys.generate().privatePem).digest, a.digest)
  })

  it("changes with anything else: a status, an assertion, a fact, the fingerprint", () => {
    const a = evidenceFor(tempDir())
    const [first, ...rest] = a.scenarios
    const changed: ReadonlyArray<ProbeEvidence> = [
      { ...a, status: "failed" },
      { ...a, scenarios: [{ ...first!, assertions: [{ name: "holds", passed: true, detail: "x" }] }, ...rest] },
      { ...a, filesystem: { ...a.filesystem, symlinks: !a.filesystem.symlinks } },
      { ...a, fingerprint: { ...a.fingerprint, version: "0.0.1" } },
      { ...a, scenarios: [...rest, first!] }
    ]
    for (const e of changed) assert.notStrictEqual(Evidence.digestOf(e), a.digest)
  })
})

describe("Evidence.assemble", () => {
  it("passed when every scenario passed, failed when one failed", () => {
    const dir = tempDir()
    assert.strictEqual(evidenceFor(dir).status, "passed")
    const scenarios = passingScenarios()
    scenarios[3] = { ...scenarios[3]!, status: "failed", assertions: [{ name: "refused", passed: false, detail: "applied" }] }
    const failed = evidenceFor(dir, { scenarios })
    assert.strictEqual(failed.status, "failed")
    assert.strictEqual(failed.schemaVersion, 2)
    assert.strictEqual(failed.kind, "forkjoin.merge-probe")
    assert.isUndefined(failed.signature)
    assert.strictEqual(Evidence.parse("/e.json", JSON.stringify(failed))._tag, "Ok")
  })
})

describe("Evidence.sign and verify", () => {
  it("signed evidence verifies with its key and fails with another", () => {
    const pair = Keys.generate()
    const other = Keys.generate()
    const e = signed(evidenceFor(tempDir()), pair.privatePem)
    assert.strictEqual(e.signature?.alg, "ed25519")
    assert.strictEqual(e.signature?.keyId, pair.keyId)
    assert.isTrue(Evidence.verify(e, createPublicKey(pair.publicPem)))
    assert.isFalse(Evidence.verify(e, createPublicKey(other.publicPem)))
    // Another key's signature relabelled with this key's id does not verify either.
    const forged = signed(e, other.privatePem)
    assert.isFalse(Evidence.verify({ ...forged, signature: { ...forged.signature!, keyId: pair.keyId } }, createPublicKey(pair.publicPem)))
  })

  it("a signature over another digest does not verify", () => {
    const pair = Keys.generate()
    const e = signed(evidenceFor(tempDir()), pair.privatePem)
    const edited = { ...e, status: "failed" as const }
    const recomputed = { ...edited, digest: Evidence.digestOf(edited) }
    assert.isFalse(Evidence.verify(recomputed, createPublicKey(pair.publicPem)))
    assert.isFalse(Evidence.verify({ ...e, signature: { ...e.signature!, value: "AAAA" } }, createPublicKey(pair.publicPem)))
  })

  it("signing needs an Ed25519 private key", () => {
    const e = evidenceFor(tempDir())
    const pair = Keys.generate()
    assert.isTrue(Result.isFailure(Evidence.sign(e, createPublicKey(pair.publicPem))))
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 }).privateKey
    const r = Evidence.sign(e, rsa)
    assert.isTrue(Result.isFailure(r) && r.failure.code === "key_invalid")
  })

  it("sign recomputes the digest from the content", () => {
    const e = evidenceFor(tempDir())
    const s = signed({ ...e, digest: `sha256:${"0".repeat(64)}` as ProbeEvidence["digest"] }, Keys.generate().privatePem)
    assert.strictEqual(s.digest, e.digest)
  })
})

describe("Evidence.read refusals", () => {
  it.effect("missing", () =>
    Effect.gen(function*() {
      const file = path.join(tempDir(), "none.json")
      assert.deepStrictEqual(yield* Evidence.read(file), { _tag: "Missing", path: file })
    }))

  it.effect("write then read round-trips, atomically (no temp file left)", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const e = signed(evidenceFor(dir), Keys.generate().privatePem)
      const file = path.join(dir, "deep", "evidence", "merge-probe.json")
      yield* Evidence.write(file, e)
      assert.deepStrictEqual(yield* Evidence.read(file), { _tag: "Ok", path: file, evidence: e })
      assert.deepStrictEqual(fs.readdirSync(path.dirname(file)), ["merge-probe.json"])
    }))

  it.effect("write into a place that cannot hold it is evidence_unwritable", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      fs.writeFileSync(path.join(dir, "blocker"), "")
      const e = yield* Effect.flip(Evidence.write(path.join(dir, "blocker", "e.json"), evidenceFor(dir)))
      assert.strictEqual(e.code, "evidence_unwritable")
      assert.include(e.message, "cannot write the evidence to")
    }))

  it("an edited status is a digest mismatch and an inconsistency", () => {
    const e = evidenceFor(tempDir(), { scenarios: passingScenarios().map((s, i) => i === 0 ? { ...s, status: "failed", assertions: [{ name: "holds", passed: false }] } : s) })
    const r = invalidOf(Evidence.parse("/e.json", JSON.stringify({ ...e, status: "passed" })))
    assert.strictEqual(r.reason, "digest_mismatch")
    assert.include(r.problems[0]!, "the digest does not match the content")
    assert.include(r.problems.join("\n"), "$.status: the evidence says passed but its scenarios say failed")
  })

  it("an edited scenario status with a recomputed digest is still inconsistent", () => {
    const e = evidenceFor(tempDir())
    const scenarios = e.scenarios.map((s, i) => i === 2 ? { ...s, assertions: [{ name: "holds", passed: false }] } : s)
    const edited = { ...e, scenarios }
    const r = invalidOf(Evidence.parse("/e.json", JSON.stringify({ ...edited, digest: Evidence.digestOf(edited) })))
    assert.strictEqual(r.reason, "inconsistent")
    assert.include(r.problems[0]!, `$.scenarios[2].status: scenario "${e.scenarios[2]!.id}" says passed but its assertions say failed`)
  })

  it("an edited digest", () => {
    const e = evidenceFor(tempDir())
    const r = invalidOf(Evidence.parse("/e.json", JSON.stringify({ ...e, digest: `sha256:${"ab".repeat(32)}` })))
    assert.strictEqual(r.reason, "digest_mismatch")
    assert.include(r.problems[0]!, "recorded sha256:abababababab…")
  })

  it("a truncated file", () => {
    const text = JSON.stringify(evidenceFor(tempDir()), null, 2)
    const r = invalidOf(Evidence.parse("/e.json", text.slice(0, Math.floor(text.length / 2))))
    assert.strictEqual(r.reason, "truncated")
    assert.include(r.problems[0]!, "the file ends early")
    assert.strictEqual(invalidOf(Evidence.parse("/e.json", "")).reason, "truncated")
  })

  it("not JSON", () => {
    const r = invalidOf(Evidence.parse("/e.json", "schemaVersion: 1\n"))
    assert.strictEqual(r.reason, "not_json")
    assert.include(r.problems[0]!, "the file is not JSON (line 1, column 1")
  })

  it("a syntax error says its line and column", () => {
    const r = invalidOf(Evidence.parse("/e.json", "{\n  \"schemaVersion\": 2\n    \"kind\": \"forkjoin.merge-probe\"\n}\n"))
    assert.strictEqual(r.reason, "not_json")
    assert.include(r.problems[0]!, "the file is not JSON (line 3, column 5: expected ',' or '}', found '\"')")
  })

  it("wrong schema: every problem with its JSON path", () => {
    const e = evidenceFor(tempDir())
    const broken = { ...e, filesystem: { ...e.filesystem, symlinks: "yes" }, scenarios: [{ ...e.scenarios[0], status: "ok" }], extra: 1 }
    const r = invalidOf(Evidence.parse("/e.json", JSON.stringify(broken)))
    assert.strictEqual(r.reason, "schema")
    const all = r.problems.join("\n")
    assert.include(all, "$.filesystem.symlinks:")
    assert.include(all, "$.scenarios[0].status:")
    assert.include(all, "$.extra:")
  })

  it("another schemaVersion or kind says so", () => {
    const e = evidenceFor(tempDir())
    const v3 = invalidOf(Evidence.parse("/e.json", JSON.stringify({ ...e, schemaVersion: 3 })))
    assert.strictEqual(v3.reason, "schema")
    assert.include(v3.problems[0]!, "$.schemaVersion is 3; this build reads evidence schemaVersion 2")
    const other = invalidOf(Evidence.parse("/e.json", JSON.stringify({ ...e, kind: "something-else" })))
    assert.include(other.problems[0]!, "this is not merge-probe evidence")
    assert.strictEqual(invalidOf(Evidence.parse("/e.json", "[1, 2]")).reason, "schema")
  })

  it("a scenario listed twice", () => {
    const e = evidenceFor(tempDir())
    const twice = { ...e, scenarios: [...e.scenarios, e.scenarios[0]!] }
    const r = invalidOf(Evidence.parse("/e.json", JSON.stringify({ ...twice, digest: Evidence.digestOf(twice) })))
    assert.include(r.problems[0]!, "appears twice")
  })

  it.effect("an unreadable file is invalid, not missing", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const file = path.join(dir, "blocker", "e.json")
      fs.writeFileSync(path.join(dir, "blocker"), "")
      const r = invalidOf(yield* Evidence.read(file))
      assert.strictEqual(r.reason, "unreadable")
      assert.include(r.problems[0]!, "ENOTDIR")
    }))
})

describe("Evidence.statementOf: what a signature covers", () => {
  const pair = Keys.generate()
  const publicKey = createPublicKey(pair.publicPem)
  const signer = { alg: "ed25519", keyId: pair.keyId } as const

  it("two runs of one build: equal digests, statements that differ in createdAt", () => {
    const dir = tempDir()
    const first = evidenceFor(dir, { ageMs: 3_600_000 })
    const second = evidenceFor(dir, { ageMs: 60_000 })
    assert.strictEqual(second.digest, first.digest)
    const a = JSON.parse(Evidence.statementOf(first, signer))
    const b = JSON.parse(Evidence.statementOf(second, signer))
    assert.notDeepEqual(a, b)
    assert.strictEqual(a.evidence.createdAt, first.createdAt)
    assert.strictEqual(b.evidence.createdAt, second.createdAt)
    assert.deepStrictEqual({ ...a, evidence: { ...a.evidence, createdAt: second.createdAt } }, b)
  })

  it("a signature breaks when any field is edited, createdAt and timings included", () => {
    const e = signed(evidenceFor(tempDir(), { ageMs: 30 * 86_400_000 }), pair.privatePem)
    assert.isTrue(Evidence.verify(e, publicKey))
    const edits: ReadonlyArray<readonly [string, ProbeEvidence]> = [
      ["createdAt made fresh", { ...e, createdAt: utcTimestampFromMillis(Date.parse(e.createdAt) + 29 * 86_400_000) }],
      ["durationMs", { ...e, durationMs: e.durationMs + 1 }],
      ["a scenario's durationMs", { ...e, scenarios: e.scenarios.map((s, i) => (i === 0 ? { ...s, durationMs: s.durationMs + 1 } : s)) }],
      ["the fingerprint", { ...e, fingerprint: { ...e.fingerprint, version: "9.9.9" } }],
      ["a filesystem fact", { ...e, filesystem: { ...e.filesystem, caseSensitive: !e.filesystem.caseSensitive } }],
      ["the status", { ...e, status: "failed" }],
      ["the digest", { ...e, digest: `sha256:${"d".repeat(64)}` as ProbeEvidence["digest"] }]
    ]
    for (const [what, edited] of edits) assert.isFalse(Evidence.verify(edited, publicKey), what)
    // Each edit also holds when the unkeyed digest is recomputed to match.
    for (const [what, edited] of edits.slice(0, 6)) {
      assert.isFalse(Evidence.verify({ ...edited, digest: Evidence.digestOf(edited) }, publicKey), `${what}, digest recomputed`)
    }
  })

  it("a schemaVersion 1 signature (over the bare digest) does not verify as a statement signature", () => {
    const e = evidenceFor(tempDir())
    const key = createPrivateKey(pair.privatePem)
    const old = { ...e, signature: { alg: "ed25519" as const, keyId: pair.keyId, value: signBytes(null, Buffer.from(e.digest, "utf8"), key).toString("base64") } }
    assert.isFalse(Evidence.verify(old, publicKey))
  })
})

describe("Evidence.parse: schemaVersion 1", () => {
  it("signed: refused as outdated, saying to sign again with this build", () => {
    const e = signed(evidenceFor(tempDir()), Keys.generate().privatePem)
    const r = invalidOf(Evidence.parse("/e.json", JSON.stringify({ ...e, schemaVersion: 1 })))
    assert.strictEqual(r.reason, "outdated")
    assert.include(r.problems[0]!, "signed in the old format, whose signature does not cover createdAt")
    assert.include(r.problems[0]!, "re-run `forkjoin probe --sign KEYFILE`")
  })

  it("unsigned: refused as outdated, saying to run the probe with this build", () => {
    const e = evidenceFor(tempDir())
    const r = invalidOf(Evidence.parse("/e.json", JSON.stringify({ ...e, schemaVersion: 1 })))
    assert.strictEqual(r.reason, "outdated")
    assert.include(r.problems[0]!, "written by an older forkjoin; run `forkjoin probe`")
  })
})

describe("Evidence.read: only a regular file of bounded size is read", () => {
  const refusedUnread = (file: string) =>
    Effect.gen(function*() {
      const r = invalidOf(yield* Evidence.read(file))
      assert.strictEqual(r.reason, "not_regular_file", r.problems.join("; "))
      assert.include(r.problems[0]!, "not a regular file, so it was not read")
      return r
    })

  // A blocking open of a pipe without a writer would hang: the suite's test timeout is the only net.
  it.effect("a named pipe without a writer is refused at once", () =>
    Effect.gen(function*() {
      const fifo = path.join(tempDir(), "e.json")
      execFileSync("mkfifo", [fifo])
      const r = yield* refusedUnread(fifo)
      assert.include(r.problems[0]!, "a named pipe (FIFO)")
    }))

  it.effect("a link to a named pipe is refused the same way", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      execFileSync("mkfifo", [path.join(dir, "pipe")])
      fs.symlinkSync("pipe", path.join(dir, "e.json"))
      yield* refusedUnread(path.join(dir, "e.json"))
    }))

  it.effect("/dev/zero and /dev/null are refused unread", () =>
    Effect.gen(function*() {
      for (const device of ["/dev/zero", "/dev/null"]) {
        const r = yield* refusedUnread(device)
        assert.include(r.problems[0]!, "a character device")
      }
    }))

  it.effect("a folder is refused unread", () =>
    Effect.gen(function*() {
      const dir = path.join(tempDir(), "e.json")
      fs.mkdirSync(dir)
      const r = yield* refusedUnread(dir)
      assert.include(r.problems[0]!, "a folder")
    }))

  it.effect("a file over the cap is refused unread; one at the cap is read", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const big = path.join(dir, "big.json")
      fs.writeFileSync(big, "")
      fs.truncateSync(big, Evidence.MAX_EVIDENCE_BYTES + 1)
      const r = invalidOf(yield* Evidence.read(big))
      assert.strictEqual(r.reason, "too_large")
      assert.include(r.problems[0]!, `over the ${Evidence.MAX_EVIDENCE_BYTES} bytes evidence may have`)
      const e = evidenceFor(dir)
      const text = JSON.stringify(e)
      const padded = path.join(dir, "padded.json")
      fs.writeFileSync(padded, text + " ".repeat(Evidence.MAX_EVIDENCE_BYTES - text.length))
      assert.deepStrictEqual(yield* Evidence.read(padded), { _tag: "Ok", path: padded, evidence: e })
    }))
})
