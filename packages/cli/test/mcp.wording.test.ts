/**
 * What `forkjoin mcp` tells a client `resolve_conflict`'s `apply` does (the same description
 * the parent model of `forkjoin agent` reads): the child's side of the conflicting hunks onto
 * the live file, the whole file only for a conflict without hunks.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, buildCli, makeSandbox, removeSandboxes } from "./helpers.ts"

beforeAll(() => buildCli())
afterAll(removeSandboxes)

describe("resolve_conflict's description", () => {
  it("says apply takes the child's side of the conflicting hunks onto the live file", async () => {
    const { ws } = makeSandbox()
    const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined))
    const client = new Client({ name: "wording-test", version: "1.0.0" })
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, "mcp", "--workspace", ws], env, stderr: "pipe" }))
    try {
      const tools = (await client.listTools()).tools
      const description = tools.find((t) => t.name === "resolve_conflict")?.description ?? ""
      expect(description).not.toContain("child's version")
      expect(description).toContain("'apply' takes the child's side of the conflicting hunks onto the live file")
      expect(description).toContain("a conflict without hunks (binary, deleted, added on both sides, moved and edited) takes the child's whole file")
    } finally {
      await client.close()
    }
  })
})
