/**
 * `forkjoin agents` through the built CLI: after a `forkjoin agent` session against a loopback
 * model server, the list shows the session (kind, thread, provider and model, when it started
 * and ended, task, status, steps, tokens, the run it started),
 * `agents ID` shows its tool calls and the run's children, `forkjoin runs` names the session
 * that started the run, and `history threads` the run and session that made each child's
 * thread. Session folders are read only as real folders: a link planted under
 * `.forkjoin/runs` is not followed.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Conversation, startModelServer, type Turn } from "../../drivers/test/support/modelServer.ts"
import { buildCli, json, makeSandbox, removeSandboxes, runCli, runCliAsync, short8 } from "./helpers.ts"

beforeAll(() => buildCli())
afterAll(removeSandboxes)

// The parent forks two writing children, then finishes; each child adds one file.
const forkTwo = (c: Conversation): Turn => {
  if (c.system.startsWith("You are the parent")) {
    if (c.turn === 0) {
      return {
        calls: [{
          name: "run_subagents",
          args: { tasks: ["docs", "src"].map((id) => ({ id, mode: "transactional_write", writeScope: [id], prompt: `write ${id}` })) }
        }],
        usage: { input: 100, output: 20 }
      }
    }
    return { calls: [{ name: "finish", args: {} }], usage: { input: 50, output: 5 } }
  }
  const id = c.task.slice("write ".length)
  if (c.turn === 0) return { calls: [{ name: "apply_patch", args: { patch: `*** Begin Patch\n*** Add File: ${id}/note.md\n+by ${id}\n*** End Patch` } }] }
  return { calls: [{ name: "finish", args: {} }] }
}

describe("forkjoin agents", () => {
  it("lists a forkjoin agent session and shows its steps, tool calls and the run it started", async () => {
    const { outside, ws } = makeSandbox()
    const server = await startModelServer("openai", forkTwo)
    let agent: any
    try {
      const r = await runCliAsync(["agent", "write the docs and the code", "--workspace", ws, "--model", "test-model", "--json"], { OPENAI_BASE_URL: server.url })
      expect(r.status, r.stderr).toBe(0)
      agent = json(r.stdout)
    } finally {
      await server.close()
    }
    // A planted link to a folder outside holding a session-shaped transcript is not a session here.
    fs.mkdirSync(path.join(outside, "parent"))
    fs.copyFileSync(path.join(ws, ".forkjoin/runs", agent.agentId, "parent/transcript.json"), path.join(outside, "parent/transcript.json"))
    fs.symlinkSync(outside, path.join(ws, ".forkjoin/runs/agent-planted"))

    const list = runCli(["agents", "--workspace", ws, "--json"])
    expect(list.status, list.stderr).toBe(0)
    const agents = json(list.stdout).agents
    expect(agents).toHaveLength(1)
    expect(agents[0]).toMatchObject({
      agentId: agent.agentId,
      kind: "agent",
      threadId: "agent",
      provider: "openai",
      model: "test-model",
      startedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      endedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      task: "write the docs and the code",
      status: "finished",
      steps: agent.steps,
      usage: { inputTokens: 150, outputTokens: 25, modelCalls: 2 },
      runIds: [agent.runId]
    })
    const text = runCli(["agents", "--workspace", ws])
    expect(agents[0].startedAt <= agents[0].endedAt).toBe(true)
    expect(text.stdout).toContain(`${short8(agent.agentId)}  agent  openai/test-model  finished  started ${agents[0].startedAt}  `)
    expect(text.stdout).toContain(`  ${agent.steps} step(s)  175 tokens  1 run(s)  "write the docs and the code"\n`)

    // By a unique prefix of its id.
    const shown = runCli(["agents", agent.agentId.slice(0, 14), "--workspace", ws, "--json"])
    expect(shown.status, shown.stderr).toBe(0)
    const detail = json(shown.stdout)
    expect(detail.agent.session.agentId).toBe(agent.agentId)
    expect(detail.agent.toolCalls.map((c: any) => c.name)).toEqual(["run_subagents", "finish"])
    expect(detail.agent.toolCalls[0]).toMatchObject({ ok: true, message: "Joined: docs applied, src applied." })
    expect(detail.runs.map((r: any) => [r.runId, r.status])).toEqual([[agent.runId, "applied"]])
    expect(detail.runs[0].outcomes.map((o: any) => [o.childId, o.status])).toEqual([["docs", "applied"], ["src", "applied"]])
    const showText = runCli(["agents", agent.agentId, "--workspace", ws]).stdout
    expect(showText).toContain("task: write the docs and the code\n")
    expect(showText).toContain("thread: agent\nmodel: openai/test-model\n")
    expect(showText).toMatch(/ {2}1\. run_subagents \{"tasks":.* -> ok: Joined: docs applied, src applied\.\n/)
    expect(showText).toContain(`  ${short8(agent.runId)}  applied  docs applied, src applied\n`)

    // The run and the threads name the session that started them.
    expect(json(runCli(["runs", "--workspace", ws, "--json"]).stdout).runs.map((r: any) => r.agentId)).toEqual([agent.agentId])
    const threads = json(runCli(["history", "threads", "--workspace", ws, "--json"]).stdout)
    expect(threads.origins[`${agent.runId}/docs`]).toEqual({ runId: agent.runId, childId: "docs", agentId: agent.agentId })
    // ... and the whole-workspace timeline has the children's records.
    const timeline = json(runCli(["history", "timeline", "--workspace", ws, "--json"]).stdout)
    expect(timeline.items.map((r: any) => r.threadId)).toEqual([`${agent.runId}/docs`, `${agent.runId}/src`])

    const unknown = runCli(["agents", "agent-nope", "--workspace", ws])
    expect(unknown.status).toBe(2)
    expect(unknown.stderr).toContain("no agent session 'agent-nope' in this workspace; run 'forkjoin agents' to list them (1 here).")
  })

  it("an empty workspace has no sessions and says what records them", () => {
    const { ws } = makeSandbox()
    const r = runCli(["agents", "--workspace", ws])
    expect(r.status).toBe(0)
    expect(r.stdout).toBe("no agent sessions yet: forkjoin agent records one per task, forkjoin mcp one per client connection\n")
    expect(json(runCli(["agents", "--workspace", ws, "--json"]).stdout)).toEqual({ ok: true, agents: [] })
  })
})
