/**
 * Finding records through the built CLI: the local user's `history timeline` shows every
 * thread's records (a run's children and `apply --thread X` included) while `--thread` still
 * scopes; `history threads` lists the threads with their counts and makers; `forkjoin runs`
 * lists a run with its children; an empty timeline says where the records are, or that there
 * are none yet.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, json, makeSandbox, patch, removeSandboxes, runCli, writeTree } from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const patchOf = (...body: ReadonlyArray<string>) => ["*** Begin Patch", ...body, "*** End Patch"].join("\n")

const editTask = (id: string, scope: ReadonlyArray<string>, actions: ReadonlyArray<unknown>) => ({
  id, mode: "transactional_write", writeScope: scope, maxAttempts: 1, timeoutMs: 60000, actions
})

/** A workspace after a joined two-child `forkjoin run` and an `apply --thread side`. */
const populated = () => {
  const { dir, ws } = makeSandbox()
  writeTree(ws, { "src/a/x.ts": "x\n", "src/b/z.ts": "z\n" })
  const planFile = path.join(dir, "plan.json")
  fs.writeFileSync(planFile, JSON.stringify({
    schemaVersion: 1,
    autonomy: "bold",
    tasks: [
      editTask("edit-a", ["src/a"], [{ apply_patch: { patch: patchOf("*** Update File: src/a/x.ts", "@@", "-x", "+X") } }, { finish: {} }]),
      editTask("edit-b", ["src/b"], [{ apply_patch: { patch: patchOf("*** Delete File: src/b/z.ts") } }, { finish: {} }])
    ]
  }))
  const run = runCli(["run", planFile, "--workspace", ws, "--json"])
  expect(run.status, run.stderr).toBe(0)
  const runId: string = json(run.stdout).runId
  const apply = runCli(["apply", "-", "--workspace", ws, "--thread", "side", "--json"], { stdin: patch("*** Add File: side.txt", "+s") })
  expect(apply.status, apply.stderr).toBe(0)
  return { ws, runId, applied: json(apply.stdout).record }
}

