/**
 * Agent session ids are short ids like run ids, through the built CLI: `forkjoin agents` shows
 * each session's UUID cut to its shortest prefix (at least 8 characters) no other session
 * shares, `--json` keeps whole ids, `forkjoin agents ID` takes any such prefix of at least 4
 * characters of the UUID (`agent-`/`mcp-` kept), a prefix two sessions share is `ambiguous_id`
 * naming both, and an id naming none is not found. Sessions are written as their records
 * (`session.json`), as a session that has not ended yet leaves them.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, json, makeSandbox, removeSandboxes, runCli } from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/

// Two agent sessions whose UUIDs share their first 11 characters, one other agent and one MCP session.
const TWIN_A = "agent-5a5a5a5a-5a10-4000-8000-000000000001"
const TWIN_B = "agent-5a5a5a5a-5a20-4000-8000-000000000002"
const OTHER = "agent-c0ffee00-0000-4000-8000-000000000003"
const MCP = "mcp-d00dfeed-0000-4000-8000-000000000004"

/** Writes the record of session `agentId` (started, not ended) into the workspace's runs folder. */
const writeSession = (ws: string, agentId: string, startedAt: string) => {
  const folder = path.join(ws, ".forkjoin", "runs", agentId)
  fs.mkdirSync(folder, { recursive: true })
  fs.writeFileSync(path.join(folder, "session.json"), JSON.stringify({
    schemaVersion: 1,
    kind: agentId.startsWith("mcp-") ? "mcp" : "agent",
    agentId,
    threadId: "agent",
    provider: null,
    model: null,
    startedAt,
    endedAt: null,
    toolCalls: [],
    runIds: []
  }))
}

const workspace = () => {
  const { ws } = makeSandbox()
  writeSession(ws, TWIN_A, "2026-01-01T00:00:01.000Z")
  writeSession(ws, TWIN_B, "2026-01-01T00:00:02.000Z")
  writeSession(ws, OTHER, "2026-01-01T00:00:03.000Z")
  writeSession(ws, MCP, "2026-01-01T00:00:04.000Z")
  return ws
}

describe("agent session ids are short ids", () => {
  it("the list shows each id cut to its shortest unique prefix, --json whole", () => {
    const ws = workspace()
    const text = runCli(["agents", "--workspace", ws])
    expect(text.status, text.stderr).toBe(0)
    expect(text.stdout).not.toMatch(UUID)
    const shown = text.stdout.split("\n").filter((l) => /^(agent|mcp)-/.test(l)).map((l) => l.split("  ")[0])
    // The twins share 11 characters of their UUID (the hyphen counts): each shows 12; the others the minimum, 8.
    expect(shown).toEqual(["agent-5a5a5a5a-5a1", "agent-5a5a5a5a-5a2", "agent-c0ffee00", "mcp-d00dfeed"])
    expect(json(runCli(["agents", "--workspace", ws, "--json"]).stdout).agents.map((a: { agentId: string }) => a.agentId)).toEqual([
      TWIN_A,
      TWIN_B,
      OTHER,
      MCP
    ])
  })

  it("agents ID takes what the list shows, or 4 characters of the UUID, and says so in its text", () => {
    const ws = workspace()
    for (const [typed, id] of [["agent-5a5a5a5a-5a1", TWIN_A], ["agent-c0ff", OTHER], ["mcp-d00d", MCP], [TWIN_B, TWIN_B]] as const) {
      const r = runCli(["agents", typed, "--workspace", ws, "--json"])
      expect(r.status, `${typed}: ${r.stderr}`).toBe(0)
      expect(json(r.stdout).agent.session.agentId).toBe(id)
    }
    const text = runCli(["agents", "agent-c0ff", "--workspace", ws])
    expect(text.status, text.stderr).toBe(0)
    expect(text.stdout).toMatch(/^agent agent-c0ffee00: running, /)
    // Only the file that keeps it names the whole id (a path).
    expect(text.stdout.split("\n").filter((l) => UUID.test(l)).map((l) => l.split(":")[0])).toEqual(["transcript"])
  })

  it("a prefix two sessions share is ambiguous_id naming both; fewer than 4 characters or an unknown id is not found", () => {
    const ws = workspace()
    const ambiguous = runCli(["agents", "agent-5a5a5a5a", "--workspace", ws])
    expect(ambiguous.status).toBe(1)
    expect(ambiguous.stderr).toMatch(/^error\[ambiguous_id\]: AGENT_ID 'agent-5a5a5a5a' matches 2 agent sessions: /)
    for (const id of [TWIN_A, TWIN_B]) expect(ambiguous.stderr).toContain(id)
    const asJson = json(runCli(["agents", "agent-5a5a", "--workspace", ws, "--json"]).stdout)
    expect(asJson).toMatchObject({ ok: false, error: { code: "ambiguous_id" } })

    // Not a UUID prefix of 4 or more: no session (a literal string prefix names none).
    for (const typed of ["agent-c0f", "agent-", "c0ffee00", "agent-nope"]) {
      const r = runCli(["agents", typed, "--workspace", ws])
      expect(r.status, typed).toBe(2)
      expect(r.stderr).toContain(`no agent session '${typed}' in this workspace; run 'forkjoin agents' to list them (4 here).`)
    }
  })
})
