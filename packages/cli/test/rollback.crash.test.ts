/**
 * A held rollback whose last `forkjoin resolve` is killed (SIGKILL) right after recording the
 * resolution, before applying the rollback: every conflict is closed and nothing was written.
 * The next `forkjoin resolve` of one of its conflicts, or `forkjoin rollback` of the
 * transaction, applies it from the recorded resolutions, once; a rollback the live files no
 * longer fit is refused and its last conflict opened again.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, makeSandbox, removeSandboxes, runCli, workspaceTree, writeTree } from "./helpers.ts"
import { cliJson, recordsOf, textAt } from "./joinHelpers.ts"
import { apply, at, TEN } from "./rollbackHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)



/** A rollback held on f.txt and h.txt, f.txt discarded, the resolve of h.txt killed after recording it. */
const killedLastResolve = () => {
  const { ws } = makeSandbox()
  writeTree(ws, { "f.txt": TEN, "h.txt": TEN })
  const first = apply(ws, "*** Update File: f.txt", "@@", " 1", "-2", "+two", "*** Update File: h.txt", "@@", " 1", "-2", "+two")
  const later = apply(ws, "*** Update File: f.txt", "@@", " 1", "-two", "+F", "*** Update File: h.txt", "@@", " 1", "-two", "+H", "@@", " 6", "-7", "+seven")
  const ids = { f: `rollback:${first}:f.txt`, h: `rollback:${first}:h.txt` }
  expect(cliJson(["rollback", first, "--workspace", ws]).json.error.conflictIds).toEqual([ids.f, ids.h])
  expect(cliJson(["resolve", ids.f, "--discard", "--workspace", ws]).json).toEqual({ ok: true, rollbackOf: first, openConflicts: 1 })
  const held = workspaceTree(ws)
  const killed = runCli(["resolve", ids.h, "--apply", "--workspace", ws, "--json"], { env: { FORKJOIN_FAULT: "resolve:after-claim" } })
  expect(killed.signal, `the fault did not fire: ${killed.stdout}${killed.stderr}`).toBe("SIGKILL")
  // Recorded, not applied: both closed, nothing written.
  expect(cliJson(["conflicts", "--workspace", ws]).json.conflicts.map((c: any) => c.status)).toEqual(["resolved", "resolved"])
  expect(workspaceTree(ws)).toEqual(held)
  expect(recordsOf(ws).map((r) => r.transactionId)).toEqual([first, later])
  return { ws, first, later, ids }
}

/** f.txt kept (discarded), h.txt: line 2 as before the patch, the later line 7 kept. */
const rolledBack = (ws: string) => {
  expect(textAt(ws, "f.txt")).toBe(at(TEN, 2, "F"))
  expect(textAt(ws, "h.txt")).toBe(at(TEN, 7, "seven"))
}

describe("a held rollback whose last resolve was killed before applying it", () => {
  it("is applied once by the next resolve of one of its conflicts, from the recorded resolutions", () => {
    const { first, ids, later, ws } = killedLastResolve()
    // The resolution asked now is not the one recorded: the recorded ones are applied.
    const done = cliJson(["resolve", ids.f, "--apply", "--workspace", ws])
    expect(done.json, done.stderr).toEqual({ ok: true, transactionId: `rollback:${first}`, rollbackOf: first, openConflicts: 0 })
    rolledBack(ws)
    expect(recordsOf(ws).map((r) => r.transactionId)).toEqual([first, later, `rollback:${first}`])
    // Applied since it was held: never again.
    expect(cliJson(["resolve", ids.h, "--apply", "--workspace", ws]).json.error.code).toBe("conflict_already_resolved")
    expect(recordsOf(ws)).toHaveLength(3)
  })

  it("is listed by status until the next forkjoin rollback of the transaction applies it, once", () => {
    const { first, later, ws } = killedLastResolve()
    const listed = cliJson(["status", "--workspace", ws])
    expect(listed.status, listed.stderr).toBe(0)
    expect(listed.json.unfinishedRollbacks).toEqual([{ transactionId: first }])
    const text = runCli(["status", "--workspace", ws])
    expect(text.stdout).toContain(`has every held conflict resolved but was not applied: forkjoin rollback ${first.slice(0, "patch:".length + 8)}`)
    const done = cliJson(["rollback", first, "--workspace", ws])
    expect(done.status, done.stderr).toBe(0)
    expect(done.json.record).toMatchObject({ transactionId: `rollback:${first}`, links: { rollbackOf: first } })
    expect(done.json.record.changes.map((c: any) => c.path)).toEqual(["h.txt"])
    rolledBack(ws)
    expect(recordsOf(ws).map((r) => r.transactionId)).toEqual([first, later, `rollback:${first}`])
    expect(cliJson(["status", "--workspace", ws]).json.unfinishedRollbacks).toEqual([])
  })

  it("no longer fitting the live file: resolve refuses it and opens the last conflict again; rollback merges afresh", () => {
    const { first, ids, later, ws } = killedLastResolve()
    fs.writeFileSync(path.join(ws, "h.txt"), at(TEN, 2, "EDITED"))
    const before = workspaceTree(ws)
    const stale = cliJson(["resolve", ids.f, "--apply", "--workspace", ws])
    expect(stale.status).toBe(1)
    expect(stale.json.error).toMatchObject({ code: "conflict_stale", paths: ["h.txt"], message: expect.stringContaining(`forkjoin rollback ${first}`) })
    expect(workspaceTree(ws)).toEqual(before)
    expect(cliJson(["conflicts", "--workspace", ws, "--open"]).json.conflicts.map((c: any) => c.conflictId)).toEqual([ids.h])
    // Asked again, the rollback is merged with the file as it is now and held afresh.
    const again = cliJson(["rollback", first, "--workspace", ws])
    expect(again.json.error).toMatchObject({ code: "rollback_conflicted", conflictIds: [ids.f, ids.h] })
    expect(recordsOf(ws).map((r) => r.transactionId)).toEqual([first, later])
  })
})
