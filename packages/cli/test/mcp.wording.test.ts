/**
 * What `forkjoin mcp` tells a client `resolve_conflict`'s `apply` does (the same description
 * the parent model of `forkjoin agent` reads): the child's side of the conflicting hunks onto
 * the live file, the whole file only for a conflict without hunks.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, makeSandbox, removeSandboxes } from "./helpers.ts"
import { connectMcp } from "./mcpClient.ts"

beforeAll(() => buildCli())
afterAll(removeSandboxes)

describe("resolve_conflict's description", () => {
  it("says apply takes the child's side of the conflicting hunks onto the live file", async () => {
    const { ws } = makeSandbox()
    const client = await connectMcp(ws)
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
