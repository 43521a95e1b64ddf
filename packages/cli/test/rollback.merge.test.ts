/**
 * Reverse-merge rollback through the built CLI, each step its own process: rolling back an
 * older patch after later work on the same file merges the later work in and undoes only that
 * patch; `--strict` refuses as before; where the merge is not clean nothing is written and the
 * paths are held as `rollback:<transaction>:<path>` conflicts that a later process lists and
 * resolves, the last resolution applying the whole rollback as one transaction; a resolution
 * the live file no longer fits is refused, and asking for the rollback again merges afresh.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, makeSandbox, removeSandboxes, runCli, workspaceTree, writeTree } from "./helpers.ts"
import { cliJson, recordsOf, textAt } from "./joinHelpers.ts"
import { apply, at, TEN } from "./rollbackHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)



/** A workspace where patch `first` changed line 2 of f.txt (and line 1 of g.txt), then `later` edited f.txt again. */
const setup = (laterLine: number) => {
  const { ws } = makeSandbox()
  writeTree(ws, { "f.txt": TEN, "g.txt": TEN, "h.txt": TEN })
  const first = apply(ws, "*** Update File: f.txt", "@@", " 1", "-2", "+two", "*** Update File: g.txt", "@@", "-1", "+one", "*** Update File: h.txt", "@@", " 1", "-2", "+two")
  const later = apply(
    ws,
    "*** Update File: f.txt",
    "@@",
    laterLine === 2 ? " 1" : ` ${laterLine - 1}`,
    laterLine === 2 ? "-two" : `-${laterLine}`,
    `+LATER`,
    "*** Update File: g.txt",
    "@@",
    " 9",
    "-10",
    "+ten"
  )
  return { ws, first, later }
}

describe("forkjoin rollback merges later work on the same file", () => {
  it("restores only the rolled-back transaction's lines after a later disjoint edit, as one rollback:<id> record", () => {
    const { first, later, ws } = setup(9)
    const r = cliJson(["rollback", first, "--workspace", ws])
    expect(r.status, r.stderr).toBe(0)
    expect(r.json.record).toMatchObject({ transactionId: `rollback:${first}`, links: { rollbackOf: first }, outcome: "applied" })
    expect(r.json.mergedPaths).toEqual(["f.txt", "g.txt"])
    // The record says how each merged path was made; a plain restore has no label.
    expect(r.json.record.changes.map((c: any) => [c.path, c.merge])).toEqual([
      ["f.txt", { method: "line" }],
      ["g.txt", { method: "line" }],
      ["h.txt", undefined]
    ])
    // The later edits (f line 9, g line 10) stay; the first patch's lines are back.
    expect(textAt(ws, "f.txt")).toBe(at(TEN, 9, "LATER"))
    expect(textAt(ws, "g.txt")).toBe(at(TEN, 10, "ten"))
    expect(textAt(ws, "h.txt")).toBe(TEN)
    expect(recordsOf(ws).map((x) => x.transactionId)).toEqual([first, later, `rollback:${first}`])
  })

  it("merges by syntax where lines collide: a later import next to the rolled-back one stays, labelled structured", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "m.ts": 'import { a } from "./a"\nimport { b } from "./b"\n\nexport const x = a + b\n' })
    const first = apply(ws, "*** Update File: m.ts", "@@", ' import { b } from "./b"', '+import { c } from "./c"', " ")
    apply(ws, "*** Update File: m.ts", "@@", ' import { c } from "./c"', '+import { d } from "./d"', " ")
    const r = cliJson(["rollback", first, "--workspace", ws])
    expect(r.status, r.stderr).toBe(0)
    expect(r.json.record.changes.map((c: any) => [c.path, c.merge])).toEqual([["m.ts", { method: "structured", language: "typescript" }]])
    expect(textAt(ws, "m.ts")).toBe('import { a } from "./a"\nimport { b } from "./b"\nimport { d } from "./d"\n\nexport const x = a + b\n')
  })

  it("says which paths were merged in its text output", () => {
    const { first, ws } = setup(9)
    const r = runCli(["rollback", first, "--workspace", ws])
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toContain("update f.txt (merged with later changes)")
    expect(r.stdout).toMatch(/update h\.txt\n/)
  })

  it("--strict refuses with rollback_drift naming the later transaction, nothing written", () => {
    const { first, later, ws } = setup(9)
    const before = workspaceTree(ws)
    const r = cliJson(["rollback", first, "--workspace", ws, "--strict"])
    expect(r.status).toBe(1)
    expect(r.json).toEqual({
      ok: false,
      error: { code: "rollback_drift", paths: ["f.txt", "g.txt"], message: expect.stringContaining(later), laterTransactionId: later }
    })
    expect(workspaceTree(ws)).toEqual(before)
    expect(recordsOf(ws)).toHaveLength(2)
  })
})

