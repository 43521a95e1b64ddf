/**
 * `forkjoin mcp` with the official MCP TypeScript SDK client spawning the built CLI over
 * stdio: list the tools, apply a patch (recorded in the server's thread), read it back and
 * read history, run subagents (scripted, and prompt tasks with and without a configured
 * model), roll back, and bad requests (unknown tool, wrongly typed arguments, a path outside
 * the workspace) answered with MCP errors or `isError` results while the server keeps serving.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Conversation, startModelServer, type Turn } from "../../drivers/test/support/modelServer.ts"
import { BIN, buildCli, makeSandbox, removeSandboxes, writeTree } from "./helpers.ts"

beforeAll(() => buildCli())
afterAll(removeSandboxes)

const MODEL_VARS = new Set(["OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"])

const connect = async (ws: string, extraArgs: ReadonlyArray<string> = [], env: Record<string, string> = {}) => {
  const inherited = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && !MODEL_VARS.has(e[0])))
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "mcp", "--workspace", ws, ...extraArgs],
    env: { ...inherited, NO_COLOR: "1", FORKJOIN_AUTONOMY: "bold", ...env },
    stderr: "pipe"
  })
  const client = new Client({ name: "forkjoin-test", version: "1.0.0" })
  await client.connect(transport)
  return client
}

/** The observation a tool result carries (its first text content, parsed). */
const observation = (result: any): any => JSON.parse(result.content[0].text)

const patch = (...body: ReadonlyArray<string>) => ["*** Begin Patch", ...body, "*** End Patch"].join("\n")

