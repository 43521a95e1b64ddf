/**
 * `forkjoin gc` end to end through the built bundle (issue 9 item 7): an old finished run's
 * folder is removed with the bytes it held and a fresh one kept; a blocked run with an open
 * conflict and an interrupted (`running`) run are kept at any age and their joins still finish
 * afterwards; an old export-only run is removed; human output, `--json`, and usage errors.
 * "Old" is made by dating the run back: its merge run's `updatedAt` in the history database
 * (what gc reads for a joined run), or its files' mtimes for an export-only run. Snapshot
 * retention (`--prune-snapshots-older-than`, issue 14): off by default; when given, old
 * versions' content goes, the latest content, records and hashes stay, and `history diff`
 * marks what went.
 */
import Database from "better-sqlite3"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ageFiles } from "./heldCli.ts"
import { buildCli, defaultDb, patch, removeSandboxes, runCli, short8 } from "./helpers.ts"
import { editTask, makeCase, planOf, recordsOf } from "./joinHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const DAY = 86_400_000

const lines = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}\n`).join("")
const FILES = { "m/f.txt": lines("f", 6), "m/other.txt": "o1\n", "n/g.txt": "g1\n" }

const disjoint = planOf([
  editTask("one", ["m"], ["*** Update File: m/other.txt", "@@", "-o1", "+O1"]),
  editTask("two", ["n"], ["*** Update File: n/g.txt", "@@", "-g1", "+G1"])
])
/** Adds a file no other plan touches: a run that applies whatever ran before it. */
const adding = (name: string) => planOf([editTask("add", ["n"], [`*** Add File: n/${name}.txt`, `+${name}`])])
const conflicting = planOf([
  editTask("first", ["m"], ["*** Update File: m/f.txt", "@@", "-f1", "+F1-first"]),
  editTask("second", ["m"], ["*** Update File: m/f.txt", "@@", "-f1", "+F1-second", "*** Update File: m/other.txt", "@@", "-o1", "+O1"])
])

/** `forkjoin <args> --json`: exit status, stderr and the parsed line. */
const json = (args: ReadonlyArray<string>, env?: Record<string, string>) => {
  const r = runCli([...args, "--json"], env === undefined ? {} : { env })
  // Each test checks the fields it needs.
  const out: any = r.stdout === "" ? undefined : JSON.parse(r.stdout)
  return { status: r.status, signal: r.signal, stderr: r.stderr, out }
}

/** Runs `plan` in `ws` (its plan file written beside it) and returns the run id. */
const runPlanIn = (ws: string, plan: unknown, args: ReadonlyArray<string> = [], env?: Record<string, string>) => {
  const planFile = path.join(path.dirname(ws), `plan-${Math.random().toString(36).slice(2)}.json`)
  fs.writeFileSync(planFile, JSON.stringify(plan))
  const r = json(["run", planFile, "--workspace", ws, ...args], env)
  return { ...r, runId: r.out?.runId as string }
}

const runsDir = (ws: string) => path.join(ws, ".forkjoin", "runs")
const runFolder = (ws: string, runId: string) => path.join(runsDir(ws), runId)

/** Bytes of every file below `dir`. */
const bytesBelow = (dir: string): number => {
  let n = 0
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const abs = path.join(dir, e.name)
    n += e.isDirectory() ? bytesBelow(abs) : fs.lstatSync(abs).size
  }
  return n
}

/** Every file below `dir` with its bytes, for "left exactly as it was" checks. */
const filesBelow = (dir: string, out: Record<string, string> = {}, base = dir): Record<string, string> => {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const abs = path.join(dir, e.name)
    if (e.isDirectory()) filesBelow(abs, out, base)
    else out[path.relative(base, abs)] = fs.readFileSync(abs).toString("base64")
  }
  return out
}

/** Dates a joined run back by `days`: its merge run's `updatedAt` (the column and the record). */
const ageMergeRun = (ws: string, runId: string, days: number) => {
  const at = new Date(Date.now() - days * DAY).toISOString()
  const db = new Database(defaultDb(ws))
  try {
    const changed = db.prepare("UPDATE merge_runs SET updated_at = ?, run_json = json_set(run_json, '$.updatedAt', ?) WHERE run_id = ?").run(at, at, runId)
    expect(changed.changes).toBe(1)
  } finally {
    db.close()
  }
}

describe("forkjoin gc", () => {
  it("removes an old finished run's folder with the bytes it held, keeps a fresh one; history keeps both runs", () => {
    const c = makeCase(FILES, disjoint)
    const old = runPlanIn(c.ws, disjoint)
    expect(old.status, old.stderr).toBe(0)
    const fresh = runPlanIn(c.ws, adding("fresh"))
    expect(fresh.status, fresh.stderr).toBe(0)
    ageMergeRun(c.ws, old.runId, 8)
    const bytes = bytesBelow(runFolder(c.ws, old.runId))
    expect(bytes).toBeGreaterThan(0)

    const r = json(["gc", "--workspace", c.ws])
    expect(r.stderr).toBe("")
    expect(r.status).toBe(0)
    expect(r.out).toEqual({ ok: true, removed: [{ runId: old.runId, bytes }], kept: [{ runId: fresh.runId, reason: "recent" }] })
    expect(fs.readdirSync(runsDir(c.ws))).toEqual([fresh.runId])
    // The records stay: history still holds the old run's transactions.
    expect(recordsOf(c.ws).map((x) => x.transactionId)).toContain(`subagent_merge:${old.runId}/one`)

    // --older-than: the fresh run goes too once the limit is below its age.
    const all = json(["gc", "--workspace", c.ws, "--older-than", "0s"])
    expect(all.status, all.stderr).toBe(0)
    expect(all.out.removed.map((x: any) => x.runId)).toEqual([fresh.runId])
    expect(fs.readdirSync(runsDir(c.ws))).toEqual([])
  })

  it("keeps a blocked run with an open conflict at any age; resolving it afterwards applies the rest of the child", () => {
    const c = makeCase(FILES, conflicting)
    const blocked = runPlanIn(c.ws, conflicting)
    expect(blocked.status).toBe(1)
    expect(blocked.out.mergeExecution.status).toBe("blocked")
    ageMergeRun(c.ws, blocked.runId, 30)
    const before = filesBelow(runFolder(c.ws, blocked.runId))

    const r = json(["gc", "--workspace", c.ws, "--older-than", "0s"])
    expect(r.status, r.stderr).toBe(0)
    expect(r.out).toEqual({ ok: true, removed: [], kept: [{ runId: blocked.runId, reason: "blocked" }] })
    expect(filesBelow(runFolder(c.ws, blocked.runId))).toEqual(before)
    // Snapshot retention keeps what the open conflict and the blocked join read.
    const pruned = json(["gc", "--workspace", c.ws, "--older-than", "0s", "--prune-snapshots-older-than", "0s"])
    expect(pruned.status, pruned.stderr).toBe(0)
    expect(pruned.out.snapshots).toMatchObject({ snapshotsPruned: 0 })

    const conflictId = `${blocked.runId}/second:m/f.txt`
    const resolved = json(["resolve", conflictId, "--apply", "--workspace", c.ws])
    expect(resolved.status, resolved.stderr).toBe(0)
    expect(resolved.out.outcome).toMatchObject({ childId: "second", status: "resolved" })
    expect(fs.readFileSync(path.join(c.ws, "m/other.txt"), "utf8")).toBe("O1\n")
  })

  it("keeps an interrupted (running) run at any age; 'run --resume' finishes it afterwards", () => {
    const c = makeCase(FILES, disjoint)
    const killed = runPlanIn(c.ws, disjoint, [], { FORKJOIN_FAULT: "merge:after-child:1" })
    expect(killed.signal).toBe("SIGKILL")
    const status = json(["status", "--workspace", c.ws])
    expect(status.out.interruptedRuns).toHaveLength(1)
    const runId: string = status.out.interruptedRuns[0].runId
    ageMergeRun(c.ws, runId, 30)

    const r = json(["gc", "--workspace", c.ws, "--older-than", "0s"])
    expect(r.status, r.stderr).toBe(0)
    expect(r.out).toEqual({ ok: true, removed: [], kept: [{ runId, reason: "running" }] })

    const resumed = json(["run", "--resume", runId, "--workspace", c.ws])
    expect(resumed.status, resumed.stderr).toBe(0)
    expect(resumed.out.mergeExecution.status).toBe("applied")
    expect(fs.readFileSync(path.join(c.ws, "n/g.txt"), "utf8")).toBe("G1\n")
  })

  it("removes an old export-only run (no merge run: dated by its files) and keeps a fresh one", () => {
    const c = makeCase(FILES, disjoint)
    const old = runPlanIn(c.ws, disjoint, ["--export-only"])
    const fresh = runPlanIn(c.ws, disjoint, ["--export-only"])
    expect([old.status, fresh.status]).toEqual([0, 0])
    ageFiles(runFolder(c.ws, old.runId), 8)
    const bytes = bytesBelow(runFolder(c.ws, old.runId))

    const r = json(["gc", "--workspace", c.ws])
    expect(r.status, r.stderr).toBe(0)
    expect(r.out).toEqual({ ok: true, removed: [{ runId: old.runId, bytes }], kept: [{ runId: fresh.runId, reason: "recent" }] })
    expect(fs.readdirSync(runsDir(c.ws))).toEqual([fresh.runId])
  })

  it("prints what it removed, what it kept and why, and the bytes freed", () => {
    const c = makeCase(FILES, conflicting)
    const blocked = runPlanIn(c.ws, conflicting)
    const exported = runPlanIn(c.ws, disjoint, ["--export-only"])
    ageFiles(runFolder(c.ws, exported.runId), 2)
    const bytes = bytesBelow(runFolder(c.ws, exported.runId))
    const r = runCli(["gc", "--workspace", c.ws, "--older-than", "24h"])
    expect(r.stderr).toBe("")
    expect(r.status).toBe(0)
    expect(r.stdout.split("\n").sort()).toEqual([
      "",
      `freed ${bytes} bytes from 1 run folder(s)`,
      `kept ${short8(blocked.runId)}: open conflicts need it; 'forkjoin conflicts --run ${short8(blocked.runId)}' lists them`,
      // An export-only run never reached the history: its id stays whole.
      `removed ${exported.runId} (${bytes} bytes)`
    ].sort())
    const again = runCli(["gc", "--workspace", c.ws, "--older-than", "24h"])
    expect(again.stdout).toBe(`kept ${short8(blocked.runId)}: open conflicts need it; 'forkjoin conflicts --run ${short8(blocked.runId)}' lists them\nNothing to remove: no finished run older than 24h.\n`)
  })

  it("a workspace without runs has nothing to remove; a bad --older-than is a usage error (exit 2, the usage_invalid line with --json)", () => {
    const c = makeCase(FILES, disjoint)
    const empty = json(["gc", "--workspace", c.ws])
    expect(empty.status, empty.stderr).toBe(0)
    expect(empty.out).toEqual({ ok: true, removed: [], kept: [] })

    const exported = runPlanIn(c.ws, disjoint, ["--export-only"])
    ageFiles(runFolder(c.ws, exported.runId), 30)
    for (const bad of ["7", "7x", "1.5h", "7 d", "d", "99999999999999d"]) {
      const r = runCli(["gc", "--workspace", c.ws, "--older-than", bad, "--json"])
      expect(r.status, bad).toBe(2)
      expect(r.stderr).toBe("")
      const { error } = JSON.parse(r.stdout)
      expect(error.code).toBe("usage_invalid")
      expect(error.message).toContain(`--older-than: '${bad}' is not an age like 30m, 24h or 7d`)
    }
    // Nothing was removed by the refused invocations.
    expect(fs.readdirSync(runsDir(c.ws))).toEqual([exported.runId])
    const missing = runCli(["gc", "--workspace", path.join(c.dir, "nope")])
    expect(missing.status).toBe(2)
    expect(missing.stderr).toContain("is not a usable directory")
  })

  it("--prune-snapshots-older-than drops what only old records use; history marks it; records, hashes and files stay", () => {
    const c = makeCase({ "a.txt": lines("a", 400) }, disjoint)
    const apply = (from: string, to: string) => {
      const r = runCli(["apply", "--workspace", c.ws, "--json"], { stdin: patch("*** Update File: a.txt", "@@", `-${from}`, `+${to}`) })
      expect(r.status, r.stderr).toBe(0)
    }
    apply("a1", "A1")
    apply("a200", "A200")
    apply("a400", "A400")
    const file = fs.readFileSync(path.join(c.ws, "a.txt"), "utf8")
    const before = recordsOf(c.ws)
    expect(before).toHaveLength(3)

    // Off by default: no snapshots key, nothing pruned.
    const plain = json(["gc", "--workspace", c.ws])
    expect(plain.out).toEqual({ ok: true, removed: [], kept: [] })

    const r = json(["gc", "--workspace", c.ws, "--prune-snapshots-older-than", "0s"])
    expect(r.status, r.stderr).toBe(0)
    // The three older versions go (#1's before, and the afters of #1 and #2); #3's after is the live file.
    expect(r.out.snapshots).toMatchObject({ snapshotsPruned: 3 })
    expect(r.out.snapshots.chunksRemoved).toBeGreaterThanOrEqual(0)
    expect(r.out.snapshots.databaseBytesAfter).toBeLessThanOrEqual(r.out.snapshots.databaseBytesBefore)
    expect(recordsOf(c.ws)).toEqual(before)
    expect(fs.readFileSync(path.join(c.ws, "a.txt"), "utf8")).toBe(file)

    const diff1 = json(["history", "diff", "#1", "--workspace", c.ws])
    expect(diff1.status, diff1.stderr).toBe(0)
    expect(diff1.out.items[0]).toMatchObject({ source: "pruned", pruned: [before[0]!.changes[0]!.before!.hash, before[0]!.changes[0]!.after!.hash] })
    const text = runCli(["history", "diff", "#3", "--workspace", c.ws])
    expect(text.status, text.stderr).toBe(0)
    expect(text.stdout).toContain("pruned by retention")

    // Again: nothing left to prune; the text output says so.
    const again = runCli(["gc", "--workspace", c.ws, "--prune-snapshots-older-than", "0s"])
    expect(again.status, again.stderr).toBe(0)
    expect(again.stdout).toContain("No snapshot to prune: none is used only by records older than 0s.")
    const bad = runCli(["gc", "--workspace", c.ws, "--prune-snapshots-older-than", "soon", "--json"])
    expect(bad.status).toBe(2)
    expect(JSON.parse(bad.stdout).error.message).toContain("--prune-snapshots-older-than: 'soon' is not an age like 30m, 24h or 7d")
  })
})
