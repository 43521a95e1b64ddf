/**
 * `forkjoin gc` beside a live run, through the built CLI: a `forkjoin run` whose prompt child
 * is waiting on a loopback model (held by the test until gc has run) is kept as `live` however
 * old its folder looks, in `--json` and in text, and the run then completes with the child
 * applied; the same for `run --export-only`, whose exported changeset stays. After the run's process is SIGKILLed at the same point, nothing holds the run any
 * more: gc collects it at once.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Conversation, type Turn } from "../../drivers/test/support/modelServer.ts"
import { ageFiles, startHeldCli } from "./heldCli.ts"
import { buildCli, makeSandbox, removeSandboxes, runCli, writeTree } from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

/** The plan: one prompt child writing `docs/note.md`. */
const planIn = (dir: string) => {
  const planFile = path.join(dir, "plan.json")
  fs.writeFileSync(planFile, JSON.stringify({ schemaVersion: 1, tasks: [{ id: "docs", mode: "transactional_write", writeScope: ["docs"], prompt: "write docs" }] }))
  return planFile
}

/**
 * Starts `forkjoin run` of the plan against a model that holds the child's first answer until
 * `release` is called; resolves once that request reached the model (the child is running).
 */
const startHeldRun = async (extra: ReadonlyArray<string> = []) => {
  const { dir, ws } = makeSandbox()
  writeTree(ws, { "forkjoin.config.json": JSON.stringify({ models: { model: "test-model" } }) })
  const script = (c: Conversation, hold: (turn: Turn) => Turn): Turn => {
    if (c.turn > 0) return { calls: [{ name: "finish", args: {} }] }
    return hold({ calls: [{ name: "apply_patch", args: { patch: "*** Begin Patch\n*** Add File: docs/note.md\n+by docs\n*** End Patch" } }] })
  }
  const held = await startHeldCli(["run", planIn(dir), "--workspace", ws, "--json", ...extra], script)
  const runs = path.join(ws, ".forkjoin", "runs")
  const names = fs.readdirSync(runs)
  expect(names).toHaveLength(1)
  return { ...held, ws, runId: names[0]!, folder: path.join(runs, names[0]!) }
}

describe("forkjoin gc beside a live run", () => {
  it("keeps a run whose child is still running, however old its folder; the run then completes with the child applied", async () => {
    const run = await startHeldRun()
    try {
      ageFiles(run.folder, 30)
      const asJson = runCli(["gc", "--workspace", run.ws, "--older-than", "1d", "--json"])
      expect(asJson.status, asJson.stderr).toBe(0)
      expect(JSON.parse(asJson.stdout)).toEqual({ ok: true, removed: [], kept: [{ runId: run.runId, reason: "live" }] })
      const asText = runCli(["gc", "--workspace", run.ws, "--older-than", "0s"])
      expect(asText.status, asText.stderr).toBe(0)
      expect(asText.stdout).toContain(`kept ${run.runId}: a forkjoin process is running or resuming it right now; run gc again once it has ended`)
      expect(fs.existsSync(path.join(run.folder, "subagents", "docs"))).toBe(true)
    } finally {
      run.release()
    }
    const ended = await run.ended()
    expect(ended.code, ended.stdout + ended.stderr).toBe(0)
    const out = JSON.parse(ended.stdout)
    expect(out.mergeExecution.outcomes.map((o: { childId: string; status: string }) => [o.childId, o.status])).toEqual([["docs", "applied"]])
    expect(fs.readFileSync(path.join(run.ws, "docs", "note.md"), "utf8")).toBe("by docs\n")

    // Over now: an old enough finished run goes, and its lock with it.
    const after = runCli(["gc", "--workspace", run.ws, "--older-than", "0s", "--json"])
    expect(after.status, after.stderr).toBe(0)
    expect(JSON.parse(after.stdout).removed.map((r: { runId: string }) => r.runId)).toEqual([run.runId])
    expect(fs.readdirSync(path.join(run.ws, ".forkjoin", "locks")).filter((n) => n.endsWith(".lock"))).toEqual([])
  })

  it("keeps a live --export-only run too; its changeset is exported into the folder gc left", async () => {
    const run = await startHeldRun(["--export-only"])
    try {
      ageFiles(run.folder, 30)
      const r = runCli(["gc", "--workspace", run.ws, "--older-than", "0s", "--json"])
      expect(r.status, r.stderr).toBe(0)
      expect(JSON.parse(r.stdout)).toEqual({ ok: true, removed: [], kept: [{ runId: run.runId, reason: "live" }] })
    } finally {
      run.release()
    }
    const ended = await run.ended()
    expect(ended.code, ended.stdout + ended.stderr).toBe(0)
    expect(fs.existsSync(path.join(run.folder, "subagents", "docs", "changeset.json"))).toBe(true)
  })

  it("collects the run once its process was SIGKILLed: nothing holds it any more", async () => {
    const run = await startHeldRun()
    run.kill()
    const ended = await run.ended()
    expect(ended.signal).toBe("SIGKILL")
    const r = runCli(["gc", "--workspace", run.ws, "--older-than", "0s", "--json"])
    expect(r.status, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout)).toEqual({ ok: true, removed: [{ runId: run.runId, bytes: expect.any(Number) }], kept: [] })
    expect(fs.existsSync(run.folder)).toBe(false)
  })
})