describe("finding records", () => {
  it("history timeline without --thread shows every thread's records; --thread still scopes", () => {
    const { applied, runId, ws } = populated()
    const all = runCli(["history", "timeline", "--workspace", ws, "--json"])
    expect(all.status, all.stderr).toBe(0)
    const items = json(all.stdout).items
    expect(items.map((r: any) => r.threadId)).toEqual([`${runId}/edit-a`, `${runId}/edit-b`, "side"])
    expect(items.map((r: any) => r.changes[0].path)).toEqual(["src/a/x.ts", "src/b/z.ts", "side.txt"])

    const side = json(runCli(["history", "timeline", "--workspace", ws, "--thread", "side", "--json"]).stdout)
    expect(side.items.map((r: any) => r.recordId)).toEqual([applied.recordId])
    // A thread answers for itself and its descendants only: another thread stays refused.
    const refused = runCli(["history", "timeline", "--workspace", ws, "--thread", "side", "--of", runId, "--json"])
    expect(refused.status).toBe(1)
    expect(json(refused.stdout).error.code).toBe("not_visible")
    // The local user sees every record's diff, whatever its thread.
    const diff = runCli(["history", "diff", applied.recordId, "--workspace", ws, "--json"])
    expect(diff.status, diff.stdout).toBe(0)
    // An empty scoped answer names the threads that have records.
    const empty = runCli(["history", "timeline", "--workspace", ws, "--thread", "cli"])
    expect(empty.status).toBe(0)
    expect(empty.stdout).toContain(
      `no records in thread cli; this workspace has records in threads ${runId}/edit-a, ${runId}/edit-b, side — run 'forkjoin history threads'\n`
    )
  })

  it("history threads lists both threads with their counts, parents and the run that made them", () => {
    const { runId, ws } = populated()
    const r = runCli(["history", "threads", "--workspace", ws, "--json"])
    expect(r.status, r.stderr).toBe(0)
    const page = json(r.stdout)
    const byId = Object.fromEntries(page.items.map((t: any) => [t.threadId, t]))
    expect(byId["side"]).toMatchObject({ parentThreadId: null, records: 1 })
    expect(byId[`${runId}/edit-a`]).toMatchObject({ parentThreadId: runId, records: 1 })
    expect(byId[`${runId}/edit-b`]).toMatchObject({ parentThreadId: runId, records: 1 })
    expect(typeof byId["side"].firstRecordAt).toBe("string")
    expect(page.origins[`${runId}/edit-a`]).toEqual({ runId, childId: "edit-a" })
    expect(page.nextCursor).toBe(null)

    // Paged like the other views.
    const first = json(runCli(["history", "threads", "--workspace", ws, "--json", "--limit", "2"]).stdout)
    expect(first.items).toHaveLength(2)
    const rest = json(runCli(["history", "threads", "--workspace", ws, "--json", "--cursor", first.nextCursor]).stdout)
    expect([...first.items, ...rest.items].map((t: any) => t.threadId)).toEqual(page.items.map((t: any) => t.threadId))

    const text = runCli(["history", "threads", "--workspace", ws])
    expect(text.stdout).toMatch(/^side {2}parent - {2}1 record\(s\)/m)
    // Text output shortens the run id's UUID to its first 8 characters.
    const shortRun = runId.slice(0, "run-".length + 8)
    expect(text.stdout).toContain(`${shortRun}/edit-a  parent ${shortRun}  1 record(s)`)
    expect(text.stdout).toContain(`made by run ${shortRun} (child edit-a)`)
    // --thread scopes the listing too.
    const scoped = json(runCli(["history", "threads", "--workspace", ws, "--thread", "side", "--json"]).stdout)
    expect(scoped.items.map((t: any) => t.threadId)).toEqual(["side"])
  })

  it("forkjoin runs lists the run with its children's outcomes", () => {
    const { runId, ws } = populated()
    const r = runCli(["runs", "--workspace", ws, "--json"])
    expect(r.status, r.stderr).toBe(0)
    const out = json(r.stdout)
    expect(out.runs).toHaveLength(1)
    expect(out.runs[0].agentId).toBe(null)
    expect(out.runs[0].run).toMatchObject({ runId, status: "applied", callerThreadId: "cli" })
    expect(out.runs[0].run.outcomes.map((o: any) => [o.childId, o.status])).toEqual([["edit-a", "applied"], ["edit-b", "applied"]])
    const text = runCli(["runs", "--workspace", ws])
    expect(text.stdout).toMatch(new RegExp(`^${runId.slice(0, "run-".length + 8)} {2}applied {2}\\S+ {2}started by thread cli {2}2 child\\(ren\\)\\n {4}edit-a applied, edit-b applied\\n`))
  })

  it("an empty workspace: the timeline and runs say what writes records", () => {
    const { ws } = makeSandbox()
    const none = runCli(["history", "timeline", "--workspace", ws])
    expect(none.status).toBe(1)
    expect(none.stderr).toContain("no records yet (forkjoin apply, run and agent write them)")
    // A history with records elsewhere only (a --db of its own here is empty: a refused apply).
    const refused = runCli(["apply", "-", "--workspace", ws, "--json"], { stdin: patch("*** Update File: missing.txt", "@@", "-a", "+b") })
    expect(refused.status).toBe(1)
    const empty = runCli(["history", "timeline", "--workspace", ws])
    expect(empty.status, empty.stderr).toBe(0)
    expect(empty.stdout).toMatch(/^no records yet: forkjoin apply, forkjoin run and forkjoin agent write them\n/)
    expect(json(runCli(["history", "timeline", "--workspace", ws, "--json"]).stdout).hint).toBe(
      "no records yet: forkjoin apply, forkjoin run and forkjoin agent write them"
    )
    expect(runCli(["runs", "--workspace", ws]).stdout).toBe("no runs yet: forkjoin run and forkjoin agent start them\n")
  })
})
