/**
 * `forkjoin run PLAN.json --export-only` end to end through the built bundle: children
 * stage in overlays and export changesets into their own artifact namespaces, results come in
 * task order, exit codes 0/1/2, and every bad input gets a clear error while the workspace tree
 * (hashed, `.forkjoin/` excluded) stays identical.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startHeldCli } from "./heldCli.ts"
import { buildCli, makeSandbox, removeSandboxes, runCli, workspaceTree, writeTree } from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const patchOf = (...body: ReadonlyArray<string>) => ["*** Begin Patch", ...body, "*** End Patch"].join("\n")

const FILES = { "src/a/x.ts": "x\n", "src/a/y.ts": "y\n", "src/b/z.ts": "z\n", "README.md": "readme\n" }

const setup = (plan: unknown) => {
  const { dir, ws } = makeSandbox()
  writeTree(ws, FILES)
  const planFile = path.join(dir, "plan.json")
  fs.writeFileSync(planFile, typeof plan === "string" ? plan : JSON.stringify(plan))
  return { ws, planFile, before: workspaceTree(ws) }
}

const editTask = (id: string, scope: ReadonlyArray<string>, actions: ReadonlyArray<unknown>) => ({
  id, mode: "transactional_write", writeScope: scope, maxAttempts: 1, timeoutMs: 60000, actions
})

describe("forkjoin run --export-only", () => {
  it("runs children, exports changesets into per-child namespaces, in task order, workspace untouched", () => {
    const plan = {
      schemaVersion: 1,
      autonomy: "bold",
      tasks: [
        editTask("edit-a", ["src/a"], [
          { apply_patch: { patch: patchOf("*** Update File: src/a/x.ts", "@@", "-x", "+X") } },
          { read_file: { path: "src/a/x.ts" } },
          { apply_patch: { patch: patchOf("*** Update File: src/a/y.ts", "*** Move to: src/b/y.ts", "@@", "-y", "+Y") } },
          { apply_patch: { patch: patchOf("*** Delete File: README.md") } },
          { begin_batch: {} },
          { apply_patch: { patch: patchOf("*** Add File: src/a/new.ts", "+new") } },
          { finish: {} }
        ]),
        { id: "ro", mode: "read_only", actions: [{ list_dir: { path: "src" } }, { apply_patch: { patch: patchOf("*** Delete File: README.md") } }, { finish: {} }] },
        editTask("edit-b", ["src/b"], [{ apply_patch: { patch: patchOf("*** Delete File: src/b/z.ts") } }, { finish: {} }])
      ]
    }
    const { ws, planFile, before } = setup(plan)
    const r = runCli(["run", planFile, "--workspace", ws, "--json", "--export-only"])
    // Only the bold level's warning (runCli runs plans at bold): the gate was skipped, and it says so.
    expect(r.stderr).toBe("warning: Autonomy level bold (env FORKJOIN_AUTONOMY): mutating children run without checking probe evidence; the gate was skipped.\n")
    expect(r.status).toBe(0)
    const out = JSON.parse(r.stdout)
    expect(out.results.map((c: any) => [c.id, c.status])).toEqual([["edit-a", "finished"], ["ro", "finished"], ["edit-b", "finished"]])
    const a = out.results[0]
    expect(a.observations.map((s: any) => s.observation.code ?? "ok")).toEqual([
      "ok", "ok", "write_scope_violation", "write_scope_violation", "changeset_batch_control_rejected", "ok", "ok"
    ])
    expect(a.observations[1].observation.data.text).toBe("X\n")
    expect(a.observations[2].observation.data.violatingPaths).toEqual(["src/b/y.ts"])
    expect(a.changeset.entries.map((e: any) => [e.kind, e.path])).toEqual([["add", "src/a/new.ts"], ["update", "src/a/x.ts"]])
    expect(out.results[1].observations[1].observation.code).toBe("analysis_only")
    expect(out.results[1].changeset).toBeUndefined()
    expect(out.results[2].changeset.entries.map((e: any) => [e.kind, e.path])).toEqual([["delete", "src/b/z.ts"]])
    // Artifacts: each child's namespace under the run directory, with trace, changeset and blobs.
    const nsA = path.join(ws, ".forkjoin", "runs", out.runId, "subagents", "edit-a")
    expect(JSON.parse(fs.readFileSync(path.join(nsA, "changeset.json"), "utf8"))).toEqual(a.changeset)
    expect(JSON.parse(fs.readFileSync(path.join(nsA, "trace.json"), "utf8"))).toHaveLength(7)
    for (const h of a.changeset.blobs.hashes) expect(fs.existsSync(path.join(nsA, "blobs", "sha256", h.slice(7)))).toBe(true)
    expect(fs.existsSync(path.join(ws, ".forkjoin", "runs", out.runId, "subagents", "ro", "changeset.json"))).toBe(false)
    expect(workspaceTree(ws)).toEqual(before)
  })

  it("exits 1 when a child does not finish cleanly, and exports nothing for it", () => {
    const { ws, planFile, before } = setup({
      schemaVersion: 1,
      tasks: [editTask("no-finish", ["src/a"], [{ apply_patch: { patch: patchOf("*** Update File: src/a/x.ts", "@@", "-x", "+X") } }])]
    })
    const r = runCli(["run", planFile, "--workspace", ws, "--json", "--export-only"])
    expect(r.status).toBe(1)
    const out = JSON.parse(r.stdout)
    expect(out.results[0].status).toBe("driver_stopped")
    expect(out.results[0].changeset).toBeUndefined()
    expect(workspaceTree(ws)).toEqual(before)
  })

  const bad: ReadonlyArray<[string, unknown, RegExp]> = [
    ["escaping scope", { schemaVersion: 1, tasks: [editTask("t", ["../x"], [])] }, /\$\.tasks\[0\]\.writeScope\[0\].*escapes/],
    ["absolute scope", { schemaVersion: 1, tasks: [editTask("t", ["/etc"], [])] }, /\$\.tasks\[0\]\.writeScope\[0\].*absolute/],
    ["empty scope on a mutating task", { schemaVersion: 1, tasks: [editTask("t", [], [])] }, /\$\.tasks\[0\]\.writeScope.*non-empty/],
    ["scope on a read-only task", { schemaVersion: 1, tasks: [{ id: "t", mode: "read_only", writeScope: ["src"], actions: [] }] }, /\$\.tasks\[0\]\.writeScope.*read_only/],
    ["unknown action name", { schemaVersion: 1, tasks: [editTask("t", ["src"], [{ finish: {} }, { rm_rf: {} }])] }, /\$\.tasks\[0\]\.actions\[1\].*unknown action "rm_rf"/],
    ["wrong type", { schemaVersion: 1, tasks: [{ ...editTask("t", ["src"], []), maxAttempts: "2" }] }, /\$\.tasks\[0\]\.maxAttempts/],
    ["excess property", { schemaVersion: 1, tasks: [{ ...editTask("t", ["src"], []), prompt2: 1 }] }, /\$\.tasks\[0\]\.prompt2/],
    ["bad task id", { schemaVersion: 1, tasks: [editTask("../evil", ["src"], [])] }, /\$\.tasks\[0\]\.id: the id "\.\.\/evil" is refused \(it has a "\.\." segment\)/],
    ["wrong schemaVersion", { schemaVersion: 2, tasks: [] }, /\$\.schemaVersion/],
    ["not JSON", "{ nope", /at \$: not valid JSON/],
    ["a syntax error at line 3", "{\n  \"schemaVersion\": 1\n    \"tasks\": []\n}\n", /at \$: not valid JSON \(line 3, column 5: expected ',' or '\}', found '"'\)/]
  ]
  for (const [name, plan, message] of bad) {
    it(`refuses a plan with ${name} (exit 2, workspace identical)`, () => {
      const { ws, planFile, before } = setup(plan)
      const r = runCli(["run", planFile, "--workspace", ws, "--json", "--export-only"])
      expect(r.status).toBe(2)
      expect(r.stderr).toBe("")
      const { error } = JSON.parse(r.stdout)
      expect(error.code).toBe("usage_invalid")
      expect(error.message).toMatch(message)
      expect(workspaceTree(ws)).toEqual(before)
      expect(fs.existsSync(path.join(ws, ".forkjoin", "runs"))).toBe(false)
    })
  }

  it("--export-only --json says ok like every other command (every child finished)", () => {
    const good = setup({ schemaVersion: 1, tasks: [editTask("t", ["src/a"], [{ finish: {} }])] })
    expect(JSON.parse(runCli(["run", good.planFile, "--workspace", good.ws, "--json", "--export-only"]).stdout).ok).toBe(true)
    const bad = setup({ schemaVersion: 1, tasks: [editTask("t", ["src/a"], [])] })
    const r = runCli(["run", bad.planFile, "--workspace", bad.ws, "--json", "--export-only"])
    expect(r.status).toBe(1)
    expect(JSON.parse(r.stdout).ok).toBe(false)
  })

  it("without --export-only joins the children into the workspace", () => {
    const { ws, planFile } = setup({ schemaVersion: 1, tasks: [editTask("t", ["src/a"], [{ apply_patch: { patch: patchOf("*** Add File: src/a/new.ts", "+n") } }, { finish: {} }])] })
    const r = runCli(["run", planFile, "--workspace", ws, "--json"])
    expect(r.status, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, mergeExecution: { status: "applied", outcomes: [{ childId: "t", status: "applied" }] } })
    expect(fs.readFileSync(path.join(ws, "src/a/new.ts"), "utf8")).toBe("n\n")
  })

  it("refuses mutating children before any starts when the plan's autonomy does not grant them (exit 1)", () => {
    const { ws, planFile, before } = setup({
      schemaVersion: 1,
      autonomy: "supervised",
      tasks: [editTask("t", ["src/a"], [{ apply_patch: { patch: patchOf("*** Add File: src/a/new.ts", "+n") } }, { finish: {} }])]
    })
    const r = runCli(["run", planFile, "--workspace", ws, "--json"])
    expect(r.status).toBe(1)
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, error: { code: "mutating_subagents_not_granted" } })
    expect(workspaceTree(ws)).toEqual(before)
    expect(fs.existsSync(path.join(ws, ".forkjoin", "runs"))).toBe(false)
  })

  it("a child past its timeout ends timed_out (even when its steps never wait) and is joined as missing_changeset", () => {
    const reads = Array.from({ length: 20000 }, () => ({ read_file: { path: "src/a/x.ts" } }))
    const { ws, planFile } = setup({
      schemaVersion: 1,
      tasks: [{ ...editTask("slow", ["src/a"], [...reads, { apply_patch: { patch: patchOf("*** Add File: src/a/late.ts", "+l") } }, { finish: {} }]), timeoutMs: 1 }]
    })
    const r = runCli(["run", planFile, "--workspace", ws, "--json"])
    expect(r.status).toBe(1)
    const out = JSON.parse(r.stdout)
    expect(out.results[0]).toMatchObject({ id: "slow", status: "timed_out" })
    expect(out.mergeExecution.outcomes).toEqual([expect.objectContaining({ childId: "slow", status: "missing_changeset" })])
    expect(fs.existsSync(path.join(ws, "src/a/late.ts"))).toBe(false)
  })

  it("a child's timeout also ends one long action (a 5,000-file patch) instead of waiting for it", () => {
    const files: Record<string, string> = {}
    const body: Array<string> = []
    for (let i = 0; i < 5000; i++) {
      files[`src/big/f${i}.txt`] = `line ${i}\n`
      body.push(`*** Update File: src/big/f${i}.txt`, "@@", `-line ${i}`, `+LINE ${i}`)
    }
    const { ws, planFile } = setup({
      schemaVersion: 1,
      tasks: [{ ...editTask("big", ["src/big"], [{ apply_patch: { patch: patchOf(...body) } }, { finish: {} }]), timeoutMs: 50 }]
    })
    writeTree(ws, files)
    const r = runCli(["run", planFile, "--workspace", ws, "--json", "--export-only"])
    const big = JSON.parse(r.stdout).results[0]
    expect(big).toMatchObject({ id: "big", status: "timed_out" })
    // The patch was cut short, not waited for: an action that ran to its end would have left its
    // observation (the next step boundary would then have ended the child).
    expect(big.observations).toEqual([])
    expect(fs.existsSync(path.join(ws, ".forkjoin", "runs"))).toBe(true)
  })

  it("Ctrl-C during the children interrupts them: exit 130, a message, nothing written", async () => {
    // A prompt child that has staged a file and waits on its model's next answer (held until the
    // process ends): the event is that request reaching the model, not a poll of the run folder.
    const { dir, ws } = makeSandbox()
    writeTree(ws, { ...FILES, "forkjoin.config.json": JSON.stringify({ models: { model: "test-model" } }) })
    const planFile = path.join(dir, "plan.json")
    fs.writeFileSync(planFile, JSON.stringify({ schemaVersion: 1, tasks: [{ id: "slow", mode: "transactional_write", writeScope: ["src/a"], prompt: "write" }] }))
    const before = workspaceTree(ws)
    const held = await startHeldCli(["run", planFile, "--workspace", ws], (c, hold) =>
      c.turn === 0
        ? { calls: [{ name: "apply_patch", args: { patch: patchOf("*** Add File: src/a/late.ts", "+l") } }] }
        : hold({ calls: [{ name: "finish", args: {} }] }))
    expect(fs.existsSync(path.join(ws, ".forkjoin", "runs"))).toBe(true)
    held.kill("SIGINT")
    const ended = await held.ended()
    held.release()
    expect(ended.code, ended.stderr).toBe(130)
    expect(ended.stderr).toContain("forkjoin run was interrupted")
    expect(workspaceTree(ws)).toEqual(before)
  })

  it("the history views list the conflicts a join held back (timeline of the threads, file of the path)", () => {
    const { ws, planFile } = setup({
      schemaVersion: 1,
      tasks: ["one", "two"].map((id) => editTask(id, ["src/a"], [{ apply_patch: { patch: patchOf("*** Update File: src/a/x.ts", "@@", "-x", `+${id}`) } }, { finish: {} }]))
    })
    const run = JSON.parse(runCli(["run", planFile, "--workspace", ws, "--json"]).stdout)
    const expected = [{ conflictId: `${run.runId}/two:src/a/x.ts`, runId: run.runId, childId: "two", path: "src/a/x.ts", status: "open", reason: "overlapping_edits" }]
    expect(JSON.parse(runCli(["history", "timeline", "--workspace", ws, "--descendants", "--json"]).stdout).conflicts).toEqual(expected)
    expect(JSON.parse(runCli(["history", "file", "src/a/x.ts", "--workspace", ws, "--json"]).stdout).conflicts).toEqual(expected)
    expect(JSON.parse(runCli(["history", "file", "src/a/y.ts", "--workspace", ws, "--json"]).stdout).conflicts).toBeUndefined()
    // A caller that cannot see the run's threads does not see its conflicts either.
    expect(JSON.parse(runCli(["history", "timeline", "--workspace", ws, "--thread", "someone-else", "--json"]).stdout).conflicts).toBeUndefined()
  })

  it("an outside edit between the children and the join is baseline_drift, and recorded as a gap", () => {
    const { ws, planFile } = setup({
      schemaVersion: 1,
      tasks: [editTask("t", ["src/a"], [{ apply_patch: { patch: patchOf("*** Update File: src/a/x.ts", "@@", "-x", "+t") } }, { finish: {} }])],
      between: [{ write: { path: "src/a/x.ts", content: "outside\n" } }]
    })
    const r = runCli(["run", planFile, "--workspace", ws, "--json"])
    expect(r.status, r.stderr).toBe(1)
    expect(JSON.parse(r.stdout).mergeExecution.outcomes).toEqual([expect.objectContaining({ childId: "t", status: "baseline_drift", driftPaths: ["src/a/x.ts"] })])
    expect(fs.readFileSync(path.join(ws, "src/a/x.ts"), "utf8")).toBe("outside\n")
    const timeline = runCli(["history", "timeline", "--workspace", ws, "--descendants", "--json"])
    const items = JSON.parse(timeline.stdout).items
    expect(items.map((i: { outcome: string; transactionId: string }) => [i.outcome, i.transactionId.split(":")[0]])).toEqual([["gap", "gap"]])
  })
})
