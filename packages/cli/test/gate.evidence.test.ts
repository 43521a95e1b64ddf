/**
 * Signed evidence through the CLI as an attacker edits it: `forkjoin keygen`, `forkjoin probe
 * --sign`, then `forkjoin gate --trust` on the file with one field changed (a stale file's
 * `createdAt` made fresh, the build fingerprint, a filesystem fact) — each blocked with a
 * signature reason — and special files given as `--evidence` (a named pipe without a writer,
 * `/dev/zero`, a folder), refused at once without being read.
 */
import * as Evidence from "@forkjoin/autonomy/Evidence"
import type { ProbeEvidence } from "@forkjoin/schema/Evidence"
import { utcTimestampFromMillis } from "@forkjoin/schema/UtcTimestamp"
import { execFileSync, spawnSync } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Result from "effect/Result"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, buildCli, makeSandbox, removeSandboxes, ROOT, runCli } from "./helpers.ts"

const safe = { FORKJOIN_AUTONOMY: "safe" }
const evidenceOf = (ws: string) => path.join(ws, ".forkjoin", "evidence", "merge-probe.json")
const DAY = 86_400_000

let signed: { key: string; pub: string; text: string; evidence: ProbeEvidence }
let unsigned: ProbeEvidence

beforeAll(() => {
  buildCli()
  const { dir, ws } = makeSandbox()
  const key = path.join(dir, "keys", "ci.pem")
  expect(runCli(["keygen", "--out", key]).status).toBe(0)
  const r = runCli(["probe", "--workspace", ws, "--sign", key, "--json"])
  expect(r.stderr).toBe("")
  expect(r.status).toBe(0)
  const text = fs.readFileSync(evidenceOf(ws), "utf8")
  signed = { key, pub: `${key}.pub`, text, evidence: JSON.parse(text) }
  const plain = makeSandbox()
  expect(runCli(["probe", "--workspace", plain.ws]).status).toBe(0)
  unsigned = JSON.parse(fs.readFileSync(evidenceOf(plain.ws), "utf8"))
}, 240_000)
afterAll(removeSandboxes)

/** `forkjoin gate --trust` on a fresh workspace holding `evidence` as its evidence file. */
const gateOn = (evidence: unknown) => {
  const { ws } = makeSandbox()
  fs.mkdirSync(path.dirname(evidenceOf(ws)), { recursive: true })
  fs.writeFileSync(evidenceOf(ws), typeof evidence === "string" ? evidence : JSON.stringify(evidence, null, 2))
  const r = runCli(["gate", "--workspace", ws, "--trust", signed.pub, "--json"], { env: safe })
  return { status: r.status, decision: JSON.parse(r.stdout) }
}

const reasonOf = (decision: { reasons: ReadonlyArray<{ requirement: string; message: string }> }, requirement: string) =>
  decision.reasons.find((r) => r.requirement === requirement)?.message

/** Signs `evidence` with the keygen'd private key, as `probe --sign` would have when it was made. */
const signWithCiKey = (evidence: ProbeEvidence): ProbeEvidence =>
  Result.getOrThrow(Evidence.sign(evidence, crypto.createPrivateKey(fs.readFileSync(signed.key))))

