/**
 * The merge probe, the promotion gate, signed evidence and the autonomy configuration through
 * the CLI as users run them: `forkjoin probe && FORKJOIN_AUTONOMY=safe forkjoin gate`, every
 * refusal with its requirement id and exit code, and `forkjoin run` admitting mutating children
 * only when the gate passed (the decision kept in the run's artifacts and in patch history).
 */
import * as Fingerprint from "@forkjoin/autonomy/Fingerprint"
import Database from "better-sqlite3"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, makeSandbox, removeSandboxes, runCli, workspaceTree, writeTree } from "./helpers.ts"
import { editTask, planOf } from "./joinHelpers.ts"

// The default level: no FORKJOIN_AUTONOMY (runCli would otherwise run at bold).
const supervised = { FORKJOIN_AUTONOMY: "" }
const safe = { FORKJOIN_AUTONOMY: "safe" }
const json = (stdout: string) => JSON.parse(stdout)
const evidenceOf = (ws: string) => path.join(ws, ".forkjoin", "evidence", "merge-probe.json")

let probed: { ws: string; evidence: string; digest: string }

beforeAll(() => {
  buildCli()
  const { ws } = makeSandbox()
  writeTree(ws, { "keep.txt": "the user's file\n" })
  const before = workspaceTree(ws)
  const r = runCli(["probe", "--workspace", ws, "--json"], { env: supervised })
  expect(r.stderr).toBe("")
  expect(r.status).toBe(0)
  const out = json(r.stdout)
  expect(out.ok).toBe(true)
  expect(out.file).toBe(evidenceOf(ws))
  // The probe's scratch workspaces are gone and the user's files are as they were.
  expect(workspaceTree(ws)).toEqual(before)
  expect(fs.readdirSync(path.join(ws, ".forkjoin")).sort()).toEqual([".gitignore", "evidence"])
  probed = { ws, evidence: out.file, digest: out.evidence.digest }
}, 120_000)
afterAll(removeSandboxes)

/** A fresh workspace holding a copy of the probed evidence, edited by `edit` (text in, text out). */
const withEvidence = (edit: (text: string) => string = (t) => t) => {
  const { dir, ws } = makeSandbox()
  fs.mkdirSync(path.dirname(evidenceOf(ws)), { recursive: true })
  fs.writeFileSync(evidenceOf(ws), edit(fs.readFileSync(probed.evidence, "utf8")))
  return { dir, ws }
}

const gate = (ws: string, env: Record<string, string> = safe, ...args: ReadonlyArray<string>) => {
  const r = runCli(["gate", "--workspace", ws, "--json", ...args], { env })
  return { status: r.status, stderr: r.stderr, decision: r.stdout === "" ? undefined : json(r.stdout) }
}

