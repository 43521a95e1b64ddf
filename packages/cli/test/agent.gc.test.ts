/**
 * `forkjoin gc` beside a running `forkjoin agent` session, through the built CLI against a
 * loopback model server: once the session's run is over and the parent waits on its model
 * (held by the test), gc keeps the session's folder (`live`) and the run it started
 * (`live_session`) however old they look, in `--json` and in text; the session then finishes
 * with its run's children's transcripts in place. Once the session is over, or its process was
 * SIGKILLed at the same point, nothing holds them: gc collects both at once. A `forkjoin mcp`
 * connection is live the same way while it is open.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Conversation, type Turn } from "../../drivers/test/support/modelServer.ts"
import { ageFiles, startHeldCli } from "./heldCli.ts"
import { buildCli, json, makeSandbox, patch, removeSandboxes, runCli } from "./helpers.ts"
import { connectMcp, observationOf } from "./mcpClient.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

/**
 * Starts `forkjoin agent` whose parent forks one child (it adds docs/a.md), then holds the
 * parent's next answer until `release`; resolves once that request reached the model (the
 * run is over, the session is not).
 */
const startHeldAgent = async () => {
  const { ws } = makeSandbox()
  const script = (c: Conversation, hold: (turn: Turn) => Turn): Turn => {
    if (c.system.startsWith("You are the parent")) {
      if (c.turn === 0) {
        return { calls: [{ name: "run_subagents", args: { tasks: [{ id: "docs", mode: "transactional_write", writeScope: ["docs"], prompt: "write docs" }] } }] }
      }
      return hold({ calls: [{ name: "finish", args: {} }] })
    }
    if (c.turn > 0) return { calls: [{ name: "finish", args: {} }] }
    return { calls: [{ name: "apply_patch", args: { patch: "*** Begin Patch\n*** Add File: docs/a.md\n+a\n*** End Patch" } }] }
  }
  const held = await startHeldCli(["agent", "write the docs", "--workspace", ws, "--model", "m", "--json"], script)
  const runsDir = path.join(ws, ".forkjoin", "runs")
  const names = fs.readdirSync(runsDir).sort()
  const agentId = names.find((n) => n.startsWith("agent-"))!
  const runId = names.find((n) => !n.startsWith("agent-"))!
  expect(names, "one session folder and the run it started").toEqual([agentId, runId].sort())
  return { ...held, ws, agentId, runId, folders: [path.join(runsDir, agentId), path.join(runsDir, runId)] }
}

const gcJson = (ws: string) => {
  const r = runCli(["gc", "--workspace", ws, "--older-than", "0s", "--json"])
  expect(r.status, r.stderr).toBe(0)
  return JSON.parse(r.stdout)
}

const byRunId = (a: { runId: string }, b: { runId: string }) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0)

describe("forkjoin gc beside a running agent session", () => {
  it("keeps the live session's folder and the run it started, however old; once it ended, both go", async () => {
    const agent = await startHeldAgent()
    try {
      for (const folder of agent.folders) ageFiles(folder, 30)
      expect(gcJson(agent.ws)).toEqual({
        ok: true,
        removed: [],
        kept: [{ runId: agent.agentId, reason: "live" }, { runId: agent.runId, reason: "live_session" }].sort(byRunId)
      })
      const text = runCli(["gc", "--workspace", agent.ws, "--older-than", "0s"])
      expect(text.status, text.stderr).toBe(0)
      expect(text.stdout).toContain(`kept ${agent.agentId}: a forkjoin process is running or resuming it right now`)
      // Text output shortens run ids.
      expect(text.stdout).toContain(`kept ${agent.runId.slice(0, "run-".length + 8)}: the agent session that started it is still running; run gc again once it has ended`)
      // Its process holds it: listed as running (not interrupted).
      expect(json(runCli(["agents", "--workspace", agent.ws, "--json"]).stdout).agents).toEqual([
        expect.objectContaining({ agentId: agent.agentId, status: "running", endedAt: null })
      ])
    } finally {
      agent.release()
    }
    const ended = await agent.ended()
    expect(ended.code, ended.stdout + ended.stderr).toBe(0)
    const out = json(ended.stdout)
    expect(out.agentId).toBe(agent.agentId)
    // The children's transcripts it reports are still there: gc did not take the run's folder.
    for (const t of out.transcripts as ReadonlyArray<string>) expect(fs.existsSync(t), t).toBe(true)
    expect(json(runCli(["agents", "--workspace", agent.ws, "--json"]).stdout).agents).toEqual([
      expect.objectContaining({ agentId: agent.agentId, status: "finished", runIds: [agent.runId] })
    ])

    const after = gcJson(agent.ws)
    expect(after.removed.map((r: { runId: string }) => r.runId)).toEqual([agent.agentId, agent.runId].sort())
    expect(after.kept).toEqual([])
  })

  it("a SIGKILLed session holds nothing: gc collects its folder and its run at once", async () => {
    const agent = await startHeldAgent()
    agent.kill()
    const ended = await agent.ended()
    expect(ended.signal).toBe("SIGKILL")
    const r = gcJson(agent.ws)
    expect(r.removed.map((x: { runId: string }) => x.runId)).toEqual([agent.agentId, agent.runId].sort())
    expect(r.kept).toEqual([])
  })

  it("keeps an open forkjoin mcp session's folder and the run it started; once the client disconnects, both go", async () => {
    const { ws } = makeSandbox()
    const client = await connectMcp(ws, ["--thread", "editor"])
    let runId: string
    let sessionId: string
    try {
      const ran = await client.callTool({
        name: "run_subagents",
        arguments: { tasks: [{ id: "docs", mode: "transactional_write", writeScope: ["docs"], actions: [{ apply_patch: { patch: patch("*** Add File: docs/x.md", "+x") } }, { finish: {} }] }] }
      })
      expect(ran.isError).toBeFalsy()
      runId = observationOf(ran).data.runId
      const runsDir = path.join(ws, ".forkjoin", "runs")
      sessionId = fs.readdirSync(runsDir).find((n) => n.startsWith("mcp-"))!
      for (const name of [sessionId, runId]) ageFiles(path.join(runsDir, name), 30)
      expect(gcJson(ws)).toEqual({
        ok: true,
        removed: [],
        kept: [{ runId: sessionId, reason: "live" }, { runId, reason: "live_session" }].sort(byRunId)
      })
    } finally {
      await client.close()
    }
    // The session has ended (its record says so) once the process is gone: nothing holds the folders.
    const r = gcJson(ws)
    expect(r.removed.map((x: { runId: string }) => x.runId)).toEqual([sessionId, runId].sort())
  })
})
