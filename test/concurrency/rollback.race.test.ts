/**
 * The last two conflicts of a held rollback resolved by two real `forkjoin resolve` processes
 * at once. A preloaded hook holds each process right after it read the rollback's conflicts
 * (so each has seen the other's still open) until both got there, then lets them go together.
 * Every round exactly one of them applies the whole rollback, once: one says it applied it
 * (`rollback:<id>`, none left open), the other that it waits for one more; history holds one
 * `rollback:<id>` record with both resolutions in it, and resolving either again adds none.
 */
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, buildCli, makeSandbox, patch, removeSandboxes, ROOT, runCli, writeTree } from "../../packages/cli/test/helpers.ts"
import { cliJson, recordsOf, textAt } from "../../packages/cli/test/joinHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const ROUNDS = 4
const REACHED = "forkjoin-test: read the rollback's conflicts\n"
const TEN = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
const at = (text: string, line: number, to: string) => text.split("\n").map((l, i) => (i === line - 1 ? to : l)).join("\n")

// Loaded with --require into each resolve: after the process's first read of the held
// rollbacks' conflicts it says so on stderr and blocks until the test writes to its gate FIFO.
const HOOK = `
const fs = require("node:fs")
const Database = require("node:module").createRequire(${JSON.stringify(path.join(ROOT, "packages/cli/dist/forkjoin.cjs"))})("better-sqlite3")
const probe = new Database(":memory:")
const proto = Object.getPrototypeOf(probe.prepare("SELECT 1"))
probe.close()
const all = proto.all
let held = false
proto.all = function (...params) {
  const rows = all.apply(this, params)
  if (!held && /FROM merge_conflicts WHERE environment_id = \\? AND run_id IS NULL ORDER BY/.test(this.source)) {
    held = true
    fs.writeSync(2, ${JSON.stringify(REACHED)})
    fs.readFileSync(process.env.FORKJOIN_TEST_GATE)
  }
  return rows
}
`

interface Held {
  readonly reached: Promise<void>
  readonly ended: Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>
  readonly release: () => Promise<void>
}

/** `forkjoin resolve ID --apply`, held after its first read of the rollback's conflicts until `release`. */
const startResolve = (dir: string, ws: string, conflictId: string, k: number, hook: string): Held => {
  const gate = path.join(dir, `gate-${k}`)
  execFileSync("mkfifo", [gate])
  const { FORKJOIN_FAULT: _f, ...inherited } = process.env
  const child = spawn(process.execPath, ["--require", hook, BIN, "resolve", conflictId, "--apply", "--workspace", ws, "--json"], {
    cwd: ROOT,
    env: { ...inherited, NO_COLOR: "1", FORCE_COLOR: "0", FORKJOIN_TEST_GATE: gate },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  let reached!: () => void
  const reachedP = new Promise<void>((resolve) => (reached = resolve))
  let isHeld = false
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString()
    if (!isHeld && stderr.includes(REACHED)) {
      isHeld = true
      reached()
    }
  })
  const ended = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, stderr: stderr.replace(REACHED, "") }))
  )
  return { reached: reachedP, ended, release: () => (isHeld ? fs.promises.writeFile(gate, "go") : Promise.resolve()) }
}

/** Applies `body` as one patch; its transaction id. */
const apply = (ws: string, ...body: ReadonlyArray<string>): string => {
  const out = runCli(["apply", "-", "--workspace", ws, "--json"], { stdin: patch(...body) })
  expect(out.status, out.stderr).toBe(0)
  return JSON.parse(out.stdout).record.transactionId
}

describe("the last two conflicts of a held rollback resolved at once", () => {
  it(`${ROUNDS} rounds of two resolves held together after reading both open: exactly one applies the rollback, once`, async () => {
    const { dir: hookDir } = makeSandbox()
    const hook = path.join(hookDir, "hold.cjs")
    fs.writeFileSync(hook, HOOK)
    let together = 0
    for (let round = 0; round < ROUNDS; round++) {
      const { dir, ws } = makeSandbox()
      writeTree(ws, { "f.txt": TEN, "h.txt": TEN })
      const first = apply(ws, "*** Update File: f.txt", "@@", " 1", "-2", "+two", "*** Update File: h.txt", "@@", " 1", "-2", "+two")
      const later = apply(ws, "*** Update File: f.txt", "@@", " 1", "-two", "+F", "*** Update File: h.txt", "@@", " 1", "-two", "+H", "@@", " 6", "-7", "+seven")
      const ids = [`rollback:${first}:f.txt`, `rollback:${first}:h.txt`]
      expect(cliJson(["rollback", first, "--workspace", ws]).json.error.conflictIds).toEqual(ids)

      const resolves = ids.map((id, k) => startResolve(dir, ws, id, k, hook))
      // Both held at once after their read, or (never expected) one ended while the other is held.
      const states = await Promise.all(resolves.map((r) => Promise.race([r.reached.then(() => "held"), r.ended.then(() => "ended")])))
      if (states.every((s) => s === "held")) together++
      await Promise.all(resolves.map((r) => r.release()))
      const results = await Promise.all(resolves.map((r) => r.ended))
      const when = `round ${round}: ${JSON.stringify(results)}`
      expect(results.map((r) => r.code), when).toEqual([0, 0])

      const outs = results.map((r) => JSON.parse(r.stdout))
      const appliers = outs.filter((o) => o.transactionId !== undefined)
      expect(appliers, when).toEqual([{ ok: true, transactionId: `rollback:${first}`, rollbackOf: first, openConflicts: 0 }])
      expect(outs.filter((o) => o.transactionId === undefined), when).toEqual([{ ok: true, rollbackOf: first, openConflicts: 1 }])

      // One rollback record, both resolutions in it: line 2 back in both files, the later line 7 kept.
      const records = recordsOf(ws)
      expect(records.map((x) => x.transactionId), when).toEqual([first, later, `rollback:${first}`])
      expect(records[2]!.changes.map((c) => c.path).sort()).toEqual(["f.txt", "h.txt"])
      expect(textAt(ws, "f.txt")).toBe(TEN)
      expect(textAt(ws, "h.txt")).toBe(at(TEN, 7, "seven"))
      expect(cliJson(["conflicts", "--workspace", ws]).json.conflicts.map((c: any) => [c.conflictId, c.status])).toEqual([
        [ids[0], "resolved"],
        [ids[1], "resolved"]
      ])
      // Resolving either again finds the rollback applied since it was held: nothing is applied twice.
      for (const id of ids) expect(cliJson(["resolve", id, "--apply", "--workspace", ws]).json.error.code).toBe("conflict_already_resolved")
      expect(recordsOf(ws)).toHaveLength(3)
      fs.rmSync(dir, { recursive: true, force: true })
    }
    // Both were held together every round: each read the other's conflict open before either recorded.
    expect(together).toBe(ROUNDS)
  })
})
