/**
 * `forkjoin gc` beside a live run, through the built CLI: a `forkjoin run` whose prompt child
 * is waiting on a loopback model (held by the test until gc has run) is kept as `live` however
 * old its folder looks, in `--json` and in text, and the run then completes with the child
 * applied; the same for `run --export-only`, whose exported changeset stays. After the run's process is SIGKILLed at the same point, nothing holds the run any
 * more: gc collects it at once.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Conversation, startModelServer, type Turn } from "../../drivers/test/support/modelServer.ts"
import { BIN, buildCli, makeSandbox, removeSandboxes, ROOT, runCli, writeTree } from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const DAY = 86_400_000

/** The plan: one prompt child writing `docs/note.md`. */
const planIn = (dir: string) => {
  const planFile = path.join(dir, "plan.json")
  fs.writeFileSync(planFile, JSON.stringify({ schemaVersion: 1, tasks: [{ id: "docs", mode: "transactional_write", writeScope: ["docs"], prompt: "write docs" }] }))
  return planFile
}

/** Dates every entry below `dir` (and `dir` itself) back by `days`. */
const ageFiles = (dir: string, days: number) => {
  const at = new Date(Date.now() - days * DAY)
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const abs = path.join(dir, e.name)
    if (e.isDirectory()) ageFiles(abs, days)
    else fs.utimesSync(abs, at, at)
  }
  fs.utimesSync(dir, at, at)
}

/**
 * Starts `forkjoin run` of the plan against a model that holds the child's first answer until
 * `release` is called; resolves once that request reached the model (the child is running).
 */
const startHeldRun = async (extra: ReadonlyArray<string> = []) => {
  const { dir, ws } = makeSandbox()
  writeTree(ws, { "forkjoin.config.json": JSON.stringify({ models: { model: "test-model" } }) })
  let reached!: () => void
  const reachedModel = new Promise<void>((resolve) => (reached = resolve))
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  const script = (c: Conversation): Turn => {
    if (c.turn > 0) return { calls: [{ name: "finish", args: {} }] }
    reached()
    return { later: released.then(() => ({ calls: [{ name: "apply_patch", args: { patch: "*** Begin Patch\n*** Add File: docs/note.md\n+by docs\n*** End Patch" } }] })) }
  }
  const server = await startModelServer("openai", script)
  const { FORKJOIN_FAULT: _f, OPENAI_API_KEY: _k, ...inherited } = process.env
  const child = spawn(process.execPath, [BIN, "run", planIn(dir), "--workspace", ws, "--json", ...extra], {
    cwd: ROOT,
    env: { ...inherited, NO_COLOR: "1", FORCE_COLOR: "0", FORKJOIN_AUTONOMY: "bold", OPENAI_BASE_URL: server.url },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("close", (code, signal) => resolve({ code, signal })))
  await Promise.race([reachedModel, exited.then(() => Promise.reject(new Error(`forkjoin run ended before its child asked the model: ${stdout}${stderr}`)))])
  const runs = path.join(ws, ".forkjoin", "runs")
  const names = fs.readdirSync(runs)
  expect(names).toHaveLength(1)
  return {
    ws,
    runId: names[0]!,
    folder: path.join(runs, names[0]!),
    release,
    kill: () => child.kill("SIGKILL"),
    ended: async () => {
      const r = await exited
      await server.close()
      return { ...r, stdout, stderr }
    }
  }
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
