/**
 * `GET /v1/agents` and `GET /v1/agents/{agentId}` through the real server, as an attacker with a
 * token for one thread: after `forkjoin mcp` sessions in threads alpha and beta (the built
 * CLI, the official MCP client), alpha's token lists only alpha's session and beta's only
 * beta's; asking for the other thread's session by its exact id, a prefix of it, or from a
 * child thread's token is the same 404 as a made-up id; a session whose thread is not recorded
 * is nobody's; and what a token sees is `forkjoin agents --json` (one schema), each file named
 * relative to the workspace.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { json as cliJson } from "../../cli/test/helpers.ts"
import { mcpSession } from "../../cli/test/mcpClient.ts"
import { buildCli, call, makeWorkspace, runCli, runCliAsync, type Started, start, tokenFor } from "./support.ts"

let gw: Started
let w: ReturnType<typeof makeWorkspace>
const ids: Record<string, string> = {}
let runId: string

beforeAll(async () => {
  buildCli()
  w = makeWorkspace({ "a.txt": "one\n" })
  runId = (await mcpSession(w.ws, "alpha", { startRun: true }))!
  await mcpSession(w.ws, "beta")
  // A session kept before session records: its thread is not recorded.
  const legacy = path.join(w.ws, ".forkjoin/runs/agent-legacy/parent")
  fs.mkdirSync(legacy, { recursive: true })
  fs.writeFileSync(path.join(legacy, "transcript.json"), JSON.stringify({ schemaVersion: 1, usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0 }, messages: [] }))
  const listed = runCli(["agents", "--workspace", w.ws, "--json"])
  expect(listed.status, listed.stderr).toBe(0)
  for (const s of cliJson(listed.stdout).agents) ids[s.threadId ?? "none"] = s.agentId
  gw = await start({ root: w.ws, pollMs: 50 })
})

afterAll(async () => {
  await gw?.stop()
  fs.rmSync(w.dir, { recursive: true, force: true })
})

describe("agent sessions through the gateway", () => {
  it("a token sees only its thread's sessions, in the schema of forkjoin agents --json", async () => {
    expect(Object.keys(ids).sort()).toEqual(["alpha", "beta", "none"])
    const cli = JSON.parse((await runCliAsync(["agents", "--workspace", w.ws, "--json"], {})).stdout).agents
    for (const thread of ["alpha", "beta"]) {
      const token = (await tokenFor(w.db, thread)).token
      const r = await call(`${gw.url}/v1/agents`, { token })
      expect(r.status, r.text).toBe(200)
      const expected = cli.filter((s: any) => s.threadId === thread).map((s: any) => ({ ...s, transcript: path.relative(w.ws, s.transcript) }))
      expect(r.json).toEqual({ ok: true, agents: expected })
      expect(r.json.agents.map((s: any) => [s.kind, s.client.name])).toEqual([["mcp", `client-${thread}`]])
    }
    expect((await call(`${gw.url}/v1/agents`)).status).toBe(401)
  })

  it("shows its own session in full with the runs it started", async () => {
    const token = (await tokenFor(w.db, "alpha")).token
    const r = await call(`${gw.url}/v1/agents/${ids["alpha"]}`, { token })
    expect(r.status, r.text).toBe(200)
    const cli = JSON.parse((await runCliAsync(["agents", ids["alpha"]!, "--workspace", w.ws, "--json"], {})).stdout)
    expect(r.json).toEqual({ ...cli, agent: { ...cli.agent, session: { ...cli.agent.session, transcript: path.relative(w.ws, cli.agent.session.transcript) } } })
    expect(r.json.agent.toolCalls.map((c: any) => c.name)).toEqual(["apply_patch", "run_subagents"])
    expect(r.json.runs.map((x: any) => [x.runId, x.outcomes.map((o: any) => o.childId)])).toEqual([[runId, ["docs"]]])
  })

  it("another thread's session, by id, by prefix, from a child thread or unrecorded, is the same 404 as a made-up id", async () => {
    const alpha = (await tokenFor(w.db, "alpha")).token
    const child = (await tokenFor(w.db, `${runId}/docs`)).token
    const unknown = await call(`${gw.url}/v1/agents/mcp-00000000-0000-4000-8000-000000000000`, { token: alpha })
    expect(unknown.status).toBe(404)
    const probes = [
      { token: alpha, id: ids["beta"]! },
      { token: alpha, id: ids["beta"]!.slice(0, 12) },
      { token: alpha, id: ids["none"]! },
      { token: child, id: ids["alpha"]! }
    ]
    for (const p of probes) {
      const r = await call(`${gw.url}/v1/agents/${encodeURIComponent(p.id)}`, { token: p.token })
      expect({ id: p.id, status: r.status, tag: r.json?._tag }).toEqual({ id: p.id, status: 404, tag: "NotFound" })
      expect(r.json.message).toBe(`agent session ${p.id} not found`)
      expect(r.text).not.toContain("client-beta")
    }
    // A malformed id is refused from its form alone (it tells nothing about what exists).
    const traversal = await call(`${gw.url}/v1/agents/${encodeURIComponent("../agent-legacy")}`, { token: alpha })
    expect({ status: traversal.status, code: traversal.json?.code }).toEqual({ status: 400, code: "request_invalid" })
    const childList = await call(`${gw.url}/v1/agents`, { token: child })
    expect(childList.json).toEqual({ ok: true, agents: [] })
  })
})
