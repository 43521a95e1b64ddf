/**
 * Asking again for a rollback that already happened: whether it was applied at once, merged
 * with later work, or held and then resolved, a second `forkjoin rollback TX` writes and
 * records nothing and says there is nothing to roll back. A path whose merge gives back the
 * live bytes is never written as a change.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, makeSandbox, removeSandboxes, workspaceTree, writeTree } from "./helpers.ts"
import { cliJson, recordsOf, textAt } from "./joinHelpers.ts"
import { apply, at, TEN } from "./rollbackHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

/** A second rollback of `first`: refused as unavailable, nothing written or recorded. */
const expectNothingLeft = (ws: string, first: string) => {
  const before = workspaceTree(ws)
  const records = recordsOf(ws).length
  const again = cliJson(["rollback", first, "--workspace", ws])
  expect(again.status, again.stderr).toBe(1)
  expect(again.json.error).toMatchObject({ code: "rollback_unavailable", message: expect.stringContaining("nothing to roll back") })
  expect(workspaceTree(ws)).toEqual(before)
  expect(recordsOf(ws)).toHaveLength(records)
}

describe("a second rollback of one transaction", () => {
  it("after a plain rollback", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "f.txt": TEN })
    const first = apply(ws, "*** Update File: f.txt", "@@", " 1", "-2", "+two")
    expect(cliJson(["rollback", first, "--workspace", ws]).status).toBe(0)
    expect(textAt(ws, "f.txt")).toBe(TEN)
    expectNothingLeft(ws, first)
  })

  it("after a rollback that was itself rolled back (a redo), it rolls back again", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "f.txt": TEN })
    const first = apply(ws, "*** Update File: f.txt", "@@", " 1", "-2", "+two")
    expect(cliJson(["rollback", first, "--workspace", ws]).status).toBe(0)
    const redo = cliJson(["rollback", `rollback:${first}`, "--workspace", ws])
    expect(redo.status, redo.stderr).toBe(0)
    expect(textAt(ws, "f.txt")).toBe(at(TEN, 2, "two"))
    const again = cliJson(["rollback", first, "--workspace", ws])
    expect(again.status, again.stderr).toBe(0)
    expect(textAt(ws, "f.txt")).toBe(TEN)
    expect(recordsOf(ws).map((r) => r.transactionId)).toEqual([first, `rollback:${first}`, `rollback:rollback:${first}`, `rollback:${first}`])
    expectNothingLeft(ws, first)
  })

  it("after a rollback merged with later work on the same files", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "f.txt": TEN, "g.txt": TEN })
    const first = apply(ws, "*** Update File: f.txt", "@@", " 1", "-2", "+two", "*** Update File: g.txt", "@@", "-1", "+one")
    apply(ws, "*** Update File: f.txt", "@@", " 8", "-9", "+LATER", "*** Update File: g.txt", "@@", " 9", "-10", "+ten")
    const r = cliJson(["rollback", first, "--workspace", ws])
    expect(r.status, r.stderr).toBe(0)
    expect(r.json.mergedPaths).toEqual(["f.txt", "g.txt"])
    expectNothingLeft(ws, first)
  })

  it("after a held rollback whose conflict was resolved", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "f.txt": TEN, "g.txt": TEN, "h.txt": TEN })
    const first = apply(ws, "*** Update File: f.txt", "@@", " 1", "-2", "+two", "*** Update File: g.txt", "@@", "-1", "+one", "*** Update File: h.txt", "@@", " 1", "-2", "+two")
    apply(ws, "*** Update File: f.txt", "@@", " 1", "-two", "+LATER", "*** Update File: g.txt", "@@", " 9", "-10", "+ten")
    const id = `rollback:${first}:f.txt`
    expect(cliJson(["rollback", first, "--workspace", ws]).json.error.conflictIds).toEqual([id])
    const content = path.join(ws, "..", "merged.txt")
    fs.writeFileSync(content, at(TEN, 2, "LATER and 2"))
    const done = cliJson(["resolve", id, "--content", content, "--workspace", ws])
    expect(done.status, done.stderr).toBe(0)
    expect(textAt(ws, "h.txt")).toBe(TEN)
    expectNothingLeft(ws, first)
  })

  it("after a held rollback whose conflict was resolved by keeping the file", () => {
    const { ws } = makeSandbox()
    writeTree(ws, { "f.txt": TEN, "h.txt": TEN })
    const first = apply(ws, "*** Update File: f.txt", "@@", " 1", "-2", "+two", "*** Update File: h.txt", "@@", " 1", "-2", "+two")
    apply(ws, "*** Update File: f.txt", "@@", " 1", "-two", "+LATER")
    const id = `rollback:${first}:f.txt`
    expect(cliJson(["rollback", first, "--workspace", ws]).json.error.conflictIds).toEqual([id])
    const done = cliJson(["resolve", id, "--discard", "--workspace", ws])
    expect(done.status, done.stderr).toBe(0)
    expect(textAt(ws, "h.txt")).toBe(TEN)
    expectNothingLeft(ws, first)
  })
})
