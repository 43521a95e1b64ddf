/**
 * Issue 9 item 1, last part, through the built CLI: every command whose engine ran a startup
 * repair says what it did, on stderr (`forkjoin: repaired after a crash: <action> <txn>: ...`)
 * and, with `--json`, in a `repairs` field (a failure's `{"ok":false,...}` line too); a call
 * with nothing to repair prints neither. The crash is real: a multi-file `apply` SIGKILLed
 * after its second rename (FORKJOIN_FAULT=commit:after-rename:2). One family per test:
 * `apply --json` (succeeding and failing), `run --json` (join and `--export-only`),
 * `rollback`, `conflicts` / `resolve`; `history --help` says its commands repair nothing.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, makeSandbox, patch, removeSandboxes, runCli, writeTree } from "./helpers.ts"
import { editTask, planOf } from "./joinHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const CRASHED = ["crash/f0.txt", "crash/f1.txt", "crash/f2.txt", "crash/f3.txt"]
const pre = (n: string) => `${n}\nold\n`
const post = (n: string) => `${n}\nnew\n`

/**
 * Crashes a four-file `apply` in `ws` after two renames; with `editByHand`, then edits one
 * renamed file so the repair cannot explain it (an `uncertain` outcome).
 */
const crash = (ws: string, editByHand = false): void => {
  writeTree(ws, Object.fromEntries(CRASHED.map((n) => [n, pre(n)])))
  const body = CRASHED.flatMap((n) => [`*** Update File: ${n}`, "@@", ` ${n}`, "-old", "+new"])
  const run = runCli(["apply", "-", "--workspace", ws], { stdin: patch(...body), env: { FORKJOIN_FAULT: "commit:after-rename:2" } })
  expect(run.signal, run.stderr).toBe("SIGKILL")
  const renamed = CRASHED.filter((n) => fs.readFileSync(path.join(ws, n), "utf8") === post(n))
  expect(renamed).toHaveLength(2)
  if (editByHand) fs.writeFileSync(path.join(ws, renamed[0]!), "hand edit\n")
}

interface Outcome {
  readonly action: string
  readonly transactionId: string
  readonly paths: ReadonlyArray<string>
  readonly restored?: ReadonlyArray<string>
  readonly unexplained?: ReadonlyArray<string>
  readonly recordId?: string
}

/** The one outcome of `repairs`, checked against the crashed apply and the stderr notice. */
const expectAnnounced = (repairs: ReadonlyArray<Outcome> | undefined, stderr: string, action: "restored" | "uncertain"): Outcome => {
  expect(repairs, stderr).toHaveLength(1)
  const o = repairs![0]!
  expect(o.action).toBe(action)
  expect(o.transactionId).toMatch(/^patch:/)
  expect([...o.paths].sort()).toEqual(CRASHED)
  expect(stderr).toContain(`forkjoin: repaired after a crash: ${action} ${o.transactionId}: `)
  return o
}

/** The workspace is back at every file's pre-image (a `restored` repair). */
const expectUndone = (ws: string) => {
  for (const n of CRASHED) expect(fs.readFileSync(path.join(ws, n), "utf8"), n).toBe(pre(n))
}

/** Nothing open: no `repairs` key and no notice. */
const expectQuiet = (json: Record<string, unknown>, stderr: string) => {
  expect(json).not.toHaveProperty("repairs")
  expect(stderr).not.toMatch(/repaired after a crash/)
}

/** One `--json` call that must succeed; its parsed line and stderr. */
const ok = (args: ReadonlyArray<string>, stdin?: string) => {
  const run = runCli([...args, "--json"], stdin === undefined ? {} : { stdin })
  expect(run.status, run.stderr + run.stdout).toBe(0)
  // Each test checks the fields it needs.
  const json: any = JSON.parse(run.stdout)
  return { json, stderr: run.stderr }
}

const addPatch = (name: string) => patch(`*** Add File: ${name}`, `+${name}`)

/** A workspace and a plan file beside it (`<dir>/plan.json`). */
const withPlan = (plan: unknown) => {
  const { dir, ws } = makeSandbox()
  const planFile = path.join(dir, "plan.json")
  fs.writeFileSync(planFile, JSON.stringify(plan))
  return { ws, planFile }
}

