/**
 * The verified join never reports a success that did not happen, through the built bundle: an
 * atomic join is verified once after its one transaction and rolled back whole when the command
 * fails; a failed verification whose rollback is refused (the command changed the child's file
 * itself) leaves the child `verification_failed`, exit 1, listed by `forkjoin status` until its
 * transaction is rolled back; a command that exits 0 while a background process it started
 * keeps its output open passes, and that process is ended; an interrupted join ends the
 * command's whole group.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { endHolders, holderCase } from "../../../test/support/verifyHolder.ts"
import { BIN, buildCli, removeSandboxes, runCli, runCliAsync, workspaceTree } from "./helpers.ts"
import { cliJson, editTask, makeCase, mergeTransaction, outcomeOf, planOf, recordsOf, RunJson, runJoin, textAt } from "./joinHelpers.ts"
import * as Schema from "effect/Schema"

beforeAll(buildCli)
afterAll(removeSandboxes)
afterEach(endHolders)

/** A check that appends one line per run to `seen` and fails (exit 3) when m/b.txt holds `bad`. */
const failsOn = (bad: string, seen: string) => ({
  command: [
    process.execPath,
    "-e",
    "const fs = require('fs'); fs.appendFileSync(process.argv[1], 'ran\\n'); if (fs.readFileSync('m/b.txt', 'utf8').includes(process.argv[2])) { console.log('m/b.txt holds ' + process.argv[2]); process.exit(3) }",
    seen,
    bad
  ],
  timeoutMs: 600_000
})