describe("forkjoin probe and forkjoin gate", () => {
  it("probe then FORKJOIN_AUTONOMY=safe gate passes; at the default level the gate is not_applicable and says how to promote", () => {
    const passed = gate(probed.ws)
    expect(passed.status).toBe(0)
    expect(passed.decision).toMatchObject({ status: "passed", level: "safe", missing: [], evidence: { path: probed.evidence, digest: probed.digest } })
    const text = runCli(["gate", "--workspace", probed.ws], { env: supervised })
    expect(text.status).toBe(1)
    expect(text.stdout).toContain("gate: not_applicable (autonomy supervised)")
    expect(text.stdout).toContain("FORKJOIN_AUTONOMY=safe")
    expect(gate(probed.ws, supervised).decision).toMatchObject({ status: "not_applicable", mutatingSubagents: false })
    const bold = gate(probed.ws, { FORKJOIN_AUTONOMY: "bold" })
    expect(bold.status).toBe(0)
    expect(bold.decision.status).toBe("skipped")
    expect(bold.decision.warnings.join(" ")).toMatch(/bold/)
  })

  it("the bundle's fingerprint is the one computed from the sources (evidence is portable between them)", () => {
    const evidence = JSON.parse(fs.readFileSync(probed.evidence, "utf8"))
    expect(evidence.fingerprint).toEqual(Fingerprint.current())
  })

  it("a second probe run of the same build gives the same digest; a broken join fails the matching scenario and the gate", () => {
    const { ws } = makeSandbox()
    const again = json(runCli(["probe", "--workspace", ws, "--json"]).stdout)
    expect(again.evidence.digest).toBe(probed.digest)
    const broken = runCli(["probe", "--workspace", ws], { env: { FORKJOIN_FAULT: "join:skip-baseline" } })
    expect(broken.status).toBe(1)
    expect(broken.stdout).toMatch(/baseline_drift_refused\s+FAILED/)
    expect(broken.stdout).toContain("failed: child b ends baseline_drift")
    expect(broken.stdout).toMatch(/disjoint_children_applied\s+passed/)
    const blocked = gate(ws)
    expect(blocked.status).toBe(1)
    expect(blocked.decision.missing).toEqual(["scenario_failed"])
    expect(blocked.decision.reasons[0].message).toContain("baseline_drift_refused")
  })

  it("refuses tampered evidence: edited status, edited digest, wrong schema, truncated file, missing file", () => {
    const cases: ReadonlyArray<[string, (t: string) => string, string]> = [
      ["edited status", (t) => t.replace(/"status": ?"passed"/, "\"status\":\"failed\""), "evidence_invalid"],
      ["edited digest", (t) => t.replace(/"digest": ?"sha256:[0-9a-f]{4}/, "\"digest\":\"sha256:0000"), "evidence_invalid"],
      ["wrong schema", (t) => t.replace(/"schemaVersion": ?2/, "\"schemaVersion\":3"), "evidence_invalid"],
      ["truncated", (t) => t.slice(0, t.length >> 1), "evidence_invalid"]
    ]
    for (const [what, edit, requirement] of cases) {
      const { ws } = withEvidence(edit)
      const r = gate(ws)
      expect(r.status, what).toBe(1)
      expect(r.decision.status, what).toBe("blocked")
      expect(r.decision.missing, what).toContain(requirement)
    }
    const { ws } = makeSandbox()
    expect(gate(ws).decision.missing).toEqual(["evidence_missing"])
    expect(gate(ws).decision.reasons[0].message).toContain("forkjoin probe")
  })

  it("refuses stale evidence under a configured age, and evidence from another filesystem or build", () => {
    const stale = withEvidence()
    writeTree(stale.ws, { "forkjoin.config.json": JSON.stringify({ gate: { maxEvidenceAge: "1s" } }) })
    // The evidence was made at least a second ago by the time this runs (the probe took seconds).
    expect(gate(stale.ws).decision.missing).toEqual(["evidence_stale"])
    expect(gate(stale.ws, { ...safe, FORKJOIN_EVIDENCE_MAX_AGE: "7d" }).decision.status).toBe("passed")
    // Recomputing the digest is not possible from here; an edited fact shows as an invalid digest
    // AND as the mismatch it claims, both named.
    const otherFs = withEvidence((t) => t.replace(/"type": ?"[^"]+"/, "\"type\":\"ntfs\""))
    expect(gate(otherFs.ws).decision.missing).toEqual(expect.arrayContaining(["evidence_invalid"]))
  })

  it("signed evidence verifies with the trusted key and fails with another; unsigned evidence fails when keys are trusted", () => {
    const { dir, ws } = makeSandbox()
    const ci = path.join(dir, "keys", "ci.pem")
    const made = runCli(["keygen", "--out", ci, "--json"])
    expect(made.status).toBe(0)
    expect(json(made.stdout)).toMatchObject({ ok: true, privateFile: ci, publicFile: `${ci}.pub` })
    expect(fs.statSync(ci).mode & 0o777).toBe(0o600)
    expect(runCli(["keygen", "--out", ci]).status).toBe(2)
    const other = path.join(dir, "keys", "other.pem")
    expect(runCli(["keygen", "--out", other]).status).toBe(0)
    const signed = runCli(["probe", "--workspace", ws, "--sign", ci, "--json"])
    expect(signed.status).toBe(0)
    const evidence = json(signed.stdout).evidence
    expect(evidence.signature).toMatchObject({ alg: "ed25519" })
    expect(evidence.digest).toBe(probed.digest)
    expect(gate(ws, safe, "--trust", `${ci}.pub`).decision.status).toBe("passed")
    expect(gate(ws, safe, "--trust", `${other}.pub`).decision.missing).toEqual(["untrusted_signer"])
    expect(gate(ws, safe, "--trust", `${other}.pub`, "--trust", `${ci}.pub`).decision.status).toBe("passed")
    // Signed by another key than the one it names: the signature does not verify.
    const forged = JSON.parse(fs.readFileSync(evidenceOf(ws), "utf8"))
    const byOther = crypto.sign(null, Buffer.from(forged.digest), crypto.createPrivateKey(fs.readFileSync(other))).toString("base64")
    fs.writeFileSync(evidenceOf(ws), JSON.stringify({ ...forged, signature: { ...forged.signature, value: byOther } }))
    expect(gate(ws, safe, "--trust", `${ci}.pub`).decision.missing).toEqual(["signature_invalid"])
    expect(gate(probed.ws, safe, "--trust", `${ci}.pub`).decision.missing).toEqual(["signature_missing"])
    // A private key given where a public one is expected is a usage error naming the file.
    const wrongKind = gate(ws, safe, "--trust", ci)
    expect(wrongKind.status).toBe(2)
    expect(wrongKind.decision.error.code).toBe("key_invalid")
    expect(wrongKind.decision.error.paths).toEqual([ci])
  })
})

