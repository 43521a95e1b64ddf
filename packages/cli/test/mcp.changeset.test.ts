/**
 * `run_subagents`' `changesetFile` over `forkjoin mcp`, attacked: an absolute path, `../`, a
 * link leading out, a named pipe, `.git/config` and forkjoin's own `.forkjoin/identity.json` are
 * each refused with a stable code before anything is copied into `.forkjoin/runs` (the pipe
 * without the server blocking on it); a changeset a previous run exported under
 * `.forkjoin/runs/` is accepted.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, buildCli, makeSandbox, patch, removeSandboxes, writeTree } from "./helpers.ts"

beforeAll(() => buildCli())
afterAll(removeSandboxes)

const connect = async (ws: string) => {
  const inherited = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined))
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "mcp", "--workspace", ws],
    env: { ...inherited, NO_COLOR: "1", FORKJOIN_AUTONOMY: "bold" },
    stderr: "pipe"
  })
  const client = new Client({ name: "forkjoin-changeset-test", version: "1.0.0" })
  await client.connect(transport)
  return client
}

const observation = (result: any): any => JSON.parse(result.content[0].text)

/** Every path under `.forkjoin/runs`, sorted. */
const runArtifacts = (ws: string): Array<string> => {
  const dir = path.join(ws, ".forkjoin", "runs")
  return fs.existsSync(dir) ? (fs.readdirSync(dir, { recursive: true }) as Array<string>).sort() : []
}

const withChangeset = (changesetFile: string, id = "c") => ({
  tasks: [{ id, mode: "transactional_write", writeScope: ["docs"], changesetFile }]
})

describe("run_subagents confines changesetFile", () => {
  it("refuses paths outside the workspace, links out, pipes, .git and .forkjoin; copies nothing", async () => {
    const { ws, outside } = makeSandbox()
    writeTree(outside, { "secret": "{\"secret\":true}\n" })
    writeTree(ws, { "docs/keep.md": "keep\n", ".git/config": "[core]\n" })
    fs.symlinkSync(path.join(outside, "secret"), path.join(ws, "docs", "link.json"))
    // A regular changeset whose blobs folder (copied with it) is a link leading out.
    writeTree(ws, { "evil/changeset.json": "{}\n" })
    fs.mkdirSync(path.join(outside, "sha256"))
    fs.symlinkSync(outside, path.join(ws, "evil", "blobs"))
    execFileSync("mkfifo", [path.join(ws, "docs", "pipe.json")])
    const client = await connect(ws)
    try {
      // `.forkjoin/identity.json` exists once the server has opened the workspace.
      expect(fs.existsSync(path.join(ws, ".forkjoin", "identity.json"))).toBe(true)
      fs.mkdirSync(path.join(ws, ".forkjoin", "runs"), { recursive: true })
      execFileSync("mkfifo", [path.join(ws, ".forkjoin", "runs", "pipe.json")])
      fs.symlinkSync(path.join(outside, "secret"), path.join(ws, ".forkjoin", "runs", "link.json"))
      const before = runArtifacts(ws)
      const cases: Array<[string, string]> = [
        [path.join(outside, "secret"), "path_outside_roots"],
        ["/etc/passwd", "path_outside_roots"],
        ["../outside/secret", "path_outside_roots"],
        ["docs/link.json", "path_outside_roots"],
        ["docs/pipe.json", "changeset_not_regular_file"],
        [".forkjoin/runs/pipe.json", "changeset_not_regular_file"],
        [".forkjoin/runs/link.json", "changeset_not_regular_file"],
        [".forkjoin/runs/../identity.json", "path_denied_by_policy"],
        ["evil/changeset.json", "path_outside_roots"],
        [".git/config", "path_denied_by_policy"],
        [".forkjoin/identity.json", "path_denied_by_policy"]
      ]
      for (const [file, code] of cases) {
        const result = await client.callTool({ name: "run_subagents", arguments: withChangeset(file) })
        expect({ file, isError: result.isError, code: observation(result).code }).toEqual({ file, isError: true, code })
      }
      expect(runArtifacts(ws)).toEqual(before)
      expect(fs.readdirSync(path.join(ws, "docs")).sort()).toEqual(["keep.md", "link.json", "pipe.json"])
    } finally {
      await client.close()
    }
  })

  it("accepts a changeset a previous run exported under .forkjoin/runs", async () => {
    const { ws } = makeSandbox()
    const client = await connect(ws)
    try {
      const first = observation(await client.callTool({
        name: "run_subagents",
        arguments: {
          tasks: [{ id: "docs", mode: "transactional_write", writeScope: ["docs"], actions: [{ apply_patch: { patch: patch("*** Add File: docs/x.md", "+x") } }, { finish: {} }] }]
        }
      }))
      expect(first.data.children).toEqual([expect.objectContaining({ id: "docs", status: "applied" })])
      const rolled = await client.callTool({ name: "rollback_transaction", arguments: { transactionId: first.data.children[0].transactionId } })
      expect(rolled.isError).toBeFalsy()
      expect(fs.existsSync(path.join(ws, "docs/x.md"))).toBe(false)
      const exported = `.forkjoin/runs/${first.data.runId}/subagents/docs/changeset.json`
      const again = await client.callTool({ name: "run_subagents", arguments: withChangeset(exported, "docs") })
      expect(observation(again)).toMatchObject({ ok: true })
      expect(observation(again).data.children).toEqual([expect.objectContaining({ id: "docs", status: "applied" })])
      expect(fs.readFileSync(path.join(ws, "docs/x.md"), "utf8")).toBe("x\n")
    } finally {
      await client.close()
    }
  })
})
