/**
 * `forkjoin mcp` scopes `rollback_transaction` and `resolve_conflict` to the server's thread and
 * the threads below it: thread B's session cannot roll back thread A's transaction nor resolve
 * A's held conflict, is refused exactly as for an unknown id (the refusal does not tell them
 * apart), and nothing changes on disk or in history; A's own session still can.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, buildCli, defaultDb, makeSandbox, patch, readHistory, removeSandboxes, workspaceTree, writeTree } from "./helpers.ts"

beforeAll(() => buildCli())
afterAll(removeSandboxes)

const connect = async (ws: string, thread: string) => {
  const inherited = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined))
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "mcp", "--workspace", ws, "--thread", thread],
    env: { ...inherited, NO_COLOR: "1", FORKJOIN_AUTONOMY: "bold" },
    stderr: "pipe"
  })
  const client = new Client({ name: "forkjoin-scope-test", version: "1.0.0" })
  await client.connect(transport)
  return client
}

const observation = (result: any): any => JSON.parse(result.content[0].text)

/** The refusal with the id it names replaced, to compare refusals of different ids. */
const shape = (result: any, id: string) => ({ isError: result.isError, ...observation(result), message: observation(result).message.replace(id, "ID") })

describe("forkjoin mcp scopes rollback and resolution to its thread", () => {
  it("thread B cannot roll back A's transaction nor resolve A's conflict; refused as unknown, nothing changed", async () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "shared.txt": "line\n" })
    const a = await connect(ws, "alpha")
    let tx: string
    let conflictId: string
    try {
      const applied = await a.callTool({ name: "apply_patch", arguments: { patch: patch("*** Add File: notes/a.md", "+by alpha") } })
      tx = observation(applied).data.transactionId
      const ran = await a.callTool({
        name: "run_subagents",
        arguments: {
          tasks: ["x", "y"].map((id) => ({
            id,
            mode: "transactional_write",
            writeScope: ["shared.txt"],
            actions: [{ apply_patch: { patch: patch("*** Update File: shared.txt", "@@", "-line", `+line by ${id}`) } }, { finish: {} }]
          }))
        }
      })
      expect(observation(ran).code).toBe("unresolved_subagent_conflicts")
      conflictId = observation(ran).data.openConflicts[0].conflictId
    } finally {
      await a.close()
    }

    const tree = workspaceTree(ws)
    const records = readHistory(defaultDb(ws)).records.length
    const b = await connect(ws, "beta")
    try {
      const rollback = await b.callTool({ name: "rollback_transaction", arguments: { transactionId: tx } })
      const unknownTx = "patch:00000000-0000-4000-8000-000000000000"
      const rollbackUnknown = await b.callTool({ name: "rollback_transaction", arguments: { transactionId: unknownTx } })
      expect(observation(rollback)).toMatchObject({ ok: false, code: "unknown_transaction" })
      expect(shape(rollback, tx)).toEqual(shape(rollbackUnknown, unknownTx))

      const resolve = await b.callTool({ name: "resolve_conflict", arguments: { conflictId, resolution: "apply" } })
      const resolveUnknown = await b.callTool({ name: "resolve_conflict", arguments: { conflictId: "conflict-unknown", resolution: "apply" } })
      expect(observation(resolve)).toMatchObject({ ok: false, code: "unknown_conflict" })
      expect(shape(resolve, conflictId)).toEqual(shape(resolveUnknown, "conflict-unknown"))
    } finally {
      await b.close()
    }
    expect(workspaceTree(ws)).toEqual(tree)
    expect(readHistory(defaultDb(ws)).records).toHaveLength(records)

    // A's own session still acts on both.
    const again = await connect(ws, "alpha")
    try {
      const resolved = await again.callTool({ name: "resolve_conflict", arguments: { conflictId, resolution: "apply" } })
      expect(observation(resolved)).toMatchObject({ ok: true })
      const rolled = await again.callTool({ name: "rollback_transaction", arguments: { transactionId: tx } })
      expect(observation(rolled)).toMatchObject({ ok: true })
      expect(fs.existsSync(path.join(ws, "notes/a.md"))).toBe(false)
    } finally {
      await again.close()
    }
  })
})
