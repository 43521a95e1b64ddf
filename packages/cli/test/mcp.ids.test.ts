/**
 * Ids given to `forkjoin mcp` as tool arguments (the thread of `history_timeline`, the task ids
 * of `run_subagents`) attacked with the official MCP SDK client over stdio: a traversal
 * (`../x`), an empty id, an empty segment (`a//b`), 300 characters and a NUL are each refused
 * as invalid parameters (JSON-RPC -32602, which the SDK client shows as an error result naming
 * the tool and the id rule) before anything runs; nothing is written and the server keeps serving.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BAD_IDS } from "../../../test/support/badIds.ts"
import { BIN, buildCli, makeSandbox, removeSandboxes } from "./helpers.ts"

beforeAll(() => buildCli())
afterAll(removeSandboxes)

const MODEL_VARS = new Set(["OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"])

const connect = async (ws: string) => {
  const inherited = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && !MODEL_VARS.has(e[0])))
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "mcp", "--workspace", ws, "--thread", "main"],
    env: { ...inherited, NO_COLOR: "1", FORKJOIN_AUTONOMY: "bold" },
    stderr: "pipe"
  })
  const client = new Client({ name: "forkjoin-test", version: "1.0.0" })
  await client.connect(transport)
  return client
}

const patch = (...body: ReadonlyArray<string>) => ["*** Begin Patch", ...body, "*** End Patch"].join("\n")

describe("ids given to forkjoin mcp follow the one id rule", () => {
  it("history_timeline's thread and run_subagents' task ids are refused as invalid parameters, nothing run", async () => {
    const { ws } = makeSandbox()
    const client = await connect(ws)
    try {
      for (const [, id, problem] of BAD_IDS) {
        const timeline: any = await client.callTool({ name: "history_timeline", arguments: { thread: id } })
        expect({ id, isError: timeline.isError, text: timeline.content[0].text }).toEqual({
          id,
          isError: true,
          text: expect.stringMatching(/^Invalid parameters for tool 'history_timeline': /)
        })
        expect(timeline.content[0].text).toContain(`the id ${JSON.stringify(id)} is refused (${problem})`)

        const task = { id, mode: "transactional_write", writeScope: ["made.txt"], actions: [{ apply_patch: { patch: patch("*** Add File: made.txt", "+x") } }, { finish: {} }] }
        const run: any = await client.callTool({ name: "run_subagents", arguments: { tasks: [task] } })
        expect({ id, isError: run.isError, text: run.content[0].text }).toEqual({
          id,
          isError: true,
          text: expect.stringMatching(/^Invalid parameters for tool 'run_subagents': /)
        })
        expect(run.content[0].text).toContain(JSON.stringify(id))
      }
      expect(fs.existsSync(path.join(ws, "made.txt"))).toBe(false)
      // Still serving, and a good id is answered.
      const good: any = await client.callTool({ name: "history_timeline", arguments: { thread: "main" } })
      expect(good.isError).toBeFalsy()
    } finally {
      await client.close()
    }
  })
})
