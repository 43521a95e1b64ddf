/**
 * The join end to end through the built bundle (issue 10, SPEC §6.4–6.8): `forkjoin run`
 * joins scripted children into a real workspace, and every check reads the real files and the
 * real history: disjoint children, hunk-level auto-merge (LF, CRLF, no final newline, BOM,
 * byte for byte), convergent edits, conflicts held back and resolved (`conflicts`, `resolve`,
 * plan-level `resolve`), drift from outside edits, the atomic join, the verified join, an
 * injected write failure, rollback, changesets brought from another run, the merge plan and
 * `forkjoin demo`.
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, defaultDb, readHistory, removeSandboxes, runCli, workspaceTree } from "./helpers.ts"
import {
  asFiles,
  bytesAt,
  cliJson,
  copyChangeset,
  editTask,
  exportChangesets,
  filesAt,
  makeCase,
  mergeTransaction,
  outcomeOf,
  planOf,
  recordsOf,
  runJoin,
  textAt
} from "./joinHelpers.ts"

const kept: Array<string> = []
beforeAll(buildCli)
afterAll(() => {
  removeSandboxes()
  for (const dir of kept.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

/** `n` numbered lines `<prefix>1` … `<prefix>n`, each ending with `eol`. */
const lines = (prefix: string, n: number, eol = "\n"): string => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}${eol}`).join("")

/** The paths of a record's changes, sorted. */
const changedPaths = (r: { readonly changes: ReadonlyArray<{ readonly path: string; readonly moveFrom?: string }> }) =>
  r.changes.flatMap((c) => (c.moveFrom === undefined ? [c.path] : [c.moveFrom, c.path])).sort()

describe("disjoint children (item 1)", () => {
  it("applies each child as its own transaction below the caller's thread, and the timeline lists them", () => {
    const files = { "src/a/x.ts": "x\n", "src/a/old.ts": "old\n", "src/b/y.ts": "y1\ny2\n", "README.md": "readme\n" }
    const c = makeCase(files, planOf([
      editTask("edit-a", ["src/a"], ["*** Update File: src/a/x.ts", "@@", "-x", "+X", "*** Add File: src/a/new.ts", "+new", "*** Delete File: src/a/old.ts"]),
      editTask("edit-b", ["src/b"], ["*** Update File: src/b/y.ts", "@@", " y1", "-y2", "+Y2"])
    ]))
    const { status, stderr, out } = runJoin(c, { args: ["--thread", "lead"] })
    expect(status, stderr).toBe(0)
    expect(out.ok).toBe(true)
    expect(out.finish).toEqual({ ok: true })
    expect(out.mergeExecution).toEqual({
      status: "applied",
      outcomes: [
        { childId: "edit-a", status: "applied", transactionId: mergeTransaction(out.runId, "edit-a") },
        { childId: "edit-b", status: "applied", transactionId: mergeTransaction(out.runId, "edit-b") }
      ]
    })
    expect(filesAt(c.ws, ["src/a/x.ts", "src/a/new.ts", "src/a/old.ts", "src/b/y.ts", "README.md"])).toEqual(
      asFiles({ "src/a/x.ts": "X\n", "src/a/new.ts": "new\n", "src/a/old.ts": undefined, "src/b/y.ts": "y1\nY2\n", "README.md": "readme\n" })
    )
    // One record per child, in task order, in the child's thread, linked to the run.
    const records = recordsOf(c.ws)
    expect(records.map((r) => [r.transactionId, r.threadId, r.turnId, r.outcome, r.links.mergeRunId])).toEqual([
      [mergeTransaction(out.runId, "edit-a"), `${out.runId}/edit-a`, "join", "applied", out.runId],
      [mergeTransaction(out.runId, "edit-b"), `${out.runId}/edit-b`, "join", "applied", out.runId]
    ])
    expect(changedPaths(records[0]!)).toEqual(["src/a/new.ts", "src/a/old.ts", "src/a/x.ts"])
    expect(changedPaths(records[1]!)).toEqual(["src/b/y.ts"])
    // The run's thread is below --thread lead: lead's timeline (with descendants) lists both records.
    const lead = cliJson(["history", "timeline", "--workspace", c.ws, "--thread", "lead", "--descendants"])
    expect(lead.status, lead.stderr).toBe(0)
    expect(lead.json.items.map((i: any) => [i.transactionId, i.threadId])).toEqual([
      [mergeTransaction(out.runId, "edit-a"), `${out.runId}/edit-a`],
      [mergeTransaction(out.runId, "edit-b"), `${out.runId}/edit-b`]
    ])
    // ... and another caller's scope does not see them.
    const other = cliJson(["history", "timeline", "--workspace", c.ws, "--thread", "cli", "--descendants"])
    expect(other.status, other.stderr).toBe(0)
    expect(other.json.items).toEqual([])
  })
})

describe("one file, different places (item 2)", () => {
  it("merges the second child's hunks onto the first's byte for byte (LF, CRLF, no final newline, BOM); identical edits converge", () => {
    const files = {
      "m/lf.txt": lines("l", 8),
      "m/crlf.txt": lines("c", 8, "\r\n"),
      "m/nonl.txt": lines("n", 8).slice(0, -1),
      "m/bom.txt": "\uFEFF" + lines("b", 8),
      "m/conv.txt": "v1\nv2\n"
    }
    const top = editTask("top", ["m"], [
      "*** Update File: m/lf.txt", "@@", "-l1", "+L1-top",
      "*** Update File: m/crlf.txt", "@@", "-c1", "+C1-top",
      "*** Update File: m/nonl.txt", "@@", "-n1", "+N1-top",
      "*** Update File: m/bom.txt", "@@", "-b2", "+B2-top",
      "*** Update File: m/conv.txt", "@@", "-v1", "+V1"
    ])
    const bottom = editTask("bottom", ["m"], [
      "*** Update File: m/lf.txt", "@@", "-l8", "+L8-bottom", "+l9-bottom",
      "*** Update File: m/crlf.txt", "@@", "-c8", "+C8-bottom",
      "*** Update File: m/nonl.txt", "@@", "-n8", "+N8-bottom", "*** End of File",
      "*** Update File: m/bom.txt", "@@", "-b8", "+B8-bottom",
      "*** Update File: m/conv.txt", "@@", "-v1", "+V1"
    ])
    const same = editTask("same", ["m/conv.txt"], ["*** Update File: m/conv.txt", "@@", "-v1", "+V1"])
    const c = makeCase(files, planOf([top, bottom, same]))
    const { status, stderr, out } = runJoin(c)
    expect(status, stderr).toBe(0)
    expect(out.mergeExecution).toEqual({
      status: "applied",
      outcomes: [
        { childId: "top", status: "applied", transactionId: mergeTransaction(out.runId, "top") },
        {
          childId: "bottom",
          status: "auto_merged",
          transactionId: mergeTransaction(out.runId, "bottom"),
          autoMergedPaths: ["m/bom.txt", "m/crlf.txt", "m/lf.txt", "m/nonl.txt"]
        },
        // The third child's only edit is already live: nothing to write, no transaction.
        { childId: "same", status: "noop" }
      ]
    })
    const swap = (text: string, from: string, to: string) => {
      expect(text).toContain(from)
      return text.replace(from, to)
    }
    expect(bytesAt(c.ws, "m/lf.txt")).toEqual(Buffer.from(swap(swap(files["m/lf.txt"], "l1\n", "L1-top\n"), "l8\n", "L8-bottom\nl9-bottom\n")))
    expect(bytesAt(c.ws, "m/crlf.txt")).toEqual(Buffer.from(swap(swap(files["m/crlf.txt"], "c1\r\n", "C1-top\r\n"), "c8\r\n", "C8-bottom\r\n")))
    expect(bytesAt(c.ws, "m/nonl.txt")).toEqual(Buffer.from(swap(swap(files["m/nonl.txt"], "n1\n", "N1-top\n"), "\nn8", "\nN8-bottom")))
    expect(bytesAt(c.ws, "m/bom.txt")).toEqual(Buffer.from(swap(swap(files["m/bom.txt"], "b2\n", "B2-top\n"), "b8\n", "B8-bottom\n")))
    expect(bytesAt(c.ws, "m/bom.txt")!.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]))
    expect(textAt(c.ws, "m/conv.txt")).toBe("V1\nv2\n")
    // The second child's record merged onto the first's result; the converged path is not in it.
    const [first, second, ...rest] = recordsOf(c.ws)
    expect(rest).toEqual([])
    expect(changedPaths(second!)).toEqual(["m/bom.txt", "m/crlf.txt", "m/lf.txt", "m/nonl.txt"])
    for (const change of second!.changes) {
      expect(change.before?.hash).toBe(first!.changes.find((x) => x.path === change.path)?.after?.hash)
      expect(change.after?.hash).toBe(sha256(bytesAt(c.ws, change.path)!))
    }
  })
})

describe("conflicts (item 3)", () => {
  const FILES = { "m/f.txt": lines("f", 6), "m/other.txt": "o1\n" }
  const conflictPlan = planOf([
    editTask("first", ["m"], ["*** Update File: m/f.txt", "@@", "-f1", "+F1-first"]),
    editTask("second", ["m"], ["*** Update File: m/f.txt", "@@", "-f1", "+F1-second", "*** Update File: m/other.txt", "@@", "-o1", "+O1"])
  ])
  const firstVersion = FILES["m/f.txt"].replace("f1\n", "F1-first\n")
  const secondVersion = FILES["m/f.txt"].replace("f1\n", "F1-second\n")

  it("holds overlapping edits back unapplied, refuses finish, lists the conflict with markers, and resolves it with --apply", () => {
    const c = makeCase(FILES, conflictPlan)
    const { status, out } = runJoin(c)
    expect(status).toBe(1)
    expect(out.ok).toBe(false)
    expect(out.finish).toMatchObject({ ok: false, code: "unresolved_subagent_conflicts" })
    expect(out.mergeExecution.status).toBe("blocked")
    expect(outcomeOf(out, "first")).toEqual({ childId: "first", status: "applied", transactionId: mergeTransaction(out.runId, "first") })
    expect(outcomeOf(out, "second")).toEqual({ childId: "second", status: "conflicted_unresolved", conflictPaths: ["m/f.txt"] })
    const conflictId = `${out.runId}/second:m/f.txt`
    expect(out.conflicts).toEqual([{ conflictId, childId: "second", path: "m/f.txt", status: "open", reason: "overlapping_edits" }])
    // Nothing of the held-back child is written, not even its non-conflicting path.
    expect(textAt(c.ws, "m/f.txt")).toBe(firstVersion)
    expect(textAt(c.ws, "m/other.txt")).toBe("o1\n")
    expect(recordsOf(c.ws).map((r) => r.transactionId)).toEqual([mergeTransaction(out.runId, "first")])

    const listed = cliJson(["conflicts", "--workspace", c.ws, "--run", out.runId])
    expect(listed.status, listed.stderr).toBe(0)
    expect(listed.json.conflicts).toHaveLength(1)
    expect(listed.json.conflicts[0]).toMatchObject({ conflictId, runId: out.runId, childId: "second", path: "m/f.txt", status: "open", reason: "overlapping_edits" })
    expect(listed.json.conflicts[0].text).toBe("<<<<<<< workspace\nF1-first\n||||||| baseline\nf1\n=======\nF1-second\n>>>>>>> second\n" + lines("f", 6).slice(3))
    // The text view shows the same labelled markers.
    const shown = runCli(["conflicts", "--workspace", c.ws, "--run", out.runId])
    expect(shown.stdout).toContain("    <<<<<<< workspace\n    F1-first\n    ||||||| baseline\n    f1\n    =======\n    F1-second\n    >>>>>>> second\n")
    const status1 = cliJson(["status", "--workspace", c.ws])
    expect(status1.json.openConflicts).toEqual([{ conflictId, runId: out.runId, childId: "second", path: "m/f.txt" }])

    // --apply re-verifies: after the conflicting lines changed, the resolution is stale and writes nothing.
    fs.writeFileSync(path.join(c.ws, "m/f.txt"), firstVersion.replace("F1-first", "F1-by-hand"))
    const drifted = workspaceTree(c.ws)
    const stale = cliJson(["resolve", conflictId, "--apply", "--workspace", c.ws])
    expect(stale.status).toBe(1)
    expect(stale.json).toMatchObject({ ok: false, error: { code: "conflict_stale", paths: ["m/f.txt"] } })
    expect(workspaceTree(c.ws)).toEqual(drifted)

    fs.writeFileSync(path.join(c.ws, "m/f.txt"), firstVersion)
    const applied = cliJson(["resolve", conflictId, "--apply", "--workspace", c.ws])
    expect(applied.status, applied.stderr).toBe(0)
    expect(applied.json).toEqual({
      ok: true,
      transactionId: `conflict_resolution:${conflictId}`,
      outcome: { childId: "second", status: "resolved", transactionId: mergeTransaction(out.runId, "second") }
    })
    // The child's version of the conflicting file, then the rest of the child.
    expect(textAt(c.ws, "m/f.txt")).toBe(secondVersion)
    expect(textAt(c.ws, "m/other.txt")).toBe("O1\n")
    const records = recordsOf(c.ws)
    expect(records.map((r) => [r.transactionId, r.links.conflictId, changedPaths(r)])).toEqual([
      [mergeTransaction(out.runId, "first"), undefined, ["m/f.txt"]],
      [`conflict_resolution:${conflictId}`, conflictId, ["m/f.txt"]],
      [mergeTransaction(out.runId, "second"), undefined, ["m/other.txt"]]
    ])

    const again = cliJson(["resolve", conflictId, "--apply", "--workspace", c.ws])
    expect(again.status).toBe(1)
    expect(again.json).toMatchObject({ ok: false, error: { code: "conflict_already_resolved", paths: ["m/f.txt"] } })
    const unknown = cliJson(["resolve", `${out.runId}/second:m/nope.txt`, "--discard", "--workspace", c.ws])
    expect(unknown.status).toBe(1)
    expect(unknown.json).toMatchObject({ ok: false, error: { code: "unknown_conflict" } })
    expect(recordsOf(c.ws)).toHaveLength(3)

    // With every conflict closed, finishing the run passes.
    const resumed = runCli(["run", "--resume", out.runId, "--workspace", c.ws, "--json"])
    expect(resumed.status, resumed.stderr).toBe(0)
    expect(JSON.parse(resumed.stdout)).toMatchObject({ ok: true, finish: { ok: true }, mergeExecution: { status: "applied" } })
  })

  it("--discard keeps the live file and drops the child; --content FILE writes the file", () => {
    const files = { "m/p.txt": lines("p", 4), "m/q.txt": lines("q", 4), "m/px.txt": "px\n" }
    const c = makeCase(files, planOf([
      editTask("base", ["m"], ["*** Update File: m/p.txt", "@@", "-p1", "+P1-base", "*** Update File: m/q.txt", "@@", "-q1", "+Q1-base"]),
      editTask("x", ["m"], ["*** Update File: m/p.txt", "@@", "-p1", "+P1-x", "*** Update File: m/px.txt", "@@", "-px", "+PX"]),
      editTask("y", ["m/q.txt"], ["*** Update File: m/q.txt", "@@", "-q1", "+Q1-y"])
    ]))
    const { status, out } = runJoin(c)
    expect(status).toBe(1)
    expect(out.mergeExecution.outcomes.map((o) => [o.childId, o.status])).toEqual([["base", "applied"], ["x", "conflicted_unresolved"], ["y", "conflicted_unresolved"]])
    const afterJoin = workspaceTree(c.ws)

    const discarded = cliJson(["resolve", `${out.runId}/x:m/p.txt`, "--discard", "--workspace", c.ws])
    expect(discarded.status, discarded.stderr).toBe(0)
    expect(discarded.json).toMatchObject({ ok: true, outcome: { childId: "x", status: "discarded" } })
    expect(discarded.json.transactionId).toBeUndefined()
    // Nothing written: the live file stays, and the child's other path is dropped with it.
    expect(workspaceTree(c.ws)).toEqual(afterJoin)
    expect(textAt(c.ws, "m/px.txt")).toBe("px\n")

    const merged = path.join(c.outside, "merged.txt")
    fs.writeFileSync(merged, "Q1-base+y\r\nno newline at the end")
    const content = cliJson(["resolve", `${out.runId}/y:m/q.txt`, "--content", merged, "--workspace", c.ws])
    expect(content.status, content.stderr).toBe(0)
    expect(content.json).toMatchObject({ ok: true, transactionId: `conflict_resolution:${out.runId}/y:m/q.txt`, outcome: { childId: "y", status: "resolved" } })
    expect(bytesAt(c.ws, "m/q.txt")).toEqual(fs.readFileSync(merged))
    expect(textAt(c.ws, "m/p.txt")).toBe(files["m/p.txt"].replace("p1", "P1-base"))

    const listed = cliJson(["conflicts", "--workspace", c.ws])
    expect(listed.json.conflicts.map((x: any) => [x.childId, x.status, x.resolution?.kind])).toEqual([["x", "resolved", "discard"], ["y", "resolved", "content"]])
    const status1 = cliJson(["status", "--workspace", c.ws])
    expect(status1.json.openConflicts).toEqual([])
  })

  it("plan-level resolve entries apply, discard and write content within one run", () => {
    const files = { "m/p.txt": lines("p", 3), "m/q.txt": lines("q", 3), "m/r.txt": lines("r", 3) }
    const c = makeCase(files, planOf([
      editTask("base", ["m"], ["*** Update File: m/p.txt", "@@", "-p1", "+P1-base", "*** Update File: m/q.txt", "@@", "-q1", "+Q1-base", "*** Update File: m/r.txt", "@@", "-r1", "+R1-base"]),
      editTask("a", ["m/p.txt"], ["*** Update File: m/p.txt", "@@", "-p1", "+P1-a"]),
      editTask("b", ["m/q.txt"], ["*** Update File: m/q.txt", "@@", "-q1", "+Q1-b"]),
      editTask("c", ["m/r.txt"], ["*** Update File: m/r.txt", "@@", "-r1", "+R1-c"])
    ], {
      resolve: [
        { childId: "a", resolution: "apply" },
        { childId: "b", path: "m/q.txt", resolution: "discard" },
        { childId: "c", resolution: "content", content: "R1 merged\r\n" }
      ]
    }))
    const { status, stderr, out } = runJoin(c)
    expect(status, stderr).toBe(0)
    expect(out.finish).toEqual({ ok: true })
    expect(out.mergeExecution.status).toBe("applied")
    expect(out.mergeExecution.outcomes.map((o) => [o.childId, o.status])).toEqual([["base", "applied"], ["a", "resolved"], ["b", "discarded"], ["c", "resolved"]])
    expect(out.conflicts.map((x) => [x.childId, x.path, x.status])).toEqual([["a", "m/p.txt", "resolved"], ["b", "m/q.txt", "resolved"], ["c", "m/r.txt", "resolved"]])
    expect(textAt(c.ws, "m/p.txt")).toBe(files["m/p.txt"].replace("p1", "P1-a"))
    expect(textAt(c.ws, "m/q.txt")).toBe(files["m/q.txt"].replace("q1", "Q1-base"))
    expect(textAt(c.ws, "m/r.txt")).toBe("R1 merged\r\n")
  })

  it("binary, delete-vs-edit, edit-vs-delete and add-vs-add of different content conflict; identical adds converge", () => {
    const files = { "m/bin.dat": "t1\nt2\nt3\n", "m/d.txt": "d1\nd2\n", "m/e.txt": "e1\ne2\n" }
    const c = makeCase(files, planOf([
      editTask("first", ["m"],
        ["*** Delete File: m/bin.dat"],
        ["*** Add File: m/bin.dat", "+t1", "+\u0000", "+t3", "*** Delete File: m/d.txt", "*** Update File: m/e.txt", "@@", "-e1", "+E1", "*** Add File: m/n.txt", "+one", "*** Add File: m/s.txt", "+same"]),
      editTask("second", ["m"],
        ["*** Update File: m/bin.dat", "@@", "-t3", "+T3", "*** Update File: m/d.txt", "@@", "-d2", "+D2", "*** Delete File: m/e.txt", "*** Add File: m/n.txt", "+two", "*** Add File: m/s.txt", "+same"])
    ]))
    const { status, out } = runJoin(c)
    expect(status).toBe(1)
    expect(outcomeOf(out, "first").status).toBe("applied")
    expect(outcomeOf(out, "second")).toEqual({ childId: "second", status: "conflicted_unresolved", conflictPaths: ["m/bin.dat", "m/d.txt", "m/e.txt", "m/n.txt"] })
    expect(out.conflicts.map((x) => [x.path, x.reason])).toEqual([
      ["m/bin.dat", "binary"],
      ["m/d.txt", "delete_vs_edit"],
      ["m/e.txt", "edit_vs_delete"],
      ["m/n.txt", "add_vs_add"]
    ])
    const firstOnly = { "m/bin.dat": Buffer.from("t1\n\u0000\nt3\n"), "m/d.txt": undefined, "m/e.txt": Buffer.from("E1\ne2\n"), "m/n.txt": Buffer.from("one\n"), "m/s.txt": Buffer.from("same\n") }
    for (const [p, bytes] of Object.entries(firstOnly)) expect(bytesAt(c.ws, p), p).toEqual(bytes)
    const listed = cliJson(["conflicts", "--workspace", c.ws])
    const text = (p: string): string => listed.json.conflicts.find((x: any) => x.path === p).text
    expect(text("m/n.txt")).toContain("<<<<<<< workspace\none\n")
    expect(text("m/n.txt")).toContain("=======\ntwo\n>>>>>>> second\n")
    expect(text("m/bin.dat")).toMatch(/binary/)
    expect(text("m/d.txt")).toMatch(/deleted/)

    const id = (p: string) => `${out.runId}/second:${p}`
    const merged = path.join(c.outside, "n.txt")
    fs.writeFileSync(merged, "one\ntwo\n")
    for (const [p, how] of [["m/bin.dat", ["--apply"]], ["m/d.txt", ["--discard"]], ["m/e.txt", ["--apply"]], ["m/n.txt", ["--content", merged]]] as const) {
      const r = cliJson(["resolve", id(p), ...how, "--workspace", c.ws])
      expect(r.status, `${p}: ${r.stderr}`).toBe(0)
    }
    // The child's version of the binary file, the deletion kept, the child's deletion applied,
    // the supplied content; the converged add needed nothing.
    expect(bytesAt(c.ws, "m/bin.dat")).toEqual(Buffer.from("t1\nt2\nT3\n"))
    expect(bytesAt(c.ws, "m/d.txt")).toBeUndefined()
    expect(bytesAt(c.ws, "m/e.txt")).toBeUndefined()
    expect(textAt(c.ws, "m/n.txt")).toBe("one\ntwo\n")
    expect(textAt(c.ws, "m/s.txt")).toBe("same\n")
    const final = cliJson(["conflicts", "--workspace", c.ws])
    expect(final.json.conflicts.map((x: any) => x.status)).toEqual(["resolved", "resolved", "resolved", "resolved"])
  })
})

/** Two children declaring the same scope; the later one edits a file the earlier one changed. */
const siblingPlan = planOf([
  editTask("a", ["src"], ["*** Update File: src/shared.ts", "@@", "-s1", "+S1-a", "*** Add File: src/a-new.ts", "+a", "*** Delete File: src/a-old.ts"]),
  editTask("b", ["src"], ["*** Update File: src/shared.ts", "@@", "-s6", "+S6-b", "*** Update File: src/b.ts", "@@", "-b", "+B"])
])
const SIBLING_FILES = { "src/shared.ts": lines("s", 6), "src/a-old.ts": "old\n", "src/b.ts": "b\n" }

describe("a later child merged onto an earlier sibling (item 4)", () => {
  it("applies the earlier child, merges the later one onto its result, and the caller's timeline shows both", () => {
    const c = makeCase(SIBLING_FILES, siblingPlan)
    const { status, stderr, out } = runJoin(c)
    expect(status, stderr).toBe(0)
    expect(out.mergePlan.overlaps).toEqual([{ path: "src/shared.ts", resultIds: ["a", "b"] }])
    expect(out.mergeExecution.outcomes).toEqual([
      { childId: "a", status: "applied", transactionId: mergeTransaction(out.runId, "a") },
      { childId: "b", status: "auto_merged", transactionId: mergeTransaction(out.runId, "b"), autoMergedPaths: ["src/shared.ts"] }
    ])
    expect(textAt(c.ws, "src/shared.ts")).toBe("S1-a\ns2\ns3\ns4\ns5\nS6-b\n")
    expect(textAt(c.ws, "src/b.ts")).toBe("B\n")
    expect(textAt(c.ws, "src/a-new.ts")).toBe("a\n")
    expect(bytesAt(c.ws, "src/a-old.ts")).toBeUndefined()
    // The default caller is 'cli': its timeline with descendants holds both children's records.
    const timeline = cliJson(["history", "timeline", "--workspace", c.ws, "--descendants"])
    expect(timeline.status, timeline.stderr).toBe(0)
    const items: Array<any> = timeline.json.items
    expect(items.map((i) => i.transactionId)).toEqual([mergeTransaction(out.runId, "a"), mergeTransaction(out.runId, "b")])
    const before = items[1].changes.find((x: any) => x.path === "src/shared.ts").before.hash
    expect(before).toBe(items[0].changes.find((x: any) => x.path === "src/shared.ts").after.hash)
  })
})

describe("baseline drift (item 5)", () => {
  it("refuses a child whose files changed outside between the children and the join; siblings are unaffected", () => {
    const files = { "m/a.txt": "a\n", "m/b.txt": "b\n", "m/c.txt": "c\n", "m/d.txt": "d\n" }
    const c = makeCase(files, planOf([
      editTask("ok", ["m/a.txt"], ["*** Update File: m/a.txt", "@@", "-a", "+A"]),
      editTask("drift-write", ["m/b.txt", "m/c.txt"], ["*** Update File: m/b.txt", "@@", "-b", "+B", "*** Update File: m/c.txt", "@@", "-c", "+C"]),
      editTask("drift-delete", ["m/d.txt"], ["*** Update File: m/d.txt", "@@", "-d", "+D"]),
      editTask("drift-add", ["m/e.txt"], ["*** Add File: m/e.txt", "+child"]),
      editTask("later", ["m/f.txt"], ["*** Add File: m/f.txt", "+f"])
    ], {
      between: [{ write: { path: "m/b.txt", content: "outside\n" } }, { delete: { path: "m/d.txt" } }, { write: { path: "m/e.txt", content: "outside e\n" } }]
    }))
    const { status, out } = runJoin(c)
    expect(status).toBe(1)
    expect(out.mergeExecution.status).toBe("partial")
    expect(out.finish).toMatchObject({ ok: false, code: "merge_partial" })
    expect(out.mergeExecution.outcomes.map((o) => [o.childId, o.status, o.driftPaths, o.transactionId])).toEqual([
      ["ok", "applied", undefined, mergeTransaction(out.runId, "ok")],
      ["drift-write", "baseline_drift", ["m/b.txt"], undefined],
      ["drift-delete", "baseline_drift", ["m/d.txt"], undefined],
      ["drift-add", "baseline_drift", ["m/e.txt"], undefined],
      ["later", "applied", undefined, mergeTransaction(out.runId, "later")]
    ])
    // Nothing of a drifted child is written, not even its clean path (m/c.txt).
    expect(filesAt(c.ws, ["m/a.txt", "m/b.txt", "m/c.txt", "m/d.txt", "m/e.txt", "m/f.txt"])).toEqual(
      asFiles({ "m/a.txt": "A\n", "m/b.txt": "outside\n", "m/c.txt": "c\n", "m/d.txt": undefined, "m/e.txt": "outside e\n", "m/f.txt": "f\n" })
    )
    expect(recordsOf(c.ws).filter((r) => r.outcome === "applied").map((r) => r.transactionId)).toEqual([mergeTransaction(out.runId, "ok"), mergeTransaction(out.runId, "later")])
  })
})

describe("atomic join (item 6)", () => {
  it("applies every child in one transaction subagent_merge:<run-id>", () => {
    const files = { "m/a.txt": "a\n", "m/b.txt": "b\n", "m/c.txt": "c\n" }
    const c = makeCase(files, planOf([
      editTask("one", ["m"], ["*** Update File: m/a.txt", "@@", "-a", "+A", "*** Add File: m/new.txt", "+new"]),
      editTask("two", ["m/b.txt", "m/c.txt"], ["*** Delete File: m/b.txt", "*** Update File: m/c.txt", "@@", "-c", "+C"])
    ], { atomic: true }))
    const { status, stderr, out } = runJoin(c)
    expect(status, stderr).toBe(0)
    const txn = mergeTransaction(out.runId)
    expect(out.mergeExecution).toEqual({
      status: "applied",
      outcomes: [
        { childId: "one", status: "applied", transactionId: txn },
        { childId: "two", status: "applied", transactionId: txn }
      ]
    })
    expect(filesAt(c.ws, ["m/a.txt", "m/b.txt", "m/c.txt", "m/new.txt"])).toEqual(asFiles({ "m/a.txt": "A\n", "m/b.txt": undefined, "m/c.txt": "C\n", "m/new.txt": "new\n" }))
    // One record for the whole join, in the run's thread, listing every child's paths.
    const records = recordsOf(c.ws)
    expect(records.map((r) => [r.transactionId, r.threadId, r.links.mergeRunId])).toEqual([[txn, out.runId, out.runId]])
    expect(changedPaths(records[0]!)).toEqual(["m/a.txt", "m/b.txt", "m/c.txt", "m/new.txt"])
  })

  it("merges two children's hunks of one file inside the one transaction", () => {
    const c = makeCase({ "m/a.txt": lines("a", 4) }, planOf([
      editTask("one", ["m"], ["*** Update File: m/a.txt", "@@", "-a1", "+A1"]),
      editTask("two", ["m"], ["*** Update File: m/a.txt", "@@", "-a4", "+A4"])
    ], { atomic: true }))
    const { status, out } = runJoin(c)
    const txn = mergeTransaction(out.runId)
    expect(out.mergeExecution.outcomes).toEqual([
      { childId: "one", status: "applied", transactionId: txn },
      { childId: "two", status: "auto_merged", transactionId: txn, autoMergedPaths: ["m/a.txt"] }
    ])
    expect(status).toBe(0)
    expect(textAt(c.ws, "m/a.txt")).toBe("A1\na2\na3\nA4\n")
    expect(recordsOf(c.ws).map((r) => r.transactionId)).toEqual([txn])
  })

  /** Three children, atomic; the third cannot be applied, so none is: files as `expected`, no record. */
  const refusedAtomically = (extra: Record<string, unknown>, third: unknown, thirdStatus: string, expected: Record<string, string>) => {
    const files = { "m/a.txt": lines("a", 4), "m/b.txt": "b\n", "m/c.txt": "c\n" }
    const c = makeCase(files, planOf([
      editTask("one", ["m"], ["*** Update File: m/a.txt", "@@", "-a1", "+A1-one"]),
      editTask("two", ["m/b.txt"], ["*** Update File: m/b.txt", "@@", "-b", "+B"]),
      third
    ], { atomic: true, ...extra }))
    const { status, out } = runJoin(c)
    expect(status).toBe(1)
    expect(filesAt(c.ws, ["m/a.txt", "m/b.txt", "m/c.txt"])).toEqual(asFiles(expected))
    expect(fs.readdirSync(path.join(c.ws, "m")).sort()).toEqual(["a.txt", "b.txt", "c.txt"])
    expect(recordsOf(c.ws).filter((r) => r.outcome === "applied")).toEqual([])
    const outcomes = out.mergeExecution.outcomes
    expect(outcomes.map((o) => o.childId)).toEqual(["one", "two", "three"])
    for (const o of outcomes.slice(0, 2)) {
      expect(o.status).not.toMatch(/^(applied|auto_merged)$/)
      expect(o.transactionId).toBeUndefined()
    }
    expect(outcomes[2]!.status).toBe(thirdStatus)
  }

  it("applies none when one child conflicts: every file unchanged", () => {
    refusedAtomically(
      {},
      editTask("three", ["m/a.txt"], ["*** Update File: m/a.txt", "@@", "-a1", "+A1-three"]),
      "conflicted_unresolved",
      { "m/a.txt": lines("a", 4), "m/b.txt": "b\n", "m/c.txt": "c\n" }
    )
  })

  it("applies none when one child drifted: every file unchanged but the outside edit", () => {
    refusedAtomically(
      { between: [{ write: { path: "m/c.txt", content: "outside\n" } }] },
      editTask("three", ["m/c.txt"], ["*** Update File: m/c.txt", "@@", "-c", "+C"]),
      "baseline_drift",
      { "m/a.txt": lines("a", 4), "m/b.txt": "b\n", "m/c.txt": "outside\n" }
    )
  })
})

describe("verified join (item 7)", () => {
  // Records what each verification saw (in a file outside the workspace) and fails when
  // m/v.txt holds BAD, so exactly one child's change fails it.
  const CHECK = [
    "const fs = require('fs')",
    "const read = (p) => (fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : null)",
    "const seen = { x: read('m/x.txt'), v: read('m/v.txt'), y: read('m/y.txt') }",
    "fs.appendFileSync(process.argv[1], JSON.stringify(seen) + '\\n')",
    "if ((seen.v ?? '').includes('BAD')) { console.log('m/v.txt holds BAD'); process.exit(3) }",
    "console.log('all good')"
  ].join("\n")

  it("rolls back exactly the child whose change fails the command; later children are verified on top of the passing ones", () => {
    const files = { "m/x.txt": "x\n", "m/v.txt": "v1\r\nv2\r\n", "m/y.txt": "y\n" }
    const c0 = makeCase(files, {})
    const seenFile = path.join(c0.outside, "seen.jsonl")
    fs.writeFileSync(c0.planFile, JSON.stringify(planOf([
      editTask("fine", ["m/x.txt"], ["*** Update File: m/x.txt", "@@", "-x", "+X"]),
      editTask("breaks", ["m/v.txt"], ["*** Update File: m/v.txt", "@@", "-v2", "+v2 BAD", "*** End of File"]),
      editTask("after", ["m/y.txt"], ["*** Update File: m/y.txt", "@@", "-y", "+Y"])
    ], { verify: { command: [process.execPath, "-e", CHECK, seenFile], timeoutMs: 20000 } })))
    const { status, out } = runJoin(c0)
    expect(status).toBe(1)
    expect(out.mergeExecution.status).toBe("partial")
    expect(out.mergeExecution.outcomes.map((o) => [o.childId, o.status, o.transactionId])).toEqual([
      ["fine", "applied", mergeTransaction(out.runId, "fine")],
      ["breaks", "verification_failed_rolled_back", mergeTransaction(out.runId, "breaks")],
      ["after", "applied", mergeTransaction(out.runId, "after")]
    ])
    expect(outcomeOf(out, "breaks").reason).toMatch(/exit 3.*rolled back.*verify\.log/)
    // The failing child's file is restored byte for byte; the others stay.
    expect(bytesAt(c0.ws, "m/v.txt")).toEqual(Buffer.from("v1\r\nv2\r\n"))
    expect(textAt(c0.ws, "m/x.txt")).toBe("X\n")
    expect(textAt(c0.ws, "m/y.txt")).toBe("Y\n")
    const seen = fs.readFileSync(seenFile, "utf8").trim().split("\n").map((l) => JSON.parse(l))
    expect(seen).toEqual([
      { x: "X\n", v: "v1\r\nv2\r\n", y: "y\n" },
      { x: "X\n", v: "v1\r\nv2 BAD\r\n", y: "y\n" },
      { x: "X\n", v: "v1\r\nv2\r\n", y: "Y\n" }
    ])
    const log = path.join(c0.ws, ".forkjoin", "runs", out.runId, "subagents", "breaks", "verify.log")
    expect(fs.readFileSync(log, "utf8")).toMatch(/m\/v\.txt holds BAD[\s\S]*exit 3/)
    expect(fs.readFileSync(path.join(c0.ws, ".forkjoin", "runs", out.runId, "subagents", "fine", "verify.log"), "utf8")).toMatch(/all good[\s\S]*passed/)
    expect(recordsOf(c0.ws).map((r) => [r.transactionId, r.links.rollbackOf])).toEqual([
      [mergeTransaction(out.runId, "fine"), undefined],
      [mergeTransaction(out.runId, "breaks"), undefined],
      [`rollback:${mergeTransaction(out.runId, "breaks")}`, mergeTransaction(out.runId, "breaks")],
      [mergeTransaction(out.runId, "after"), undefined]
    ])
  })

  it("a command that outlives its timeout fails verification and rolls the child back", () => {
    const files = { "m/a.txt": "a\n" }
    // The command notes its pid, and leaves a mark if it lives to its own end (30 s).
    const marks = fs.mkdtempSync(path.join(os.tmpdir(), "fj-verify-"))
    const [pidFile, ended] = [path.join(marks, "pid"), path.join(marks, "ended")]
    const script = `const fs = require("fs"); fs.writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setTimeout(() => fs.writeFileSync(${JSON.stringify(ended)}, ""), 30000)`
    const c = makeCase(files, planOf([editTask("slow", ["m"], ["*** Update File: m/a.txt", "@@", "-a", "+A", "*** Add File: m/new.txt", "+n"])], {
      verify: { command: [process.execPath, "-e", script], timeoutMs: 300 }
    }))
    const before = workspaceTree(c.ws)
    const { status, out } = runJoin(c)
    // Killed at its timeout, not waited for: it is gone and never reached its end.
    expect(() => process.kill(Number(fs.readFileSync(pidFile, "utf8")), 0)).toThrow()
    expect(fs.existsSync(ended)).toBe(false)
    fs.rmSync(marks, { recursive: true, force: true })
    expect(status).toBe(1)
    expect(out.mergeExecution.status).toBe("failed")
    expect(outcomeOf(out, "slow")).toMatchObject({ status: "verification_failed_rolled_back", transactionId: mergeTransaction(out.runId, "slow") })
    expect(outcomeOf(out, "slow").reason).toMatch(/timed out after 300 ms/)
    expect(workspaceTree(c.ws)).toEqual(before)
  })
})

describe("a write failing mid-apply (item 8)", () => {
  it("merge:write-fail restores that child's files and names the failed path; siblings are applied", () => {
    const files = { "m/a.txt": "a\n", "m/b.txt": "b\n", "m/c.txt": "c\n", "m/d.txt": "d\n" }
    const c = makeCase(files, planOf([
      editTask("first", ["m/a.txt"], ["*** Update File: m/a.txt", "@@", "-a", "+A"]),
      editTask("mid", ["m"], ["*** Update File: m/b.txt", "@@", "-b", "+B", "*** Update File: m/c.txt", "@@", "-c", "+C", "*** Add File: m/new.txt", "+new"]),
      editTask("last", ["m/d.txt"], ["*** Update File: m/d.txt", "@@", "-d", "+D"])
    ]))
    // Its writes go in path order (b, c, new): the third fails after two files were replaced.
    const { status, out } = runJoin(c, { env: { FORKJOIN_FAULT: "merge:write-fail:mid:3" } })
    expect(status).toBe(1)
    expect(out.mergeExecution.status).toBe("partial")
    expect(out.mergeExecution.outcomes.map((o) => [o.childId, o.status])).toEqual([["first", "applied"], ["mid", "apply_failed_rolled_back"], ["last", "applied"]])
    const mid = outcomeOf(out, "mid")
    expect(mid.failedPath).toBe("m/new.txt")
    expect(mid.reason).toMatch(/EIO/)
    expect(mid.transactionId).toBeUndefined()
    expect(filesAt(c.ws, ["m/a.txt", "m/b.txt", "m/c.txt", "m/d.txt", "m/new.txt"])).toEqual(
      asFiles({ "m/a.txt": "A\n", "m/b.txt": "b\n", "m/c.txt": "c\n", "m/d.txt": "D\n", "m/new.txt": undefined })
    )
    expect(recordsOf(c.ws).filter((r) => r.outcome === "applied").map((r) => r.transactionId)).toEqual([mergeTransaction(out.runId, "first"), mergeTransaction(out.runId, "last")])
    // No temporary or backup file left beside the restored ones.
    expect(fs.readdirSync(path.join(c.ws, "m")).sort()).toEqual(["a.txt", "b.txt", "c.txt", "d.txt"])
  })
})

describe("rollback (item 9)", () => {
  it("undoes exactly one child, refuses with rollback_drift (--strict) while a later child changed its path, and refuses unknown transactions", () => {
    const c = makeCase(SIBLING_FILES, siblingPlan)
    const original = workspaceTree(c.ws)
    const { status, out } = runJoin(c)
    expect(status).toBe(0)
    const a = mergeTransaction(out.runId, "a")
    const b = mergeTransaction(out.runId, "b")
    const joined = workspaceTree(c.ws)

    const drift = cliJson(["rollback", a, "--workspace", c.ws, "--strict"])
    expect(drift.status).toBe(1)
    expect(drift.json).toEqual({
      ok: false,
      error: { code: "rollback_drift", paths: ["src/shared.ts"], message: expect.stringContaining(b), laterTransactionId: b }
    })
    expect(workspaceTree(c.ws)).toEqual(joined)

    const undoB = cliJson(["rollback", b, "--workspace", c.ws])
    expect(undoB.status, undoB.stderr).toBe(0)
    expect(undoB.json.record).toMatchObject({ transactionId: `rollback:${b}`, links: { rollbackOf: b }, outcome: "applied" })
    expect(changedPaths(undoB.json.record)).toEqual(["src/b.ts", "src/shared.ts"])
    // Exactly b's changes undone: a's stay.
    expect(textAt(c.ws, "src/shared.ts")).toBe("S1-a\ns2\ns3\ns4\ns5\ns6\n")
    expect(textAt(c.ws, "src/b.ts")).toBe("b\n")
    expect(textAt(c.ws, "src/a-new.ts")).toBe("a\n")

    const undoA = cliJson(["rollback", a, "--workspace", c.ws, "--thread", "lead"])
    expect(undoA.status, undoA.stderr).toBe(0)
    expect(undoA.json.record).toMatchObject({ transactionId: `rollback:${a}`, threadId: "lead", links: { rollbackOf: a } })
    expect(workspaceTree(c.ws)).toEqual(original)

    const unknown = cliJson(["rollback", `subagent_merge:${out.runId}/nobody`, "--workspace", c.ws])
    expect(unknown.status).toBe(1)
    expect(unknown.json).toMatchObject({ ok: false, error: { code: "unknown_transaction" } })
    expect(workspaceTree(c.ws)).toEqual(original)
    expect(recordsOf(c.ws).map((r) => r.transactionId)).toEqual([a, b, `rollback:${b}`, `rollback:${a}`])
  })
})

describe("changesets produced elsewhere (item 10)", () => {
  it("joins a changeset exported by another run's --export-only, copied with its blobs next to the plan", () => {
    const files = { "m/a.txt": lines("a", 3), "m/gone.txt": "gone\n", "bin/blob.dat": "keep\n" }
    const exported = exportChangesets(files, [editTask("ext", ["m"], ["*** Update File: m/a.txt", "@@", "-a2", "+A2", "*** Add File: m/added.txt", "+added", "*** Delete File: m/gone.txt"])])
    // --export-only never writes the workspace.
    expect(workspaceTree(exported.source.ws)).toEqual(exported.before)
    const c = makeCase(files, planOf([
      { id: "ext", mode: "transactional_write", writeScope: ["m"], changesetFile: "cs/changeset.json" },
      editTask("local", ["bin"], ["*** Update File: bin/blob.dat", "@@", "-keep", "+kept"])
    ]))
    copyChangeset(exported.namespace("ext"), c.dir, "cs")
    const { status, stderr, out } = runJoin(c)
    expect(status, stderr).toBe(0)
    expect(out.mergeExecution.outcomes).toEqual([
      { childId: "ext", status: "applied", transactionId: mergeTransaction(out.runId, "ext") },
      { childId: "local", status: "applied", transactionId: mergeTransaction(out.runId, "local") }
    ])
    expect(out.mergePlan.changesetResultIds).toEqual(["ext", "local"])
    expect(out.results.map((r) => r.id)).toEqual(["local"])
    expect(textAt(c.ws, "m/a.txt")).toBe("a1\nA2\na3\n")
    expect(textAt(c.ws, "m/added.txt")).toBe("added\n")
    expect(bytesAt(c.ws, "m/gone.txt")).toBeUndefined()
    expect(textAt(c.ws, "bin/blob.dat")).toBe("kept\n")
    // The copy is staged into the child's own namespace of this run.
    expect(fs.existsSync(path.join(c.ws, ".forkjoin", "runs", out.runId, "subagents", "ext", "changeset.json"))).toBe(true)
  })
})

describe("forkjoin demo (item 11)", () => {
  // How fast it is gets timed as a whole process (farm-bench), never bounded in a test.
  it("--json --keep: the kept workspace holds what the JSON and its history say", () => {
    const r = cliJson(["demo", "--keep"])
    if (typeof r.json?.workspace === "string") kept.push(r.json.workspace)
    expect(r.status, r.stderr).toBe(0)
    const ws: string = r.json.workspace
    const runId: string = r.json.runId
    expect(r.json.mergeExecution.outcomes.map((o: any) => [o.childId, o.status])).toEqual([
      ["docs", "applied"],
      ["tests", "applied"],
      ["safe-div", "applied"],
      ["mean-empty", "auto_merged"],
      ["div-int", "resolved"]
    ])
    expect(r.json.finish).toEqual({ ok: true })
    expect(r.json.resolvedAs).toBe(`conflict_resolution:${runId}/div-int:src/math.ts`)
    expect(r.json.rollback).toBe(`rollback:${mergeTransaction(runId, "docs")}`)
    // The timeline it printed is the workspace's history, record for record.
    const records = readHistory(defaultDb(ws)).records as ReadonlyArray<any>
    expect(r.json.timeline).toEqual(records.map((x) => ({ ordinal: x.commitOrdinal, transactionId: x.transactionId })))
    expect(records.map((x) => x.transactionId)).toEqual(expect.arrayContaining([
      mergeTransaction(runId, "docs"), mergeTransaction(runId, "tests"), mergeTransaction(runId, "safe-div"), mergeTransaction(runId, "mean-empty"),
      r.json.resolvedAs, r.json.rollback
    ]))
    // Every path's last recorded state is what is on disk.
    const last = new Map<string, string | undefined>()
    for (const rec of records) {
      for (const ch of rec.changes) {
        if (ch.moveFrom !== undefined) last.set(ch.moveFrom, undefined)
        last.set(ch.path, ch.after?.hash)
      }
    }
    expect(last.size).toBeGreaterThan(0)
    for (const [p, hash] of last) {
      const bytes = bytesAt(ws, p)
      expect(bytes === undefined ? undefined : sha256(bytes), p).toBe(hash)
    }
    // The files themselves: docs rolled back, tests added, both math edits and the merged div.
    expect(textAt(ws, "README.md")).toBe("# sample\n\nA tiny app to show forkjoin.\n")
    expect(bytesAt(ws, "docs/changelog.md")).toBeUndefined()
    expect(textAt(ws, "test/math.test.ts")).toContain("add(2, 2) !== 4")
    const math = textAt(ws, "src/math.ts")!
    expect(math).toContain("if (b === 0) throw new RangeError(\"division by zero\")\n  return Math.trunc(a / b)\n}")
    expect(math).toContain("(xs.length === 0 ? 0 : xs.reduce(add, 0) / xs.length)")
    expect(math).not.toMatch(/^(<<<<<<<|=======|>>>>>>>)/m)
  })
})

describe("merge plan (item 12)", () => {
  it("lists read-only, mutating, exported and missing changesets, scopes, and overlaps from the paths actually touched", () => {
    const files = { "src/a.txt": lines("a", 5), "src/b.txt": "b\n", "lib/l.txt": "l\n" }
    const c = makeCase(files, planOf([
      { id: "look", mode: "read_only", actions: [{ list_dir: { path: "src" } }, { read_file: { path: "src/a.txt" } }, { finish: {} }] },
      editTask("w1", ["src"], ["*** Update File: src/a.txt", "@@", "-a1", "+A1"]),
      // Same declared scope as w1, disjoint files: no overlap.
      editTask("w2", ["src"], ["*** Update File: src/b.txt", "@@", "-b", "+B"]),
      // A narrower declared scope, but it touches w1's file: an overlap.
      editTask("w3", ["src/a.txt"], ["*** Update File: src/a.txt", "@@", "-a5", "+A5"]),
      // Never finishes: no changeset.
      { id: "w4", mode: "transactional_write", writeScope: ["lib"], actions: [{ apply_patch: { patch: ["*** Begin Patch", "*** Update File: lib/l.txt", "@@", "-l", "+L", "*** End Patch"].join("\n") } }] }
    ]))
    const { status, out } = runJoin(c)
    expect(status).toBe(1)
    expect(out.mergePlan).toEqual({
      strategy: "transactional_parent_merge",
      requiresParentMerge: true,
      readOnlyResultIds: ["look"],
      mutatingResultIds: ["w1", "w2", "w3", "w4"],
      changesetResultIds: ["w1", "w2", "w3"],
      missingChangesetResultIds: ["w4"],
      writeScopes: { w1: ["src"], w2: ["src"], w3: ["src/a.txt"], w4: ["lib"] },
      overlaps: [{ path: "src/a.txt", resultIds: ["w1", "w3"] }]
    })
    expect(out.mergeExecution.outcomes.map((o) => [o.childId, o.status])).toEqual([["w1", "applied"], ["w2", "applied"], ["w3", "auto_merged"], ["w4", "missing_changeset"]])
    expect(out.mergeExecution.status).toBe("partial")
    expect(textAt(c.ws, "src/a.txt")).toBe("A1\na2\na3\na4\nA5\n")
    expect(textAt(c.ws, "lib/l.txt")).toBe("l\n")
  })

  it("a plan of read-only children has the read_only strategy and writes nothing", () => {
    const c = makeCase({ "src/a.txt": "a\n" }, planOf([
      { id: "r1", mode: "read_only", actions: [{ read_file: { path: "src/a.txt" } }, { finish: {} }] },
      { id: "r2", mode: "read_only", actions: [{ apply_patch: { patch: ["*** Begin Patch", "*** Delete File: src/a.txt", "*** End Patch"].join("\n") } }, { finish: {} }] }
    ]))
    const before = workspaceTree(c.ws)
    const { status, stderr, out } = runJoin(c)
    expect(status, stderr).toBe(0)
    expect(out.mergePlan).toEqual({
      strategy: "read_only",
      requiresParentMerge: false,
      readOnlyResultIds: ["r1", "r2"],
      mutatingResultIds: [],
      changesetResultIds: [],
      missingChangesetResultIds: [],
      writeScopes: {},
      overlaps: []
    })
    expect(out.mergeExecution).toEqual({ status: "applied", outcomes: [] })
    expect(workspaceTree(c.ws)).toEqual(before)
    expect(recordsOf(c.ws)).toEqual([])
  })
})
