/**
 * `forkjoin mcp` connections are agent sessions of kind `mcp`: after an MCP client (the
 * official SDK, over stdio) made a few tool calls and started a run, `forkjoin agents` lists the
 * session with its client's name and version from `initialize`, its thread, no model (none is
 * configured), its calls and the run; `forkjoin agents ID` shows each call and the run's
 * children, and `forkjoin runs` names the session that started the run. A session kept before
 * session records existed (a transcript only) still lists, with what it cannot tell as null.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, json, makeSandbox, patch, removeSandboxes, runCli, short8 } from "./helpers.ts"
import { connectMcp, observationOf } from "./mcpClient.ts"

beforeAll(() => buildCli())
afterAll(removeSandboxes)

describe("forkjoin agents lists forkjoin mcp sessions", () => {
  it("with the client, thread, tool calls and the run it started", async () => {
    const { ws } = makeSandbox()
    const client = await connectMcp(ws, ["--thread", "editor"], { name: "session-test", version: "2.3.4" })
    let runId: string
    try {
      expect((await client.callTool({ name: "apply_patch", arguments: { patch: patch("*** Add File: notes.md", "+hello") } })).isError).toBeFalsy()
      expect((await client.callTool({ name: "read_file", arguments: { path: ".git/config" } })).isError).toBe(true)
      const ran = await client.callTool({
        name: "run_subagents",
        arguments: { tasks: [{ id: "docs", mode: "transactional_write", writeScope: ["docs"], actions: [{ apply_patch: { patch: patch("*** Add File: docs/x.md", "+x") } }, { finish: {} }] }] }
      })
      expect(ran.isError).toBeFalsy()
      runId = observationOf(ran).data.runId
    } finally {
      await client.close()
    }

    const list = runCli(["agents", "--workspace", ws, "--json"])
    expect(list.status, list.stderr).toBe(0)
    const agents = json(list.stdout).agents
    expect(agents).toHaveLength(1)
    const s = agents[0]
    expect(s).toMatchObject({
      kind: "mcp",
      threadId: "editor",
      provider: null,
      model: null,
      client: { name: "session-test", version: "2.3.4" },
      task: "",
      status: "ended",
      steps: 3,
      runIds: [runId]
    })
    expect(s.agentId).toMatch(/^mcp-/)
    expect(s.startedAt <= s.endedAt).toBe(true)
    const text = runCli(["agents", "--workspace", ws]).stdout
    expect(text).toContain(`${short8(s.agentId)}  mcp  no model  ended  started ${s.startedAt}  3 step(s)  0 tokens  1 run(s)  client session-test 2.3.4\n`)

    const shown = runCli(["agents", s.agentId, "--workspace", ws, "--json"])
    expect(shown.status, shown.stderr).toBe(0)
    const detail = json(shown.stdout)
    expect(detail.agent.toolCalls.map((c: any) => [c.name, c.ok])).toEqual([["apply_patch", true], ["read_file", false], ["run_subagents", true]])
    expect(detail.agent.toolCalls[1].message).toContain(".git/config")
    expect(detail.runs.map((r: any) => [r.runId, r.status, r.outcomes.map((o: any) => o.childId)])).toEqual([[runId, "applied", ["docs"]]])
    const showText = runCli(["agents", s.agentId, "--workspace", ws]).stdout
    expect(showText).toContain(`mcp ${short8(s.agentId)}: ended, started ${s.startedAt}, ended ${s.endedAt}\nthread: editor\nmodel: no model\nclient: session-test 2.3.4\n`)
    expect(showText).toContain(`  ${short8(runId)}  applied  docs applied\n`)

    expect(json(runCli(["runs", "--workspace", ws, "--json"]).stdout).runs.map((r: any) => [r.run.runId, r.agentId])).toEqual([[runId, s.agentId]])
  })

  it("a session kept before session records (its transcript only) still lists, its model and thread not recorded", () => {
    const { ws } = makeSandbox()
    const parent = path.join(ws, ".forkjoin/runs/agent-legacy/parent")
    fs.mkdirSync(parent, { recursive: true })
    fs.writeFileSync(path.join(parent, "transcript.json"), JSON.stringify({
      schemaVersion: 1,
      usage: { inputTokens: 3, outputTokens: 2, modelCalls: 1 },
      messages: [{ role: "system", text: "s" }, { role: "user", text: "old task" }]
    }))
    const agents = json(runCli(["agents", "--workspace", ws, "--json"]).stdout).agents
    expect(agents).toMatchObject([{ agentId: "agent-legacy", kind: "agent", threadId: null, provider: null, model: null, startedAt: null, task: "old task" }])
    expect(runCli(["agents", "--workspace", ws]).stdout).toMatch(/^agent-legacy {2}agent {2}model not recorded {2}ended {2}ended \S+ {2}0 step\(s\) {2}5 tokens {2}0 run\(s\) {2}"old task"\n/)
  })
})
