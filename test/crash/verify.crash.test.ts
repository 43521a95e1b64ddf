/**
 * A verified join killed (real SIGKILL, FORKJOIN_FAULT=verify:after-rollback:1) right after a
 * failed verification rolled a transaction back, before the outcome was recorded: `status`
 * lists the run, and `run --resume` sees the rollback in history and reports the child
 * `verification_failed_rolled_back` (exit 1), never `applied`, without running the command
 * again; the files stay as the rollback left them and every transaction is recorded once. The
 * same for an atomic join, whose one transaction was rolled back. A child committed just before
 * a crash (`merge:after-child:2`) is still verified by the resume.
 */
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, removeSandboxes, runCli } from "../../packages/cli/test/helpers.ts"
import { editTask, makeCase, mergeTransaction, planOf, recordsOf, RunJson } from "../../packages/cli/test/joinHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const StatusJson = Schema.Struct({ interruptedRuns: Schema.Array(Schema.Struct({ runId: Schema.String, pending: Schema.Array(Schema.String) })) })

const files = { "m/a.txt": "a\n", "m/b.txt": "b\n" }
const tasks = [
  editTask("one", ["m/a.txt"], ["*** Update File: m/a.txt", "@@", "-a", "+A"]),
  editTask("two", ["m/b.txt"], ["*** Update File: m/b.txt", "@@", "-b", "+B"])
]

/** Appends a line to `seen` on each run; fails when m/b.txt holds B (so child `two` fails it). */
const verifyOf = (seen: string) => ({
  command: [process.execPath, "-e", "const fs = require('fs'); fs.appendFileSync(process.argv[1], 'ran\\n'); if (fs.readFileSync('m/b.txt', 'utf8').includes('B')) process.exit(3)", seen],
  timeoutMs: 600_000
})

const fileTexts = (ws: string) => Object.fromEntries(Object.keys(files).map((p) => [p, fs.readFileSync(path.join(ws, p), "utf8")]))

/** Runs the plan killed at the fault; returns the run id and what `status` lists as pending. */
const crashed = (atomic: boolean, fault = "verify:after-rollback:1") => {
  const c = makeCase(files, {})
  const seen = path.join(c.outside, "seen")
  fs.writeFileSync(c.planFile, JSON.stringify(planOf(tasks, { atomic, verify: verifyOf(seen) })))
  const killed = runCli(["run", c.planFile, "--workspace", c.ws, "--json"], { env: { FORKJOIN_FAULT: fault } })
  expect(killed.signal, `the fault did not fire (exit ${killed.status}): ${killed.stdout}${killed.stderr}`).toBe("SIGKILL")
  const status = runCli(["status", "--workspace", c.ws, "--json"])
  expect(status.status, status.stderr).toBe(0)
  const [interrupted, ...others] = Schema.decodeUnknownSync(StatusJson)(JSON.parse(status.stdout)).interruptedRuns
  expect(others).toEqual([])
  expect(interrupted).toBeDefined()
  return { c, seen, runId: interrupted!.runId, pending: interrupted!.pending }
}

/** `run --resume`: exit 1 and the decoded line. */
const resume = (ws: string, runId: string) => {
  const r = runCli(["run", "--resume", runId, "--workspace", ws, "--json"])
  expect(r.status, r.stdout + r.stderr).toBe(1)
  return Schema.decodeUnknownSync(RunJson)(JSON.parse(r.stdout))
}

describe("a crash right after a verification rolled a child back", () => {
  it("resume reports verification_failed_rolled_back, not applied, and applies nothing again", () => {
    const { c, pending, runId, seen } = crashed(false)
    expect(pending).toEqual(["two"])
    expect(fileTexts(c.ws)).toEqual({ "m/a.txt": "A\n", "m/b.txt": "b\n" })
    const [one, two] = [mergeTransaction(runId, "one"), mergeTransaction(runId, "two")]
    const records = () => recordsOf(c.ws).map((r) => r.transactionId)
    expect(records()).toEqual([one, two, `rollback:${two}`])

    const out = resume(c.ws, runId)
    expect(out.mergeExecution.status).toBe("partial")
    expect(out.mergeExecution.outcomes.map((o) => [o.childId, o.status, o.transactionId])).toEqual([
      ["one", "applied", one],
      ["two", "verification_failed_rolled_back", two]
    ])
    expect(out.mergeExecution.outcomes[1]!.reason).toMatch(/verification failed.*rolled back.*verify\.log/)
    // The command ran for each child before the crash, and not again.
    expect(fs.readFileSync(seen, "utf8")).toBe("ran\nran\n")
    expect(fileTexts(c.ws)).toEqual({ "m/a.txt": "A\n", "m/b.txt": "b\n" })
    expect(records()).toEqual([one, two, `rollback:${two}`])
    // Nothing left to resume: the same outcomes again, nothing written.
    expect(resume(c.ws, runId).mergeExecution).toEqual(out.mergeExecution)
    expect(records()).toEqual([one, two, `rollback:${two}`])
  })

  // Killed after the child's transaction, before its verification: the resume still verifies it.
  it("a child committed just before a crash is verified by the resume, and rolled back when it fails", () => {
    const { c, pending, runId, seen } = crashed(false, "merge:after-child:2")
    expect(pending).toEqual(["two"])
    expect(fileTexts(c.ws)).toEqual({ "m/a.txt": "A\n", "m/b.txt": "B\n" })
    const out = resume(c.ws, runId)
    expect(out.mergeExecution.outcomes.map((o) => [o.childId, o.status])).toEqual([["one", "applied"], ["two", "verification_failed_rolled_back"]])
    expect(fs.readFileSync(seen, "utf8")).toBe("ran\nran\n")
    expect(fileTexts(c.ws)).toEqual({ "m/a.txt": "A\n", "m/b.txt": "b\n" })
  })

  it("an atomic join: resume reports every child verification_failed_rolled_back", () => {
    const { c, pending, runId, seen } = crashed(true)
    expect(pending).toEqual(["one", "two"])
    expect(fileTexts(c.ws)).toEqual(files)
    const tx = mergeTransaction(runId)
    const out = resume(c.ws, runId)
    expect(out.mergeExecution.status).toBe("failed")
    expect(out.mergeExecution.outcomes.map((o) => [o.childId, o.status, o.transactionId])).toEqual([
      ["one", "verification_failed_rolled_back", tx],
      ["two", "verification_failed_rolled_back", tx]
    ])
    expect(fs.readFileSync(seen, "utf8")).toBe("ran\n")
    expect(fileTexts(c.ws)).toEqual(files)
    expect(recordsOf(c.ws).map((r) => r.transactionId)).toEqual([tx, `rollback:${tx}`])
  })
})