describe("forkjoin config explain and bad settings", () => {
  it("shows every setting with its source; env beats the file, which beats the level's default", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "forkjoin.config.json": JSON.stringify({ autonomy: "safe", mutatingSubagents: "off" }) })
    const explained = json(runCli(["config", "explain", "--workspace", ws, "--json"], { env: supervised }).stdout)
    const setting = (name: string) => explained.settings.find((s: { name: string }) => s.name === name)
    expect(setting("autonomy")).toMatchObject({ value: "safe", source: expect.stringContaining("forkjoin.config.json") })
    expect(setting("mutatingSubagents")).toMatchObject({ value: false, source: expect.stringContaining("forkjoin.config.json") })
    expect(explained.mutatingChildren).toBe("refused")
    const env = json(runCli(["config", "explain", "--workspace", ws, "--json"], { env: { FORKJOIN_AUTONOMY: "bold", FORKJOIN_MUTATING_SUBAGENTS: "yes" } }).stdout)
    expect(env.settings.find((s: { name: string }) => s.name === "autonomy")).toMatchObject({ value: "bold", source: expect.stringContaining("FORKJOIN_AUTONOMY") })
    expect(env.mutatingChildren).toBe("ungated")
    const text = runCli(["config", "explain", "--workspace", ws], { env: supervised })
    expect(text.stdout).toMatch(/autonomy\s+safe\s+.*forkjoin\.config\.json/)
  })

  it("a malformed boolean, an unknown level, a config that is not JSON or has an unknown key: exit 2 naming the culprit", () => {
    const { ws } = makeSandbox()
    const bool = runCli(["gate", "--workspace", ws], { env: { FORKJOIN_MUTATING_SUBAGENTS: "maybe" } })
    expect(bool.status).toBe(2)
    expect(bool.stderr).toContain("error[env_invalid]")
    expect(bool.stderr).toContain("FORKJOIN_MUTATING_SUBAGENTS")
    const level = runCli(["config", "explain", "--workspace", ws], { env: { FORKJOIN_AUTONOMY: "sage" } })
    expect(level.status).toBe(2)
    expect(level.stderr).toContain("FORKJOIN_AUTONOMY")
    writeTree(ws, { "forkjoin.config.json": "{ \"autonomy\": \"safe\", }" })
    const notJson = runCli(["gate", "--workspace", ws, "--json"], { env: supervised })
    expect(notJson.status).toBe(2)
    expect(json(notJson.stdout).error).toMatchObject({ code: "config_invalid", paths: [path.join(ws, "forkjoin.config.json")] })
    writeTree(ws, { "forkjoin.config.json": JSON.stringify({ autonomy: "safe", mutatingSubagent: true }) })
    const unknown = runCli(["config", "explain", "--workspace", ws], { env: supervised })
    expect(unknown.status).toBe(2)
    expect(unknown.stderr).toContain("mutatingSubagent")
    writeTree(ws, { "forkjoin.config.json": JSON.stringify({ mutatingSubagents: "perhaps" }) })
    const fileBool = runCli(["config", "explain", "--workspace", ws], { env: supervised })
    expect(fileBool.status).toBe(2)
    expect(fileBool.stderr).toContain("mutatingSubagents")
  })
})

