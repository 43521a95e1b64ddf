/**
 * What `forkjoin run`, `forkjoin agent` and `forkjoin gc` read to shorten ids, observed through
 * the built CLI: a preloaded spy on better-sqlite3's statements logs every query the short ids
 * make (the only queries using `instr(`). Under `--json` (ids printed whole) they make none; in
 * text they read only the ids near the ones printed (each query's head is a UUID's first
 * characters), never the whole history (the empty head), and the text still shows short ids.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Conversation, startModelServer, type Turn } from "../../drivers/test/support/modelServer.ts"
import { buildCli, json, makeSandbox, removeSandboxes, ROOT, runCli, runCliAsync, short8 } from "./helpers.ts"
import { editTask, makeCase, planOf } from "./joinHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/

// Loaded with --require into the CLI's process: better-sqlite3 resolved as the bundle resolves
// it (the same module instance), every statement's `all` logged to FORKJOIN_TEST_SQL_LOG.
const SPY = `
const fs = require("node:fs")
const Database = require("node:module").createRequire(${JSON.stringify(path.join(ROOT, "packages/cli/dist/forkjoin.cjs"))})("better-sqlite3")
const probe = new Database(":memory:")
const proto = Object.getPrototypeOf(probe.prepare("SELECT 1"))
probe.close()
const all = proto.all
proto.all = function (...params) {
  fs.appendFileSync(process.env.FORKJOIN_TEST_SQL_LOG, JSON.stringify({ sql: this.source, params }) + "\\n")
  return all.apply(this, params)
}
`

interface Read {
  readonly sql: string
  readonly params: ReadonlyArray<unknown>
}

/** A fresh log and the environment that makes the CLI write every statement it reads to it. */
const spyEnv = () => {
  const { dir } = makeSandbox()
  const spy = path.join(dir, "spy.cjs")
  fs.writeFileSync(spy, SPY)
  const log = path.join(dir, "sql.log")
  const env = { NODE_OPTIONS: `--require ${spy}`, FORKJOIN_TEST_SQL_LOG: log }
  /** The short ids' queries logged so far. */
  const reads = (): ReadonlyArray<Read> =>
    fs.existsSync(log)
      ? fs.readFileSync(log, "utf8").trim().split("\n").map((line) => JSON.parse(line) as Read).filter((r) => r.sql.includes("instr("))
      : []
  return { env, reads, reset: () => fs.rmSync(log, { force: true }) }
}

/** The heads the short ids searched for: the bound values after the environment id. */
const headsOf = (reads: ReadonlyArray<Read>) => new Set(reads.flatMap((r) => r.params.slice(1)))

/** The reads of a text run: some, none of the whole history, each for a UUID's first 8 characters. */
const expectBounded = (reads: ReadonlyArray<Read>, uuidsShown: ReadonlyArray<string>) => {
  expect(reads.length).toBeGreaterThan(0)
  expect([...headsOf(reads)].sort()).toEqual([...new Set(uuidsShown.map((u) => UUID.exec(u)![0].slice(0, 8)))].sort())
}

const conflicting = () =>
  makeCase({ "m/a.txt": "a\n" }, planOf([
    editTask("one", ["m"], ["*** Update File: m/a.txt", "@@", "-a", "+one"]),
    editTask("two", ["m"], ["*** Update File: m/a.txt", "@@", "-a", "+two"])
  ]))

describe("short ids read only what the output shows", () => {
  it("forkjoin run: none under --json, only the run's neighbours in text", () => {
    const spy = spyEnv()
    const first = conflicting()
    const asJson = runCli(["run", first.planFile, "--workspace", first.ws, "--json"], { env: spy.env })
    expect(asJson.status, asJson.stderr).toBe(1)
    expect(spy.reads()).toEqual([])

    spy.reset()
    const second = conflicting()
    const asText = runCli(["run", second.planFile, "--workspace", second.ws], { env: spy.env })
    expect(asText.status, asText.stderr).toBe(1)
    const runId = /^run (run-[0-9a-f]{8}): blocked$/m.exec(asText.stdout)?.[1]
    expect(runId, asText.stdout).toBeDefined()
    expect(asText.stdout).not.toMatch(UUID)
    const full = json(runCli(["runs", "--workspace", second.ws, "--json"]).stdout).runs.map((r: { run: { runId: string } }) => r.run.runId)
    const shown = full.find((id: string) => short8(id) === runId)
    expect(shown).toBeDefined()
    expectBounded(spy.reads(), [shown])
  })

  it("forkjoin gc: none under --json, only the runs it names in text", () => {
    const spy = spyEnv()
    const c = conflicting()
    const ran = json(runCli(["run", c.planFile, "--workspace", c.ws, "--json"]).stdout)
    const asJson = runCli(["gc", "--workspace", c.ws, "--older-than", "0s", "--json"], { env: spy.env })
    expect(asJson.status, asJson.stderr).toBe(0)
    expect(json(asJson.stdout).kept.map((k: { runId: string }) => k.runId)).toEqual([ran.runId])
    expect(spy.reads()).toEqual([])

    spy.reset()
    const asText = runCli(["gc", "--workspace", c.ws, "--older-than", "0s"], { env: spy.env })
    expect(asText.status, asText.stderr).toBe(0)
    expect(asText.stdout).toContain(`kept ${short8(ran.runId)}: `)
    expectBounded(spy.reads(), [ran.runId])
  })

  it("forkjoin agent: none under --json, only its runs' neighbours in text", async () => {
    // The parent forks one writing child, then finishes; the child adds one file.
    const script = (c: Conversation): Turn => {
      if (c.system.startsWith("You are the parent")) {
        return c.turn === 0
          ? { calls: [{ name: "run_subagents", args: { tasks: [{ id: "docs", mode: "transactional_write", writeScope: ["docs"], prompt: "write docs" }] } }] }
          : { calls: [{ name: "finish", args: {} }] }
      }
      return c.turn === 0
        ? { calls: [{ name: "apply_patch", args: { patch: "*** Begin Patch\n*** Add File: docs/note.md\n+hi\n*** End Patch" } }] }
        : { calls: [{ name: "finish", args: {} }] }
    }
    const spy = spyEnv()
    const { ws } = makeSandbox()
    const server = await startModelServer("openai", script)
    try {
      const env = { ...spy.env, OPENAI_BASE_URL: server.url }
      const asJson = await runCliAsync(["agent", "write the docs", "--workspace", ws, "--model", "m", "--json"], env)
      expect(asJson.status, asJson.stderr).toBe(0)
      expect(json(asJson.stdout).runs).toHaveLength(1)
      expect(spy.reads()).toEqual([])

      spy.reset()
      const asText = await runCliAsync(["agent", "write the docs again", "--workspace", ws, "--model", "m"], env)
      expect(asText.status, asText.stderr).toBe(0)
      const runIds = json(runCli(["runs", "--workspace", ws, "--json"]).stdout).runs.map((r: { run: { runId: string } }) => r.run.runId)
      expect(runIds).toHaveLength(2)
      const latest = runIds.find((id: string) => asText.stdout.includes(`run ${short8(id)}: applied`))
      expect(latest, asText.stdout).toBeDefined()
      // The session's id is short too (sessions are folders: no query reads them).
      expect(asText.stdout).toMatch(/^agent agent-[0-9a-f]{8}: /)
      expectBounded(spy.reads(), [latest])
    } finally {
      await server.close()
    }
  })
})