describe("help", () => {
  it("rollback offers --strict and resolve names a held rollback's conflict ids", () => {
    const rollback = runCli(["rollback", "--help"])
    expect(rollback.stdout).toMatch(/--strict\s+Refuse with rollback_drift/)
    expect(rollback.stdout.replace(/\s+/g, " ")).toContain("held as a conflict rollback:<transaction-id>:<path>")
    expect(runCli(["resolve", "--help"]).stdout.replace(/\s+/g, " ")).toContain("a held rollback's rollback:<transaction-id>:<path>")
  })
})

describe("a rollback that does not merge cleanly is held as conflicts", () => {
  it("holds the overlapping path, writes nothing; a later process lists it and resolving it applies the whole rollback once", () => {
    const { first, later, ws } = setup(2)
    const before = workspaceTree(ws)
    const held = cliJson(["rollback", first, "--workspace", ws])
    expect(held.status).toBe(1)
    const id = `rollback:${first}:f.txt`
    expect(held.json).toEqual({
      ok: false,
      error: { code: "rollback_conflicted", paths: ["f.txt"], message: expect.stringContaining("forkjoin resolve"), conflictIds: [id] }
    })
    expect(workspaceTree(ws)).toEqual(before)
    expect(recordsOf(ws).map((x) => x.transactionId)).toEqual([first, later])

    const listed = cliJson(["conflicts", "--workspace", ws, "--open"])
    expect(listed.status, listed.stderr).toBe(0)
    expect(listed.json.conflicts).toEqual([
      expect.objectContaining({ conflictId: id, kind: "rollback", transactionId: first, threadId: "cli", path: "f.txt", status: "open", reason: "overlapping_edits" })
    ])
    const short = first.slice(0, "patch:".length + 8)
    expect(listed.json.conflicts[0].text).toBe(
      `1\n<<<<<<< workspace\nLATER\n||||||| rolled back ${short}\ntwo\n=======\n2\n>>>>>>> before ${short}\n3\n4\n5\n6\n7\n8\n9\n10\n`
    )
    const text = runCli(["conflicts", "--workspace", ws])
    expect(text.stdout).toContain(`resolve: forkjoin resolve 'rollback:${short}:f.txt'`)

    const merged = at(TEN, 2, "LATER and 2")
    const content = path.join(ws, "..", "merged.txt")
    fs.writeFileSync(content, merged)
    const done = cliJson(["resolve", id, "--content", content, "--workspace", ws])
    expect(done.status, done.stderr).toBe(0)
    expect(done.json).toEqual({ ok: true, transactionId: `rollback:${first}`, rollbackOf: first, openConflicts: 0 })
    // The whole rollback in one transaction: the resolved path, the merged path and the clean one.
    const records = recordsOf(ws)
    expect(records.map((x) => x.transactionId)).toEqual([first, later, `rollback:${first}`])
    expect(records[2]!.changes.map((c) => c.path).sort()).toEqual(["f.txt", "g.txt", "h.txt"])
    expect(records[2]!.links.rollbackOf).toBe(first)
    expect(textAt(ws, "f.txt")).toBe(merged)
    expect(textAt(ws, "g.txt")).toBe(at(TEN, 10, "ten"))
    expect(textAt(ws, "h.txt")).toBe(TEN)
    const again = cliJson(["resolve", id, "--discard", "--workspace", ws])
    expect(again.json).toMatchObject({ ok: false, error: { code: "conflict_already_resolved" } })
  })

  it("with several held paths nothing is written until the last is resolved; --apply takes the earlier side of the held lines", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "f.txt": TEN, "h.txt": TEN })
    const first = apply(ws, "*** Update File: f.txt", "@@", " 1", "-2", "+two", "*** Update File: h.txt", "@@", " 1", "-2", "+two")
    apply(ws, "*** Update File: f.txt", "@@", " 1", "-two", "+F", "*** Update File: h.txt", "@@", " 1", "-two", "+H", "@@", " 6", "-7", "+seven")
    expect(cliJson(["rollback", first, "--workspace", ws]).json.error.conflictIds).toEqual([`rollback:${first}:f.txt`, `rollback:${first}:h.txt`])
    const held = workspaceTree(ws)

    const one = runCli(["resolve", `rollback:${first}:f.txt`, "--discard", "--workspace", ws])
    expect(one.status, one.stderr).toBe(0)
    expect(one.stdout).toMatch(/waits for 1 more conflict\(s\); nothing is written until the last is resolved/)
    expect(workspaceTree(ws)).toEqual(held)
    expect(recordsOf(ws)).toHaveLength(2)

    const last = runCli(["resolve", `rollback:${first}:h.txt`, "--apply", "--workspace", ws])
    expect(last.status, last.stderr).toBe(0)
    expect(last.stdout).toMatch(/^Resolved\. Rolled back patch:[0-9a-f]{8} as rollback:patch:[0-9a-f]{8} \(record #3\)\.\n$/)
    // f kept (discarded), h: line 2 back as before the patch, the later line 7 kept.
    expect(textAt(ws, "f.txt")).toBe(at(TEN, 2, "F"))
    expect(textAt(ws, "h.txt")).toBe(at(TEN, 7, "seven"))
    expect(recordsOf(ws).map((x) => x.changes.map((c) => c.path))).toEqual([["f.txt", "h.txt"], ["f.txt", "h.txt"], ["h.txt"]])
  })

  it("refuses, writing nothing, a held path whose conflict id would pass 256 characters", () => {
    const { ws } = makeSandbox()
    const long = `${"d".repeat(100)}/${"e".repeat(100)}/f.txt`
    writeTree(ws, { [long]: TEN })
    const first = apply(ws, `*** Update File: ${long}`, "@@", " 1", "-2", "+two")
    apply(ws, `*** Update File: ${long}`, "@@", " 1", "-two", "+TWO")
    const before = workspaceTree(ws)
    const r = cliJson(["rollback", first, "--workspace", ws])
    expect(r.status).toBe(1)
    expect(r.json.error).toMatchObject({ code: "rollback_drift", paths: [long], message: expect.stringContaining("256 characters") })
    expect(workspaceTree(ws)).toEqual(before)
    expect(cliJson(["conflicts", "--workspace", ws]).json.conflicts).toEqual([])
  })

  it("refuses a last resolution the live file no longer fits (nothing written), and asking again merges afresh", () => {
    const { first, ws } = setup(2)
    expect(cliJson(["rollback", first, "--workspace", ws]).status).toBe(1)
    // Someone edits the clean path g.txt on the transaction's own line after the rollback was held.
    fs.writeFileSync(path.join(ws, "g.txt"), at(at(TEN, 1, "ONE"), 10, "ten"))
    const before = workspaceTree(ws)
    const stale = cliJson(["resolve", `rollback:${first}:f.txt`, "--discard", "--workspace", ws])
    expect(stale.status).toBe(1)
    expect(stale.json.error).toMatchObject({ code: "conflict_stale", paths: ["g.txt"], message: expect.stringContaining(`forkjoin rollback ${first}`) })
    expect(workspaceTree(ws)).toEqual(before)
    expect(cliJson(["conflicts", "--workspace", ws, "--open"]).json.conflicts.map((c: any) => c.conflictId)).toEqual([`rollback:${first}:f.txt`])

    const again = cliJson(["rollback", first, "--workspace", ws])
    expect(again.json.error.conflictIds).toEqual([`rollback:${first}:f.txt`, `rollback:${first}:g.txt`])
    expect(cliJson(["conflicts", "--workspace", ws]).json.conflicts.map((c: any) => c.conflictId)).toEqual([
      `rollback:${first}:f.txt`,
      `rollback:${first}:g.txt`
    ])
  })
})
