/**
 * Real concurrency (SPEC §3, §4.3): 4 processes × 250 durable applies on one workspace, half
 * on one shared file (overlapping), half on each process's own file (disjoint). No update is
 * lost, commit ordinals are exactly 1..1000 in commit order, and every record chains: its
 * `before` is the previous record's `after` for that path, and the last `after` is the file.
 */
import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { bundle } from "../support/bundle.ts"
import { readRecords } from "../support/history.ts"

const PROCESSES = 4
const APPLIES = 250
const dirs: Array<string> = []
afterAll(() => dirs.splice(0).forEach((d) => fs.rmSync(d, { recursive: true, force: true })))

const run = (script: string, args: ReadonlyArray<string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })

describe("concurrent processes on one workspace", () => {
  it(`${PROCESSES} processes × ${APPLIES} applies: no lost update, unique increasing ordinals, chained records`, async () => {
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), "fj-conc-"))
    dirs.push(ws)
    fs.writeFileSync(path.join(ws, "shared.txt"), "start\n")
    for (let i = 0; i < PROCESSES; i++) fs.writeFileSync(path.join(ws, `own-${i}.txt`), `own ${i}\n`)
    const script = bundle("test/concurrency/child.ts")
    const results = await Promise.all(Array.from({ length: PROCESSES }, (_, i) => run(script, [ws, String(i), String(APPLIES)])))
    for (const r of results) expect(r.code, r.stderr).toBe(0)

    const shared = fs.readFileSync(path.join(ws, "shared.txt"), "utf8").split("\n").filter((l) => l !== "")
    const expectedShared = ["start"]
    for (let i = 0; i < PROCESSES; i++) for (let j = 0; j < APPLIES; j += 2) expectedShared.push(`p${i} n${j}`)
    expect([...shared].sort()).toEqual([...expectedShared].sort())
    for (let i = 0; i < PROCESSES; i++) {
      const own = fs.readFileSync(path.join(ws, `own-${i}.txt`), "utf8").split("\n").filter((l) => l !== "")
      expect(own).toEqual([`own ${i}`, ...Array.from({ length: APPLIES / 2 }, (_, k) => `p${i} n${2 * k + 1}`)])
    }

    const records = await readRecords(ws)
    expect(records.length).toBe(PROCESSES * APPLIES)
    expect(records.map((r) => r.commitOrdinal)).toEqual(Array.from({ length: records.length }, (_, k) => k + 1))
    const last = new Map<string, string>()
    for (const r of records) {
      expect(r.changes.length).toBe(1)
      const c = r.changes[0]!
      const prev = last.get(c.path)
      if (prev !== undefined) expect(c.before?.hash).toBe(prev)
      last.set(c.path, c.after!.hash)
    }
    for (const [p, hash] of last) {
      expect(`sha256:${createHash("sha256").update(fs.readFileSync(path.join(ws, p))).digest("hex")}`).toBe(hash)
    }
  })
})
