/**
 * A workspace whose history was written by a version with the looser id rule (a thread named
 * `my thread`, a turn `bob@laptop`, a non-ASCII run thread) still reads: the strict id rule
 * refuses such ids where they come in (flags, plans, requests), never in stored records.
 */
import Database from "better-sqlite3"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, defaultDb, removeSandboxes, runCli } from "./helpers.ts"
import { cliJson, editTask, makeCase, patchOf, planOf, runJoin } from "./joinHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

/** Every text cell of the history's id-bearing tables with `from` replaced by `to`, as an older version would have stored it. */
const rewriteIds = (ws: string, renames: ReadonlyArray<readonly [string, string]>): void => {
  const db = new Database(defaultDb(ws))
  try {
    const columns: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
      ["records", ["thread_id", "turn_id", "record_json"]],
      ["record_changes", ["thread_id"]],
      ["threads", ["thread_id", "parent_thread_id"]],
      ["merge_runs", ["run_json"]],
      ["merge_conflicts", ["conflict_json"]]
    ]
    for (const [from, to] of renames) {
      for (const [table, cols] of columns) {
        db.prepare(`UPDATE ${table} SET ${cols.map((c) => `${c} = replace(${c}, ?, ?)`).join(", ")}`).run(...cols.flatMap(() => [from, to]))
      }
    }
  } finally {
    db.close()
  }
}

describe("history written under the looser id rule", () => {
  it("still reads through history timeline, status and conflicts; the same id as a flag is refused", () => {
    const tasks = [
      editTask("a", ["m"], ["*** Update File: m/f.txt", "@@", "-line2", "+A2"]),
      editTask("b", ["m"], ["*** Update File: m/f.txt", "@@", "-line2", "+B2"])
    ]
    const j = makeCase({ "m/f.txt": "line1\nline2\nline3\n", "n.txt": "n\n" }, planOf(tasks))
    const applied = runCli(["apply", "--workspace", j.ws, "--thread", "old-thread", "--turn", "old-turn"], {
      stdin: patchOf("*** Update File: n.txt", "@@", "-n", "+N") + "\n"
    })
    expect(applied.status, applied.stderr).toBe(0)
    const { out } = runJoin(j, { args: ["--thread", "old-parent"] })
    expect(out.conflicts).toHaveLength(1)
    rewriteIds(j.ws, [["old-thread", "my thread"], ["old-turn", "bob@laptop"], ["old-parent", "caf\u00e9"]])

    const timeline = cliJson(["history", "timeline", "--workspace", j.ws])
    expect(timeline.stderr).toBe("")
    expect(timeline.json.ok).toBe(true)
    expect(timeline.json.items).toEqual(expect.arrayContaining([expect.objectContaining({ threadId: "my thread", turnId: "bob@laptop" })]))

    const status = cliJson(["status", "--workspace", j.ws])
    expect(status.json).toMatchObject({ ok: true })
    expect(status.json.openConflicts).toHaveLength(1)

    const conflicts = cliJson(["conflicts", "--workspace", j.ws])
    expect(conflicts.json).toMatchObject({ ok: true })
    expect(JSON.stringify(conflicts.json)).toContain(out.conflicts[0]!.conflictId)

    const refused = runCli(["apply", "--workspace", j.ws, "--thread", "my thread"], { stdin: patchOf("*** Add File: x.txt", "+x") + "\n" })
    expect(refused.status).not.toBe(0)
    expect(refused.stderr).toContain("request_invalid")
    expect(refused.stderr).toContain("the id \"my thread\" is refused")
  })
})