describe("every command that ran a startup repair says so", () => {
  it("apply --json: repairs beside the record and the notice on stderr; neither on the next apply", () => {
    const { ws } = makeSandbox()
    crash(ws)
    const first = ok(["apply", "-", "--workspace", ws], addPatch("one.txt"))
    expect(Object.keys(first.json)).toEqual(["ok", "record", "repairs"])
    expect(first.json.record.changes.map((c: { path: string }) => c.path)).toEqual(["one.txt"])
    const o = expectAnnounced(first.json.repairs, first.stderr, "restored")
    expect(o.restored).toHaveLength(2)
    expectUndone(ws)

    const second = ok(["apply", "-", "--workspace", ws], addPatch("two.txt"))
    expect(Object.keys(second.json)).toEqual(["ok", "record"])
    expectQuiet(second.json, second.stderr)
  })

  it("a failing apply --json after a repair carries repairs beside the error; the next failure does not", () => {
    const { ws } = makeSandbox()
    crash(ws)
    const bad = patch("*** Update File: crash/f0.txt", "@@", "-no such line", "+x")
    const failed = runCli(["apply", "-", "--workspace", ws, "--json"], { stdin: bad })
    expect(failed.status, failed.stderr).toBe(1)
    const line = JSON.parse(failed.stdout)
    expect(Object.keys(line)).toEqual(["ok", "error", "repairs"])
    expect(line).toMatchObject({ ok: false, error: { code: "context_not_found" } })
    expectAnnounced(line.repairs, failed.stderr, "restored")
    expectUndone(ws)

    const again = runCli(["apply", "-", "--workspace", ws, "--json"], { stdin: bad })
    expect(again.status, again.stderr).toBe(1)
    const quiet = JSON.parse(again.stdout)
    expect(Object.keys(quiet)).toEqual(["ok", "error"])
    expectQuiet(quiet, again.stderr)
  })

  it("run --json, joining and --export-only: repairs in the line and the notice on stderr, before the children", () => {
    const plan = planOf([editTask("docs", ["docs"], ["*** Add File: docs/a.md", "+hi"])])
    const joined = withPlan(plan)
    crash(joined.ws, true)
    const run = ok(["run", joined.planFile, "--workspace", joined.ws])
    expect(run.json.ok).toBe(true)
    const o = expectAnnounced(run.json.repairs, run.stderr, "uncertain")
    // An uncertain outcome names the hand-edited path and how to acknowledge it.
    expect(o.unexplained).toHaveLength(1)
    expect(run.stderr).toContain(`--ack ${o.recordId}`)
    expect(fs.readFileSync(path.join(joined.ws, "docs/a.md"), "utf8")).toBe("hi\n")
    // The next run repairs nothing and says nothing (the uncertain outcome stays for `repair`).
    const again = ok(["run", joined.planFile, "--workspace", joined.ws])
    expectQuiet(again.json, again.stderr)

    const exported = withPlan(plan)
    crash(exported.ws)
    const only = ok(["run", exported.planFile, "--workspace", exported.ws, "--export-only"])
    expect(only.json.results.map((r: { id: string }) => r.id)).toEqual(["docs"])
    expectAnnounced(only.json.repairs, only.stderr, "restored")
    expectUndone(exported.ws)
    expect(fs.existsSync(path.join(exported.ws, "docs"))).toBe(false)
    const quiet = ok(["run", exported.planFile, "--workspace", exported.ws, "--export-only"])
    expectQuiet(quiet.json, quiet.stderr)
  })

  it("rollback: the notice on stderr (text and --json), repairs in --json", () => {
    const { ws } = makeSandbox()
    const one = ok(["apply", "-", "--workspace", ws], addPatch("one.txt")).json.record.transactionId as string
    const two = ok(["apply", "-", "--workspace", ws], addPatch("two.txt")).json.record.transactionId as string
    crash(ws)
    const text = runCli(["rollback", two, "--workspace", ws])
    expect(text.status, text.stderr).toBe(0)
    // Text output shortens the UUID to its first 8 characters.
    expect(text.stdout).toContain(`Rolled back ${two.slice(0, "patch:".length + 8)} `)
    expect(text.stderr).toMatch(/^forkjoin: repaired after a crash: restored patch:/)
    expectUndone(ws)
    expect(fs.existsSync(path.join(ws, "two.txt"))).toBe(false)

    crash(ws)
    const json = ok(["rollback", one, "--workspace", ws])
    expect(json.json.record.links.rollbackOf).toBe(one)
    expectAnnounced(json.json.repairs, json.stderr, "restored")
    expectUndone(ws)
    expect(fs.existsSync(path.join(ws, "one.txt"))).toBe(false)
  })

  it("conflicts and resolve: repairs in --json and the notice on stderr; neither once nothing is open", () => {
    const plan = planOf([
      editTask("first", ["m"], ["*** Update File: m/f.txt", "@@", "-f1", "+F1-first"]),
      editTask("second", ["m"], ["*** Update File: m/f.txt", "@@", "-f1", "+F1-second"])
    ])
    const { ws, planFile } = withPlan(plan)
    writeTree(ws, { "m/f.txt": "f1\nf2\n" })
    const run = runCli(["run", planFile, "--workspace", ws, "--json"])
    expect(run.status, run.stderr).toBe(1)
    const runId = JSON.parse(run.stdout).runId as string
    const conflictId = `${runId}/second:m/f.txt`

    crash(ws)
    const listed = ok(["conflicts", "--workspace", ws])
    expect(listed.json.conflicts.map((c: { conflictId: string }) => c.conflictId)).toEqual([conflictId])
    expectAnnounced(listed.json.repairs, listed.stderr, "restored")
    const quiet = ok(["conflicts", "--workspace", ws])
    expectQuiet(quiet.json, quiet.stderr)

    crash(ws)
    const resolved = ok(["resolve", conflictId, "--discard", "--workspace", ws])
    expect(resolved.json.outcome).toMatchObject({ childId: "second" })
    expectAnnounced(resolved.json.repairs, resolved.stderr, "restored")
    expectUndone(ws)
    expect(fs.readFileSync(path.join(ws, "m/f.txt"), "utf8")).toBe("F1-first\nf2\n")
  })

  it("history --help says its commands read the database as it is and repair nothing", () => {
    const help = runCli(["history", "--help"])
    expect(help.status).toBe(0)
    expect(help.stdout.replace(/\s+/g, " ")).toContain("run 'forkjoin repair' first after a crash")
  })
})