describe("forkjoin gate on signed evidence", () => {
  it("the untouched signed file passes", () => {
    const r = gateOn(signed.text)
    expect(r.decision.missing).toEqual([])
    expect(r.status).toBe(0)
    expect(r.decision).toMatchObject({ status: "passed", evidence: { signer: signed.evidence.signature!.keyId } })
  })

  it("stale signed evidence whose createdAt is edited to look fresh is blocked with a signature reason", () => {
    // The same run signed 30 days ago: stale, and refused as such.
    const stale = signWithCiKey({ ...signed.evidence, createdAt: utcTimestampFromMillis(Date.parse(signed.evidence.createdAt) - 30 * DAY) })
    expect(gateOn(stale).decision.missing).toEqual(["evidence_stale"])
    // Its createdAt moved back to a fresh time; the digest, which leaves timestamps out, still matches.
    const freshened = { ...stale, createdAt: signed.evidence.createdAt }
    expect(Evidence.digestOf(freshened)).toBe(freshened.digest)
    const r = gateOn(freshened)
    expect(r.status).toBe(1)
    expect(r.decision.status).toBe("blocked")
    expect(r.decision.missing).toEqual(["signature_invalid"])
    expect(reasonOf(r.decision, "signature_invalid")).toContain("a signed field (createdAt")
  })

  it("an edited build fingerprint or filesystem fact is blocked with a signature reason, digest recomputed or not", () => {
    const e = signed.evidence
    const edits: ReadonlyArray<readonly [string, ProbeEvidence]> = [
      ["fingerprint", { ...e, fingerprint: { ...e.fingerprint, version: "0.0.0-other" } }],
      ["filesystem fact", { ...e, filesystem: { ...e.filesystem, symlinks: !e.filesystem.symlinks } }]
    ]
    for (const [what, edited] of edits) {
      for (const variant of [edited, { ...edited, digest: Evidence.digestOf(edited) }]) {
        const r = gateOn(variant)
        expect(r.status, what).toBe(1)
        expect(r.decision.missing, what).toContain("signature_invalid")
        expect(reasonOf(r.decision, "signature_invalid"), what).toContain("was changed after signing")
      }
    }
  })

  it("two probe runs of one build: the same digest, statements that differ in createdAt", () => {
    expect(unsigned.digest).toBe(signed.evidence.digest)
    const signer = signed.evidence.signature!
    const a = JSON.parse(Evidence.statementOf(signed.evidence, signer))
    const b = JSON.parse(Evidence.statementOf(unsigned, signer))
    expect(a.evidence.createdAt).toBe(signed.evidence.createdAt)
    expect(b.evidence.createdAt).toBe(unsigned.createdAt)
    expect(a.evidence.createdAt).not.toBe(b.evidence.createdAt)
    expect(a.evidence.digest).toBe(b.evidence.digest)
  })

  it("schemaVersion 1 signed evidence is refused, saying to sign it again", () => {
    const r = gateOn({ ...signed.evidence, schemaVersion: 1 })
    expect(r.status).toBe(1)
    expect(r.decision.missing).toEqual(["evidence_invalid"])
    expect(reasonOf(r.decision, "evidence_invalid")).toContain("(outdated)")
    expect(reasonOf(r.decision, "evidence_invalid")).toContain("re-run `forkjoin probe --sign KEYFILE`")
  })
})

describe("forkjoin gate --evidence on special files", () => {
  // spawnSync's timeout only keeps a regression from hanging the run (SIGKILL: a process
  // blocked opening the writerless pipe never runs its SIGTERM handler); the assertions are on
  // the answer.
  const gateEvidence = (file: string) => {
    const { ws } = makeSandbox()
    const r = spawnSync(process.execPath, [BIN, "gate", "--workspace", ws, "--evidence", file, "--json"], {
      cwd: ROOT,
      encoding: "utf8",
      timeout: 30_000,
      killSignal: "SIGKILL",
      env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0", ...safe }
    })
    expect(r.signal).toBeNull()
    expect(r.status).toBe(1)
    const decision = JSON.parse(r.stdout)
    expect(decision.missing).toEqual(["evidence_invalid"])
    const reason = reasonOf(decision, "evidence_invalid")!
    expect(reason).toContain("(not_regular_file)")
    expect(reason).toContain("so it was not read")
    return reason
  }

  it("a named pipe with no writer, /dev/zero and a folder are refused at once with not_regular_file", () => {
    const { dir } = makeSandbox()
    const fifo = path.join(dir, "pipe.json")
    execFileSync("mkfifo", [fifo])
    expect(gateEvidence(fifo)).toContain("a named pipe (FIFO)")
    expect(gateEvidence("/dev/zero")).toContain("a character device")
    const folder = path.join(dir, "folder.json")
    fs.mkdirSync(folder)
    expect(gateEvidence(folder)).toContain("a folder")
  }, 120_000)
})
