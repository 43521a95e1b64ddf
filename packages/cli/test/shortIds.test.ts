/**
 * Short ids through the built bundle: text output cuts each UUID of a run, transaction,
 * conflict or record id to its shortest unique prefix (at least 8 characters), `--json` keeps
 * whole ids, and every command taking an id accepts the short form; a prefix naming several ids
 * is `ambiguous_id` with the candidates, nothing written. Also `rollback #N` and record ids,
 * `apply`'s undo line and `conflicts --open`.
 */
import Database from "better-sqlite3"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, defaultDb, json, patch, removeSandboxes, runCli, short8, workspaceTree } from "./helpers.ts"
import { cliJson, editTask, makeCase, planOf, recordsOf, runJoin, textAt } from "./joinHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g

/** A run of two children editing one line: `one` applied, `two` held back as a conflict. */
const conflictedRun = () => {
  const j = makeCase({ "m/a.txt": "a\n", "m/b.txt": "b\n" }, planOf([
    editTask("one", ["m"], ["*** Update File: m/a.txt", "@@", "-a", "+one"]),
    editTask("two", ["m"], ["*** Update File: m/a.txt", "@@", "-a", "+two"])
  ]))
  const { out } = runJoin(j)
  return { ...j, runId: out.runId, conflictId: `${out.runId}/two:m/a.txt` }
}

/**
 * Copies the row of `table` whose `key` is `from`, with each `[old, new]` of `replace` replaced
 * in its text (its JSON too) and the columns of `set` set, so a test can hold two ids sharing a
 * prefix, as a long history eventually does by chance.
 */
const copyRow = (
  ws: string,
  table: string,
  key: string,
  from: string,
  replace: ReadonlyArray<readonly [string, string]>,
  set: Record<string, string | number> = {}
) => {
  const db = new Database(defaultDb(ws))
  try {
    const row = db.prepare(`SELECT * FROM ${table} WHERE ${key} = ?`).get(from) as Record<string, unknown>
    const copy = Object.fromEntries(Object.entries(row).map(([k, v]) => [
      k,
      k in set ? set[k] : typeof v === "string" ? replace.reduce((text, [a, b]) => text.replaceAll(a, b), v) : v
    ]))
    const columns = Object.keys(copy)
    db.prepare(`INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`).run(...columns.map((k) => copy[k]))
  } finally {
    db.close()
  }
}

/** `id` with its UUID's last character changed: the same first 35 characters. */
const twin = (id: string): string => id.replace(UUID, (u) => u.slice(0, -1) + (u.endsWith("0") ? "1" : "0"))