describe("forkjoin mcp with the official SDK client", () => {
  it("lists the tools with their argument schemas", async () => {
    const { ws } = makeSandbox()
    const client = await connect(ws)
    try {
      const { tools } = await client.listTools()
      expect(tools.map((t) => t.name).sort()).toEqual([
        "apply_patch",
        "gate_decision",
        "history_file",
        "history_timeline",
        "list_dir",
        "read_file",
        "resolve_conflict",
        "rollback_transaction",
        "run_subagents"
      ])
      const apply = tools.find((t) => t.name === "apply_patch")!
      expect(apply.inputSchema).toMatchObject({ type: "object", properties: { patch: { type: "string" } }, required: ["patch"] })
    } finally {
      await client.close()
    }
  })

  it("applies a patch in its thread, reads it back, shows it in history and rolls it back", async () => {
    const { ws } = makeSandbox()
    const client = await connect(ws, ["--thread", "editor"])
    try {
      const applied = await client.callTool({ name: "apply_patch", arguments: { patch: patch("*** Add File: notes/a.md", "+hello") } })
      expect(applied.isError).toBeFalsy()
      const tx = observation(applied).data.transactionId
      expect(fs.readFileSync(path.join(ws, "notes/a.md"), "utf8")).toBe("hello\n")
      const read = await client.callTool({ name: "read_file", arguments: { path: "notes/a.md" } })
      expect(observation(read).data).toMatchObject({ path: "notes/a.md", text: "hello\n" })
      const listed = await client.callTool({ name: "list_dir", arguments: { path: "notes" } })
      expect(JSON.stringify(observation(listed).data.entries)).toContain("a.md")
      const timeline = observation(await client.callTool({ name: "history_timeline", arguments: {} }))
      expect(timeline.ok).toBe(true)
      expect(timeline.data.items.map((r: any) => [r.threadId, r.transactionId])).toEqual([["editor", tx]])
      // A thread id is held to the one id rule here too.
      const badThread: any = await client.callTool({ name: "history_timeline", arguments: { thread: "../x" } })
      expect(badThread.isError).toBe(true)
      expect(badThread.content[0].text).toContain("the id \"../x\" is refused (it has a \"..\" segment)")
      const file = observation(await client.callTool({ name: "history_file", arguments: { path: "notes/a.md" } }))
      expect(file.ok).toBe(true)
      const rolled = await client.callTool({ name: "rollback_transaction", arguments: { transactionId: tx } })
      expect(rolled.isError).toBeFalsy()
      expect(fs.existsSync(path.join(ws, "notes/a.md"))).toBe(false)
      const gate = observation(await client.callTool({ name: "gate_decision", arguments: {} }))
      expect(gate.data).toMatchObject({ status: "skipped", level: "bold" })
    } finally {
      await client.close()
    }
  })

  it("bad requests get MCP errors or isError results, and the server keeps serving", async () => {
    const { ws, outside } = makeSandbox()
    const client = await connect(ws)
    try {
      await expect(client.callTool({ name: "delete_everything", arguments: {} })).rejects.toThrow(/-32602.*not found/)
      // The server answers -32602 (see the raw protocol test below); this SDK client surfaces it as an error result.
      const typed = await client.callTool({ name: "read_file", arguments: { path: 42 } })
      expect(typed).toMatchObject({ isError: true, content: [{ type: "text", text: expect.stringMatching(/^Invalid parameters for tool 'read_file': Expected string/) }] })
      const escaped = await client.callTool({ name: "apply_patch", arguments: { patch: patch("*** Add File: ../outside/x.txt", "+no") } })
      expect(escaped.isError).toBe(true)
      expect(observation(escaped)).toMatchObject({ ok: false, code: "path_outside_roots" })
      expect(fs.readdirSync(outside)).toEqual([])
      const stale = await client.callTool({ name: "apply_patch", arguments: { patch: patch("*** Update File: missing.txt", "@@", "-a", "+b") } })
      expect(stale.isError).toBe(true)
      const bad = await client.callTool({ name: "run_subagents", arguments: { tasks: [{ id: "t", mode: "transactional_write", writeScope: ["/etc"], actions: [] }] } })
      expect(observation(bad)).toMatchObject({ ok: false, code: "invalid_plan" })
      // Still serving.
      const ok = await client.callTool({ name: "apply_patch", arguments: { patch: patch("*** Add File: fine.txt", "+ok") } })
      expect(ok.isError).toBeFalsy()
    } finally {
      await client.close()
    }
  })

  it("on the wire: an unknown tool and wrongly typed arguments are JSON-RPC errors -32602; closing stdin exits 0", async () => {
    const { ws } = makeSandbox()
    const child = spawn(process.execPath, [BIN, "mcp", "--workspace", ws], { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } })
    const lines: Array<any> = []
    let buffer = ""
    const answered = new Promise<void>((resolve) => {
      child.stdout.on("data", (d: Buffer) => {
        buffer += d.toString()
        const parts = buffer.split("\n")
        buffer = parts.pop() ?? ""
        for (const p of parts) if (p.trim() !== "") lines.push(JSON.parse(p))
        if (lines.filter((l) => l.id === 2 || l.id === 3).length === 2) resolve()
      })
    })
    const send = (m: unknown) => child.stdin.write(JSON.stringify(m) + "\n")
    send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } })
    send({ jsonrpc: "2.0", method: "notifications/initialized" })
    send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "nope", arguments: {} } })
    send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "read_file", arguments: { path: 5 } } })
    await answered
    // Closing stdin is the client going away: the server stops serving and exits 0.
    const code = await new Promise<number | null>((resolve) => {
      child.on("close", resolve)
      child.stdin.end()
    })
    expect(code).toBe(0)
    expect(lines.find((l) => l.id === 2).error).toMatchObject({ code: -32602, message: "Tool 'nope' not found" })
    expect(lines.find((l) => l.id === 3).error).toMatchObject({ code: -32602, message: expect.stringMatching(/^Invalid parameters for tool 'read_file'/) })
  })

  it("run_subagents with scripted children joins them; a prompt task without a model is refused with what to configure", async () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "src/a.txt": "one\n" })
    const client = await connect(ws)
    try {
      const ran = await client.callTool({
        name: "run_subagents",
        arguments: {
          tasks: [
            { id: "docs", mode: "transactional_write", writeScope: ["docs"], actions: [{ apply_patch: { patch: patch("*** Add File: docs/x.md", "+x") } }, { finish: {} }] },
            { id: "src", mode: "transactional_write", writeScope: ["src"], actions: [{ apply_patch: { patch: patch("*** Update File: src/a.txt", "@@", "-one", "+two") } }, { finish: {} }] }
          ]
        }
      })
      expect(ran.isError).toBeFalsy()
      expect(observation(ran).data.children.map((c: any) => [c.id, c.status])).toEqual([["docs", "applied"], ["src", "applied"]])
      expect(fs.readFileSync(path.join(ws, "src/a.txt"), "utf8")).toBe("two\n")
      const prompt = await client.callTool({ name: "run_subagents", arguments: { tasks: [{ id: "p", mode: "read_only", prompt: "look around" }] } })
      expect(prompt.isError).toBe(true)
      expect(observation(prompt)).toMatchObject({ ok: false, code: "no_model_configured" })
      expect(observation(prompt).message).toMatch(/no model is configured for openai: pass --model NAME/)
    } finally {
      await client.close()
    }
  })

  it("run_subagents with a prompt task runs it with the configured model", async () => {
    const { ws } = makeSandbox()
    const script = (c: Conversation): Turn =>
      c.turn === 0 ? { calls: [{ name: "apply_patch", args: { patch: patch("*** Add File: gen/out.txt", "+by the model") } }] } : { calls: [{ name: "finish", args: {} }] }
    const server = await startModelServer("openai", script)
    const client = await connect(ws, ["--model", "test-model"], { OPENAI_BASE_URL: server.url })
    try {
      const ran = await client.callTool({ name: "run_subagents", arguments: { tasks: [{ id: "gen", mode: "transactional_write", writeScope: ["gen"], prompt: "write gen/out.txt" }] } })
      expect(observation(ran).data.children).toEqual([expect.objectContaining({ id: "gen", status: "applied" })])
      expect(fs.readFileSync(path.join(ws, "gen/out.txt"), "utf8")).toBe("by the model\n")
      expect(server.requests[0]!.body.messages[1].content).toBe("write gen/out.txt")
    } finally {
      await client.close()
      await server.close()
    }
  })
})