describe("an atomic verified join", () => {
  const files = { "m/a.txt": "a\n", "m/b.txt": "b\n" }
  const tasks = [
    editTask("one", ["m/a.txt"], ["*** Update File: m/a.txt", "@@", "-a", "+A"]),
    editTask("two", ["m/b.txt"], ["*** Update File: m/b.txt", "@@", "-b", "+B"])
  ]

  it("a failing command rolls the whole transaction back: every child verification_failed_rolled_back, exit 1", () => {
    const c = makeCase(files, {})
    const seen = path.join(c.outside, "seen")
    fs.writeFileSync(c.planFile, JSON.stringify(planOf(tasks, { atomic: true, verify: failsOn("B", seen) })))
    const before = workspaceTree(c.ws)
    const { out, status, stderr } = runJoin(c)
    expect(status, stderr).toBe(1)
    expect(out.ok).toBe(false)
    expect(out.mergeExecution.status).toBe("failed")
    const tx = mergeTransaction(out.runId)
    expect(out.mergeExecution.outcomes.map((o) => [o.childId, o.status, o.transactionId])).toEqual([
      ["one", "verification_failed_rolled_back", tx],
      ["two", "verification_failed_rolled_back", tx]
    ])
    expect(outcomeOf(out, "two").reason).toMatch(/exit 3.*atomic join's transaction was rolled back.*verify\.log/)
    // Run once, after the one transaction; every file is back byte for byte.
    expect(fs.readFileSync(seen, "utf8")).toBe("ran\n")
    expect(workspaceTree(c.ws)).toEqual(before)
    expect(recordsOf(c.ws).map((r) => [r.transactionId, r.links.rollbackOf])).toEqual([[tx, undefined], [`rollback:${tx}`, tx]])
    expect(fs.readFileSync(path.join(c.ws, ".forkjoin", "runs", out.runId, "verify.log"), "utf8")).toMatch(/m\/b\.txt holds B[\s\S]*exit 3/)
  })

  it("a passing command is run once and the children stay applied", () => {
    const c = makeCase(files, {})
    const seen = path.join(c.outside, "seen")
    fs.writeFileSync(c.planFile, JSON.stringify(planOf(tasks, { atomic: true, verify: failsOn("no such text", seen) })))
    const { out, status, stderr } = runJoin(c)
    expect(status, stderr).toBe(0)
    expect(out.mergeExecution.outcomes.map((o) => o.status)).toEqual(["applied", "applied"])
    expect(fs.readFileSync(seen, "utf8")).toBe("ran\n")
    expect([textAt(c.ws, "m/a.txt"), textAt(c.ws, "m/b.txt")]).toEqual(["A\n", "B\n"])
  })
})

const StatusJson = Schema.Struct({
  verificationFailures: Schema.Array(Schema.Struct({ runId: Schema.String, childId: Schema.String, transactionId: Schema.String }))
})
const statusOf = (ws: string) => {
  const r = cliJson(["status", "--workspace", ws])
  expect(r.status, r.stderr).toBe(0)
  return Schema.decodeUnknownSync(StatusJson)(r.json).verificationFailures
}

describe("a failed verification whose rollback is refused", () => {
  it("leaves the child verification_failed (exit 1), listed by status until its transaction is rolled back", () => {
    // The command fails and turns the child's file into a folder, which no rollback can merge.
    const verify = {
      command: [process.execPath, "-e", "const fs = require('fs'); fs.rmSync('m/a.txt'); fs.mkdirSync('m/a.txt'); process.exit(1)"],
      timeoutMs: 600_000
    }
    const c = makeCase({ "m/a.txt": "a\n" }, planOf([editTask("one", ["m/a.txt"], ["*** Update File: m/a.txt", "@@", "-a", "+A"])], { verify }))
    const { out, status, stderr } = runJoin(c)
    expect(status, stderr).toBe(1)
    expect(out.ok).toBe(false)
    expect(out.mergeExecution.status).toBe("failed")
    const tx = mergeTransaction(out.runId, "one")
    const one = outcomeOf(out, "one")
    expect([one.status, one.transactionId]).toEqual(["verification_failed", tx])
    expect(one.reason).toMatch(/exit 1.*refused \(rollback_drift\).*forkjoin rollback/)
    expect(statusOf(c.ws)).toEqual([{ runId: out.runId, childId: "one", transactionId: tx }])
    // Ids shortened in text, as everywhere.
    expect(runCli(["status", "--workspace", c.ws]).stdout).toMatch(
      /^verification failed for child one of run \S+ and its change is still applied: put its files right, then forkjoin rollback subagent_merge:\S+\/one$/m
    )

    // Put right by hand, then rolled back: no longer listed.
    fs.rmdirSync(path.join(c.ws, "m/a.txt"))
    fs.writeFileSync(path.join(c.ws, "m/a.txt"), "A\n")
    const undone = cliJson(["rollback", tx, "--workspace", c.ws])
    expect(undone.status, undone.stderr).toBe(0)
    expect(textAt(c.ws, "m/a.txt")).toBe("a\n")
    expect(statusOf(c.ws)).toEqual([])
  })
})

describe("a verify command that leaves a background process", () => {
  it("passes when the command exits 0, and the background process is ended", async () => {
    const h = holderCase()
    // sh starts the holder, waits until it is up, and exits 0 while it lives on holding the output pipes.
    const verify = { command: ["sh", "-c", "\"$0\" \"$1\" \"$2\" \"$3\" \"$4\" & read line < \"$3\"; exit 0", ...h.holder], timeoutMs: 600_000 }
    const c = makeCase({ "m/a.txt": "a\n" }, planOf([editTask("one", ["m/a.txt"], ["*** Update File: m/a.txt", "@@", "-a", "+A"])], { verify }))
    const r = await runCliAsync(["run", c.planFile, "--workspace", c.ws, "--json"], {})
    expect(r.status, r.stderr).toBe(0)
    const out = Schema.decodeUnknownSync(RunJson)(JSON.parse(r.stdout))
    expect(out.mergeExecution.outcomes.map((o) => [o.childId, o.status])).toEqual([["one", "applied"]])
    expect(textAt(c.ws, "m/a.txt")).toBe("A\n")
    await h.holderGone()
  })

  it("an interrupted join (Ctrl-C reaches forkjoin, not the command's own group) ends the command's whole group", async () => {
    const h = holderCase()
    const verify = { command: [...h.holder], timeoutMs: 600_000 }
    const c = makeCase({ "m/a.txt": "a\n" }, planOf([editTask("one", ["m/a.txt"], ["*** Update File: m/a.txt", "@@", "-a", "+A"])], { verify }))
    const { FORKJOIN_FAULT: _fault, ...env } = process.env
    const run = spawn(process.execPath, [BIN, "run", c.planFile, "--workspace", c.ws, "--json"], {
      env: { ...env, NO_COLOR: "1", FORKJOIN_AUTONOMY: "bold" },
      stdio: ["ignore", "ignore", "ignore"]
    })
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) => run.on("exit", (code, signal) => resolve(signal ?? code)))
    await h.held
    run.kill("SIGINT")
    await h.holderGone()
    expect(await exited).not.toBe(0)
  })
})