describe("text output shows short ids, --json whole ones", () => {
  it("run, conflicts, runs and status print the run and conflict ids cut to 8 hex characters", () => {
    const c = conflictedRun()
    const short = short8(c.runId)
    expect(short).toMatch(/^run-[0-9a-f]{8}$/)
    for (const args of [["conflicts"], ["runs"], ["status"], ["history", "timeline"]]) {
      const r = runCli([...args, "--workspace", c.ws])
      expect(r.status, r.stderr).toBe(0)
      expect(r.stdout).toContain(short)
      // The full run id appears only inside a thread id (history timeline's thread/turn column).
      expect(r.stdout.replace(new RegExp(`${c.runId}/[a-z]+/join `, "g"), "")).not.toContain(c.runId)
    }
    expect(runCli(["conflicts", "--workspace", c.ws]).stdout).toContain(`forkjoin resolve '${short8(c.conflictId)}'`)
    const listed = cliJson(["conflicts", "--workspace", c.ws])
    expect(listed.json.conflicts.map((x: { conflictId: string; runId: string }) => [x.conflictId, x.runId])).toEqual([[c.conflictId, c.runId]])
  })

  it("gc's text names a kept run by its short id", () => {
    const c = conflictedRun()
    const r = runCli(["gc", "--workspace", c.ws, "--older-than", "0s"])
    expect(r.status, r.stderr).toBe(0)
    // Kept: its open conflict needs it; both the line and its hint name the run shortened.
    expect(r.stdout).toContain(`kept ${short8(c.runId)}: open conflicts need it; 'forkjoin conflicts --run ${short8(c.runId)}'`)
    expect(r.stdout).not.toContain(c.runId)
  })

  it("forkjoin run's text says the run id once per line at most and never whole", () => {
    const j = makeCase({ "m/a.txt": "a\n" }, planOf([
      editTask("one", ["m"], ["*** Update File: m/a.txt", "@@", "-a", "+one"]),
      editTask("two", ["m"], ["*** Update File: m/a.txt", "@@", "-a", "+two"])
    ]))
    const r = runCli(["run", j.planFile, "--workspace", j.ws])
    expect(r.status).toBe(1)
    const runId = /^run (run-[0-9a-f]{8}): blocked$/m.exec(r.stdout)?.[1]
    expect(runId, r.stdout).toBeDefined()
    expect(r.stdout).not.toMatch(UUID)
    for (const line of r.stdout.split("\n")) expect(line.split(runId!).length - 1, line).toBeLessThanOrEqual(1)
    expect(r.stdout).toContain(`undo a child's merge: forkjoin rollback subagent_merge:${runId}/<child>`)
    expect(r.stdout).toContain(`forkjoin resolve '${runId}/two:m/a.txt'`)
  })

  it("the demo prints no whole UUID, and its --json keeps them", () => {
    const text = runCli(["demo"])
    expect(text.status, text.stderr).toBe(0)
    expect(text.stdout).toMatch(/^run run-[0-9a-f]{8}: blocked$/m)
    expect(text.stdout).not.toMatch(UUID)
    const out = json(runCli(["demo", "--json"]).stdout)
    expect(out.runId).toMatch(/^run-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
  })
})

describe("commands accept the short ids", () => {
  it("conflicts --run, resolve, rollback and history diff take what the text output shows", () => {
    const c = conflictedRun()
    const run = cliJson(["conflicts", "--run", short8(c.runId), "--workspace", c.ws])
    expect(run.status, run.stderr).toBe(0)
    expect(run.json.conflicts.map((x: { conflictId: string }) => x.conflictId)).toEqual([c.conflictId])
    // Four characters are enough when they name one id, as in git.
    const four = c.conflictId.replace(UUID, (u) => u.slice(0, 4))
    const resolved = cliJson(["resolve", four, "--discard", "--workspace", c.ws])
    expect(resolved.status, resolved.stderr).toBe(0)
    expect(cliJson(["conflicts", "--workspace", c.ws]).json.conflicts[0]).toMatchObject({ conflictId: c.conflictId, status: "resolved" })

    const diff = runCli(["history", "diff", short8(`subagent_merge:${c.runId}/one`), "--workspace", c.ws])
    expect(diff.status, diff.stderr).toBe(0)
    expect(diff.stdout).toContain("+one")
    const rolled = runCli(["rollback", short8(`subagent_merge:${c.runId}/one`), "--workspace", c.ws])
    expect(rolled.status, rolled.stderr).toBe(0)
    expect(rolled.stdout).toContain(`Rolled back ${short8(`subagent_merge:${c.runId}/one`)} as ${short8(`rollback:subagent_merge:${c.runId}/one`)}`)
    expect(textAt(c.ws, "m/a.txt")).toBe("a\n")
  })

  it("a prefix two ids share is ambiguous_id listing both, and the text output shows them longer", () => {
    const c = conflictedRun()
    const other = twin(c.runId)
    copyRow(c.ws, "merge_runs", "run_id", c.runId, [[c.runId, other]])
    const merge = `subagent_merge:${c.runId}/one`
    const [record] = recordsOf(c.ws)
    copyRow(c.ws, "records", "transaction_id", merge, [[c.runId, other], [record!.recordId, twin(record!.recordId)]], {
      commit_ordinal: Math.max(...recordsOf(c.ws).map((r) => r.commitOrdinal)) + 1
    })
    const before = workspaceTree(c.ws)
    const records = recordsOf(c.ws).length

    for (const [args, candidates] of [
      [["conflicts", "--run", short8(c.runId)], [c.runId, other]],
      [["run", "--resume", short8(c.runId)], [c.runId, other]],
      [["rollback", short8(merge)], [merge, twin(merge)]]
    ] as const) {
      const text = runCli([...args, "--workspace", c.ws])
      expect(text.status, text.stderr).toBe(1)
      expect(text.stderr).toMatch(/^error\[ambiguous_id\]: /)
      for (const id of candidates) expect(text.stderr).toContain(id)
      expect(text.stderr).toContain("give more characters of the id")
      const asJson = cliJson([...args, "--workspace", c.ws])
      expect(asJson.status).toBe(1)
      expect(asJson.json).toMatchObject({ ok: false, error: { code: "ambiguous_id" } })
    }
    expect(workspaceTree(c.ws)).toEqual(before)
    expect(recordsOf(c.ws)).toHaveLength(records)

    // The two runs now share 35 characters: each is shown with all 36.
    const runs = runCli(["runs", "--workspace", c.ws])
    expect(runs.stdout).toContain(c.runId)
    expect(runs.stdout).toContain(other)
    // The whole id still names exactly one.
    expect(cliJson(["conflicts", "--run", c.runId, "--workspace", c.ws]).status).toBe(0)
  })
})

describe("rollback takes #N and record ids", () => {
  it("#N rolls back the transaction of the record the timeline numbers N; a record id its transaction", () => {
    const c = conflictedRun()
    writeAndApply(c.ws, "x.txt")
    writeAndApply(c.ws, "y.txt")
    const [first, second, third] = recordsOf(c.ws)
    const byOrdinal = cliJson(["rollback", `#${second!.commitOrdinal}`, "--workspace", c.ws])
    expect(byOrdinal.status, byOrdinal.stderr).toBe(0)
    expect(byOrdinal.json.record.links.rollbackOf).toBe(second!.transactionId)
    expect(textAt(c.ws, "x.txt")).toBeUndefined()
    expect(textAt(c.ws, "y.txt")).toBe("y\n")

    const byRecord = cliJson(["rollback", short8(third!.recordId), "--workspace", c.ws])
    expect(byRecord.status, byRecord.stderr).toBe(0)
    expect(byRecord.json.record.links.rollbackOf).toBe(third!.transactionId)
    const whole = cliJson(["rollback", first!.recordId, "--workspace", c.ws])
    expect(whole.json.record.links.rollbackOf).toBe(first!.transactionId)
    expect(textAt(c.ws, "m/a.txt")).toBe("a\n")

    const before = workspaceTree(c.ws)
    const none = cliJson(["rollback", "#999", "--workspace", c.ws])
    expect(none.status).toBe(1)
    expect(none.json).toMatchObject({ ok: false, error: { code: "not_found" } })
    expect(none.json.error.message).toContain("forkjoin history timeline")
    expect(workspaceTree(c.ws)).toEqual(before)
  })
})

/** Adds `name` holding its own stem through `forkjoin apply`. */
const writeAndApply = (ws: string, name: string) => {
  const r = runCli(["apply", "--workspace", ws, "--json"], { stdin: patch(`*** Add File: ${name}`, `+${name.split(".")[0]}`) })
  expect(r.status, r.stderr).toBe(0)
  return json(r.stdout)
}

describe("apply says how to undo it", () => {
  it("prints undo: forkjoin rollback <short id>, and that command undoes the patch", () => {
    const c = conflictedRun()
    const r = runCli(["apply", "--workspace", c.ws], { stdin: patch("*** Add File: new.txt", "+n") })
    expect(r.status, r.stderr).toBe(0)
    const undo = /^undo: forkjoin rollback (patch:[0-9a-f]{8})$/m.exec(r.stdout)
    expect(undo, r.stdout).not.toBeNull()
    const record = recordsOf(c.ws).at(-1)!
    expect(short8(record.transactionId)).toBe(undo![1])
    const rolled = runCli(["rollback", undo![1]!, "--workspace", c.ws])
    expect(rolled.status, rolled.stderr).toBe(0)
    expect(textAt(c.ws, "new.txt")).toBeUndefined()
    // --json: the record carries the whole transaction id.
    expect(writeAndApply(c.ws, "z.txt").record.transactionId).toMatch(/^patch:[0-9a-f]{8}-[0-9a-f]{4}-/)
  })
})

describe("conflicts --open", () => {
  it("lists only the open conflicts; without it, resolved ones too", () => {
    const c = conflictedRun()
    const open = cliJson(["conflicts", "--open", "--workspace", c.ws])
    expect(open.status, open.stderr).toBe(0)
    expect(open.json.conflicts.map((x: { conflictId: string }) => x.conflictId)).toEqual([c.conflictId])
    expect(cliJson(["resolve", c.conflictId, "--discard", "--workspace", c.ws]).status).toBe(0)
    expect(cliJson(["conflicts", "--open", "--workspace", c.ws]).json.conflicts).toEqual([])
    expect(runCli(["conflicts", "--open", "--workspace", c.ws]).stdout).toBe("No open conflicts.\n")
    const all = cliJson(["conflicts", "--workspace", c.ws])
    expect(all.json.conflicts.map((x: { status: string }) => x.status)).toEqual(["resolved"])
    expect(runCli(["conflicts", "--help"]).stdout).toContain("--open")
  })
})
