/**
 * A child's refused edits through the built bundle (`forkjoin run`): a refusal for its write
 * scope keeps the whole child out (`scope_violation`, exit 1) and is listed in `--json` and in
 * the text table; a refusal the child retried past is listed with its normal status; the text
 * table shows read-only children and a failed verification's reason.
 */
import * as fs from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, removeSandboxes, runCli, workspaceTree } from "./helpers.ts"
import { asFiles, editTask, filesAt, makeCase, mergeTransaction, outcomeOf, planOf, runJoin, textAt } from "./joinHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const FILES = { "src/api/a.ts": "a\n", "src/web/w.ts": "w\n", "README.md": "readme\n" }

/** A child scoped to src/api that edits its own file, then README.md. */
const outside = editTask("api", ["src/api"], ["*** Update File: src/api/a.ts", "@@", "-a", "+A"], ["*** Update File: README.md", "@@", "-readme", "+hijacked"])
const web = editTask("web", ["src/web"], ["*** Update File: src/web/w.ts", "@@", "-w", "+W"])

/** `forkjoin run PLAN` in text mode: exit status and stdout. */
const runText = (c: ReturnType<typeof makeCase>) => {
  const r = runCli(["run", c.planFile, "--workspace", c.ws])
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

describe("refused edits at the join", () => {
  it("a child with an edit refused for its scope is scope_violation, nothing of it applied, its refusals listed; the run exits 1", () => {
    const c = makeCase(FILES, planOf([outside, web]))
    const { status, out } = runJoin(c)
    expect(status).toBe(1)
    expect(out.ok).toBe(false)
    expect(out.mergeExecution.status).toBe("partial")
    const api = outcomeOf(out, "api")
    expect(api.status).toBe("scope_violation")
    expect(api.transactionId).toBeUndefined()
    expect(api.refusals).toEqual([{ step: 2, tool: "apply_patch", path: "README.md", code: "write_scope_violation" }])
    expect(api.reason).toMatch(/README\.md.*write_scope_violation.*nothing of it was applied/)
    expect(outcomeOf(out, "web")).toEqual({ childId: "web", status: "applied", transactionId: mergeTransaction(out.runId, "web") })
    // README.md untouched, and the child's in-scope edit not applied either.
    expect(filesAt(c.ws, ["README.md", "src/api/a.ts"])).toEqual(asFiles({ "README.md": "readme\n", "src/api/a.ts": "a\n" }))
    expect(textAt(c.ws, "src/web/w.ts")).toBe("W\n")
  })

  it("the text table names the refused edit under its child and the run is not finished", () => {
    const c = makeCase(FILES, planOf([outside]))
    const before = workspaceTree(c.ws)
    const r = runText(c)
    expect(r.status, r.stderr).toBe(1)
    expect(r.stdout).toMatch(/^ {2}api +scope_violation +the child's apply_patch README\.md \(write_scope_violation, step 2\)/m)
    expect(r.stdout).toMatch(/^ +refused: apply_patch README\.md \(write_scope_violation, step 2\)$/m)
    expect(r.stdout).toMatch(/not finished/)
    // Only forkjoin's own folder changed.
    const after = workspaceTree(c.ws)
    for (const p of Object.keys(FILES)) expect(after[p]).toEqual(before[p])
  })

  it("a refusal the child retried past keeps its status and is listed", () => {
    // The first patch's context is not in the file (as after a stale read); the retry is right.
    const retried = editTask("retry", ["src/api"], ["*** Update File: src/api/a.ts", "@@", "-not there", "+A"], ["*** Update File: src/api/a.ts", "@@", "-a", "+A"])
    const c = makeCase(FILES, planOf([retried]))
    const { status, stderr, out } = runJoin(c)
    expect(status, stderr).toBe(0)
    expect(outcomeOf(out, "retry")).toEqual({
      childId: "retry",
      status: "applied",
      transactionId: mergeTransaction(out.runId, "retry"),
      refusals: [{ step: 1, tool: "apply_patch", path: "src/api/a.ts", code: "context_not_found" }]
    })
    expect(textAt(c.ws, "src/api/a.ts")).toBe("A\n")
    const text = runText(makeCase(FILES, planOf([retried])))
    expect(text.status, text.stderr).toBe(0)
    // A child's merge transaction is named once, below the table, not on its row.
    expect(text.stdout).toMatch(/^ {2}retry +applied\n +refused: apply_patch src\/api\/a\.ts \(context_not_found, step 1\)$/m)
    expect(text.stdout).toMatch(/^undo a child's merge: forkjoin rollback subagent_merge:run-[0-9a-f]{8}\/<child>$/m)
  })

  it("the text table lists read-only children", () => {
    const c = makeCase(FILES, planOf([
      { id: "look", mode: "read_only", actions: [{ read_file: { path: "README.md" } }, { finish: {} }] },
      web
    ]))
    const r = runText(c)
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/^ {2}look +read_only +finished \(2 actions\), nothing to join$/m)
    expect(r.stdout).toMatch(/^ {2}web +applied$/m)
    // Task order: the read-only child first.
    expect(r.stdout.indexOf("  look")).toBeLessThan(r.stdout.indexOf("  web"))
  })

  it("a failed verification prints its reason in the text table", () => {
    const c = makeCase(FILES, planOf([web], {
      verify: { command: [process.execPath, "-e", "console.log('the web check failed'); process.exit(3)"], timeoutMs: 20000 }
    }))
    const r = runText(c)
    expect(r.status).toBe(1)
    expect(r.stdout).toMatch(/^ {2}web +verification_failed_rolled_back +.*exit 3.*rolled back.*verify\.log/m)
    expect(fs.readFileSync(`${c.ws}/src/web/w.ts`, "utf8")).toBe("w\n")
  })
})
