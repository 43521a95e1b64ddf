/**
 * A task's own check through the built bundle (`forkjoin run`): a child whose check passes is
 * joined; one whose check fails is not (nothing of it reaches the workspace, exit 1), and both
 * checks show in `--json` (`results[].childVerify`), on the recorded outcomes (`forkjoin runs
 * --json`) and in the text output; `forkjoin schema plan` describes the key.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, json, removeSandboxes, runCli } from "./helpers.ts"
import { editTask, makeCase, planOf, textAt } from "./joinHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const FILES = { "src/a.txt": "a\n", "src/b.txt": "b\n" }

/** A check that passes when `file` in its copy reads `want`, printing what it read. */
const expecting = (file: string, want: string) => ({
  command: [process.execPath, "-e", `const t = require('fs').readFileSync(${JSON.stringify(file)}, 'utf8'); console.log('read ' + JSON.stringify(t)); process.exit(t === ${JSON.stringify(want)} ? 0 : 4)`],
  timeoutMs: 600_000
})

const plan = planOf([
  { ...editTask("good", ["src/a.txt"], ["*** Update File: src/a.txt", "@@", "-a", "+A"]), childVerify: expecting("src/a.txt", "A\n") },
  { ...editTask("bad", ["src/b.txt"], ["*** Update File: src/b.txt", "@@", "-b", "+B"]), maxAttempts: 2, childVerify: expecting("src/b.txt", "never\n") }
])

describe("forkjoin run with childVerify", () => {
  it("joins the child whose check passed, leaves out the one whose check failed, and says so in --json", () => {
    const c = makeCase(FILES, plan)
    const r = runCli(["run", c.planFile, "--workspace", c.ws, "--json"])
    expect(r.status, r.stderr).toBe(1)
    const out = json(r.stdout)
    expect(textAt(c.ws, "src/a.txt")).toBe("A\n")
    expect(textAt(c.ws, "src/b.txt")).toBe("b\n")
    const outcome = (id: string) => out.mergeExecution.outcomes.find((o: { childId: string }) => o.childId === id)
    expect(outcome("good").status).toBe("applied")
    expect(outcome("bad").status).toBe("missing_changeset")
    const result = (id: string) => out.results.find((x: { id: string }) => x.id === id)
    const bad = result("bad")
    expect(result("good")).toMatchObject({ status: "finished", childVerify: { status: "passed", attempt: 1, output: ["read \"A\\n\""] } })
    expect(bad).toMatchObject({ status: "check_failed", attempts: 2, childVerify: { status: "failed", attempt: 2, output: ["read \"B\\n\""] } })
    expect(fs.readFileSync(path.join(bad.artifacts, "childVerify.log"), "utf8")).toContain("exit 4")
  })

  it("records each child's check on its outcome, and says the failed check is why nothing of a child was applied", () => {
    const c = makeCase(FILES, plan)
    const ran = json(runCli(["run", c.planFile, "--workspace", c.ws, "--json"]).stdout)
    const listed = runCli(["runs", "--workspace", c.ws, "--json"])
    expect(listed.status, listed.stderr).toBe(0)
    const stored = json(listed.stdout).runs.find((r: { run: { runId: string } }) => r.run.runId === ran.runId).run
    const outcome = (id: string) => stored.outcomes.find((o: { childId: string }) => o.childId === id)
    expect(outcome("good")).toMatchObject({ status: "applied", childVerify: { status: "passed", attempt: 1, output: ["read \"A\\n\""] } })
    expect(outcome("bad")).toMatchObject({ status: "missing_changeset", childVerify: { status: "failed", attempt: 2, output: ["read \"B\\n\""] } })
    expect(outcome("bad").reason).toMatch(/^the child's own check failed after attempt 2, .*the child's check failed \(exit 4\)/)
    expect(outcome("bad").reason).not.toMatch(/did not finish cleanly/)
    // The run's own --json reports the outcomes as recorded.
    expect(ran.mergeExecution.outcomes).toEqual(stored.outcomes)
  })

  it("the text output shows the failed check's ending and output under its child, and the passed check on its row", () => {
    const c = makeCase(FILES, plan)
    const r = runCli(["run", c.planFile, "--workspace", c.ws])
    expect(r.status, r.stderr).toBe(1)
    expect(r.stdout).toMatch(/^ {2}child bad ended check_failed after 2 attempt\(s\)$/m)
    expect(r.stdout).toMatch(/^ {4}check \(attempt 2\): failed: the child's check failed \(exit 4\); its changes were not exported$/m)
    expect(r.stdout).toMatch(/^ {6}\| read "B\\n"$/m)
    expect(r.stdout).toMatch(/^ +check \(attempt 1\): passed: the child's check passed$/m)
  })

  it("forkjoin schema plan describes childVerify", () => {
    const r = runCli(["schema", "plan"])
    expect(r.status, r.stderr).toBe(0)
    const task = JSON.parse(r.stdout)["properties"]["tasks"]["items"]
    expect(JSON.stringify(task["properties"]["childVerify"])).toMatch(/throwaway copy of the workspace/)
  })
})