describe("forkjoin run under the autonomy level", () => {
  const FILES = { "src/a.txt": "a\n" }
  const PLAN = planOf([editTask("edit", ["src"], ["*** Update File: src/a.txt", "@@", "-a", "+A"])])
  const setup = (plan: unknown = PLAN) => {
    const { dir, ws } = makeSandbox()
    writeTree(ws, FILES)
    const planFile = path.join(dir, "plan.json")
    fs.writeFileSync(planFile, JSON.stringify(plan))
    return { dir, ws, planFile }
  }
  const storedGate = (ws: string, runId: string) => {
    const db = new Database(path.join(ws, ".forkjoin", "history.db"), { readonly: true })
    try {
      const row = db.prepare("SELECT run_json FROM merge_runs WHERE run_id = ?").get(runId) as { run_json: string }
      return JSON.parse(row.run_json).gate
    } finally {
      db.close()
    }
  }

  it("at safe, mutating children start only after the gate passed; the decision is kept with the run and in history", () => {
    const { ws, planFile } = setup()
    const before = workspaceTree(ws)
    const refused = runCli(["run", planFile, "--workspace", ws, "--json"], { env: safe })
    expect(refused.status).toBe(1)
    expect(json(refused.stdout).error).toMatchObject({ code: "promotion_gate_blocked" })
    expect(json(refused.stdout).error.message).toContain("evidence_missing")
    expect(workspaceTree(ws)).toEqual(before)
    expect(fs.existsSync(path.join(ws, ".forkjoin", "runs"))).toBe(false)
    fs.mkdirSync(path.dirname(evidenceOf(ws)), { recursive: true })
    fs.copyFileSync(probed.evidence, evidenceOf(ws))
    const ran = runCli(["run", planFile, "--workspace", ws, "--json"], { env: safe })
    expect(ran.status).toBe(0)
    const out = json(ran.stdout)
    expect(out.gate).toMatchObject({ status: "passed", level: "safe" })
    expect(fs.readFileSync(path.join(ws, "src/a.txt"), "utf8")).toBe("A\n")
    const artifact = JSON.parse(fs.readFileSync(path.join(ws, ".forkjoin", "runs", out.runId, "gate.json"), "utf8"))
    expect(artifact).toEqual(out.gate)
    expect(storedGate(ws, out.runId)).toEqual(out.gate)
  })

  it("at bold the gate is skipped with a warning on stderr, in gate.json and in history; at the default level nothing runs", () => {
    const { ws, planFile } = setup()
    const ran = runCli(["run", planFile, "--workspace", ws, "--json"], { env: { FORKJOIN_AUTONOMY: "bold" } })
    expect(ran.status).toBe(0)
    expect(ran.stderr).toContain("warning: Autonomy level bold")
    const out = json(ran.stdout)
    expect(out.gate.status).toBe("skipped")
    expect(storedGate(ws, out.runId).warnings).toEqual(out.gate.warnings)
    const other = setup()
    const before = workspaceTree(other.ws)
    const refused = runCli(["run", other.planFile, "--workspace", other.ws], { env: supervised })
    expect(refused.status).toBe(1)
    expect(refused.stderr).toContain("error[mutating_subagents_not_granted]")
    expect(refused.stderr).toContain("FORKJOIN_AUTONOMY=safe")
    expect(workspaceTree(other.ws)).toEqual(before)
  })

  it("a plan cannot promote itself: autonomy bold in the plan under a supervised configuration runs nothing", () => {
    const { ws, planFile } = setup(planOf([editTask("edit", ["src"], ["*** Update File: src/a.txt", "@@", "-a", "+A"])], { autonomy: "bold" }))
    writeTree(ws, { "forkjoin.config.json": JSON.stringify({ autonomy: "supervised" }) })
    const r = runCli(["run", planFile, "--workspace", ws, "--json"], { env: supervised })
    expect(r.status).toBe(1)
    expect(json(r.stdout).error.code).toBe("mutating_subagents_not_granted")
    expect(fs.readFileSync(path.join(ws, "src/a.txt"), "utf8")).toBe("a\n")
  })
})
