/**
 * `forkjoin mcp`'s `rollback_transaction` merges like `forkjoin rollback`: `strict: true`
 * refuses a path changed since (`rollback_drift`); without it an overlapping later edit is held
 * (`rollback_conflicted` with the conflict ids, nothing written), another thread's session
 * cannot resolve that conflict (refused as unknown), and the asking thread's `resolve_conflict`
 * applies the whole rollback.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, defaultDb, makeSandbox, patch, readHistory, removeSandboxes, workspaceTree, writeTree } from "./helpers.ts"
import { connectMcp, observationOf } from "./mcpClient.ts"

beforeAll(() => buildCli())
afterAll(removeSandboxes)

const TEN = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"

describe("forkjoin mcp rolls back by merging", () => {
  it("strict refuses, a held rollback is only the asking thread's to resolve, and resolving it applies the rollback", async () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "f.txt": TEN, "g.txt": TEN })
    const a = await connectMcp(ws, ["--thread", "alpha"])
    let tx: string
    let conflictId: string
    try {
      const first = await a.callTool({
        name: "apply_patch",
        arguments: { patch: patch("*** Update File: f.txt", "@@", " 1", "-2", "+two", "*** Update File: g.txt", "@@", " 1", "-2", "+two") }
      })
      tx = observationOf(first).data.transactionId
      await a.callTool({
        name: "apply_patch",
        arguments: { patch: patch("*** Update File: f.txt", "@@", " 8", "-9", "+nine", "*** Update File: g.txt", "@@", " 1", "-two", "+TWO") }
      })
      const strict = await a.callTool({ name: "rollback_transaction", arguments: { transactionId: tx, strict: true } })
      expect(observationOf(strict)).toMatchObject({ ok: false, code: "rollback_drift" })
      const held = await a.callTool({ name: "rollback_transaction", arguments: { transactionId: tx } })
      conflictId = `rollback:${tx}:g.txt`
      expect(observationOf(held)).toMatchObject({ ok: false, code: "rollback_conflicted", data: { paths: ["g.txt"], conflictIds: [conflictId] } })
    } finally {
      await a.close()
    }
    const tree = workspaceTree(ws)
    const records = readHistory(defaultDb(ws)).records.length

    const b = await connectMcp(ws, ["--thread", "beta"])
    try {
      const foreign = await b.callTool({ name: "resolve_conflict", arguments: { conflictId, resolution: "apply" } })
      expect(observationOf(foreign)).toMatchObject({ ok: false, code: "unknown_conflict" })
    } finally {
      await b.close()
    }
    expect(workspaceTree(ws)).toEqual(tree)
    expect(readHistory(defaultDb(ws)).records).toHaveLength(records)

    const again = await connectMcp(ws, ["--thread", "alpha"])
    try {
      const resolved = await again.callTool({ name: "resolve_conflict", arguments: { conflictId, resolution: "apply" } })
      expect(observationOf(resolved)).toMatchObject({ ok: true, data: { transactionId: `rollback:${tx}`, rollbackOf: tx, openConflicts: 0 } })
    } finally {
      await again.close()
    }
    // f: the patch's line undone, the later line kept; g: the held line back as before the patch.
    expect(fs.readFileSync(path.join(ws, "f.txt"), "utf8")).toBe(TEN.replace("9\n", "nine\n"))
    expect(fs.readFileSync(path.join(ws, "g.txt"), "utf8")).toBe(TEN)
    expect(readHistory(defaultDb(ws)).records).toHaveLength(records + 1)
  })
})
