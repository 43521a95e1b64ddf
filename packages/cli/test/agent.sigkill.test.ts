/**
 * A `forkjoin agent` process killed with SIGKILL mid-run, through the built CLI against a
 * loopback model server: once the parent made a tool call and waits on its next answer (which
 * never comes), or once its child waits on its first, the process is killed. Its session record
 * (`.forkjoin/runs/<agent-id>/session.json`) still reads back, valid JSON of the record schema
 * with no end, and `forkjoin agents` (list and detail, text and `--json`) shows the session as
 * `interrupted` (no end recorded, and no process holds it any more) without failing.
 */
import { AgentSessionRecord } from "@forkjoin/schema/WorkspaceIndex"
import * as Schema from "effect/Schema"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Conversation, startModelServer, type Turn } from "../../drivers/test/support/modelServer.ts"
import { BIN, buildCli, json, makeSandbox, removeSandboxes, ROOT, runCli } from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const decodeRecord = Schema.decodeUnknownSync(Schema.fromJsonString(AgentSessionRecord))

const isParent = (c: Conversation) => c.system.startsWith("You are the parent")

/** Scripts that stall (never answer) at the point the process is killed; `stalled` resolves then. */
const SCRIPTS: ReadonlyArray<readonly [label: string, make: (stalled: () => void) => (c: Conversation) => Turn]> = [
  ["the parent, waiting on its model after a tool call", (stalled) => (c) => {
    if (c.turn === 0) return { calls: [{ name: "apply_patch", args: { patch: "*** Begin Patch\n*** Add File: note.md\n+hi\n*** End Patch" } }] }
    stalled()
    return { stall: true }
  }],
  ["the parent, while its child waits on its model", (stalled) => (c) => {
    if (isParent(c)) {
      return { calls: [{ name: "run_subagents", args: { tasks: [{ id: "docs", mode: "transactional_write", writeScope: ["docs"], prompt: "write docs" }] } }] }
    }
    stalled()
    return { stall: true }
  }]
]

describe("a forkjoin agent killed with SIGKILL mid-run", () => {
  it.each(SCRIPTS)("%s: its session still reads back and lists as not finished", async (_label, make) => {
    const { ws } = makeSandbox()
    let stalled!: () => void
    const reached = new Promise<void>((resolve) => (stalled = resolve))
    const server = await startModelServer("openai", make(() => stalled()))
    const { FORKJOIN_FAULT: _f, OPENAI_API_KEY: _k, ...inherited } = process.env
    const child = spawn(process.execPath, [BIN, "agent", "write the docs", "--workspace", ws, "--model", "m", "--json"], {
      cwd: ROOT,
      env: { ...inherited, NO_COLOR: "1", FORKJOIN_AUTONOMY: "bold", OPENAI_BASE_URL: server.url },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stderr = ""
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, signal) => resolve(signal)))
    try {
      // The event itself: the stalled request reached the server (the session is mid-run).
      await Promise.race([reached, exited.then(() => Promise.reject(new Error(`forkjoin agent ended before the stall: ${stderr}`)))])
      child.kill("SIGKILL")
      expect(await exited).toBe("SIGKILL")
    } finally {
      await server.close()
    }

    const runs = path.join(ws, ".forkjoin", "runs")
    const sessions = fs.readdirSync(runs).filter((n) => n.startsWith("agent-"))
    expect(sessions).toHaveLength(1)
    const agentId = sessions[0]!
    const record = decodeRecord(fs.readFileSync(path.join(runs, agentId, "session.json"), "utf8"))
    expect(record).toMatchObject({ agentId, kind: "agent", threadId: "agent", provider: "openai", model: "m", endedAt: null })

    const list = runCli(["agents", "--workspace", ws, "--json"])
    expect(list.status, list.stderr).toBe(0)
    expect(json(list.stdout).agents.map((a: { agentId: string; status: string; endedAt: unknown }) => [a.agentId, a.status, a.endedAt])).toEqual([
      [agentId, "interrupted", null]
    ])
    const text = runCli(["agents", "--workspace", ws])
    expect(text.status, text.stderr).toBe(0)
    expect(text.stdout).toMatch(/^agent-[0-9a-f]{8} {2}agent {2}openai\/m {2}interrupted {2}started /)
    for (const args of [["agents", agentId], ["agents", agentId, "--json"]]) {
      const shown = runCli([...args, "--workspace", ws])
      expect(shown.status, shown.stderr).toBe(0)
    }
    expect(json(runCli(["agents", agentId, "--workspace", ws, "--json"]).stdout).agent.session).toMatchObject({ agentId, status: "interrupted" })
  })
})
