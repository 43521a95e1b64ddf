/**
 * `forkjoin resolve ID --apply` on a text conflict through the built bundle: it takes the
 * child's side of the conflicting hunks only, onto the live file, so siblings' edits to the same
 * file that already joined stay (whether they joined before or after the held-back child).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, removeSandboxes, workspaceTree } from "./helpers.ts"
import { cliJson, editTask, makeCase, mergeTransaction, outcomeOf, planOf, recordsOf, runJoin, textAt } from "./joinHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

/** 30 numbered lines with `edits` (1-based line → text) applied. */
const file = (edits: Readonly<Record<number, string>> = {}): string =>
  Array.from({ length: 30 }, (_, i) => `${edits[i + 1] ?? `line${i + 1}`}\n`).join("")

const a = editTask("a", ["m"], ["*** Update File: m/f.txt", "@@", "-line2", "+A2"])
const b = editTask("b", ["m"], ["*** Update File: m/f.txt", "@@", "-line2", "+B2", "@@", "-line10", "+B10", "*** Update File: m/g.txt", "@@", "-g", "+G"])
const c = editTask("c", ["m"], ["*** Update File: m/f.txt", "@@", "-line20", "+C20"])

describe("resolve --apply on a text conflict", () => {
  it.each([
    ["after the held-back child", [a, b, c]],
    ["before the held-back child", [a, c, b]]
  ])("keeps a sibling's edit that joined %s, takes the child's side of the conflicting hunk and its other hunks", (_, tasks) => {
    const j = makeCase({ "m/f.txt": file(), "m/g.txt": "g\n" }, planOf(tasks))
    const { status, out } = runJoin(j)
    expect(status).toBe(1)
    expect(outcomeOf(out, "a")).toMatchObject({ status: "applied" })
    expect(outcomeOf(out, "b")).toEqual({ childId: "b", status: "conflicted_unresolved", conflictPaths: ["m/f.txt"] })
    expect(outcomeOf(out, "c")).toMatchObject({ status: "auto_merged", autoMergedPaths: ["m/f.txt"] })
    expect(textAt(j.ws, "m/f.txt")).toBe(file({ 2: "A2", 20: "C20" }))

    const conflictId = `${out.runId}/b:m/f.txt`
    const applied = cliJson(["resolve", conflictId, "--apply", "--workspace", j.ws])
    expect(applied.status, applied.stderr).toBe(0)
    expect(applied.json).toEqual({
      ok: true,
      transactionId: `conflict_resolution:${conflictId}`,
      outcome: { childId: "b", status: "resolved", transactionId: mergeTransaction(out.runId, "b") }
    })
    // B's line 2 (the conflict), B's line 10, C's line 20: nothing a sibling joined is undone.
    expect(textAt(j.ws, "m/f.txt")).toBe(file({ 2: "B2", 10: "B10", 20: "C20" }))
    expect(textAt(j.ws, "m/g.txt")).toBe("G\n")
    const resolution = recordsOf(j.ws).find((r) => r.transactionId === `conflict_resolution:${conflictId}`)
    expect(resolution?.changes.map((ch) => ch.path)).toEqual(["m/f.txt"])
  })

  it("refuses as stale, writing nothing, when the live file changed inside the conflicting hunk since", () => {
    const j = makeCase({ "m/f.txt": file(), "m/g.txt": "g\n" }, planOf([a, b]))
    const { out } = runJoin(j)
    fs.writeFileSync(path.join(j.ws, "m/f.txt"), file({ 2: "edited by hand" }))
    const before = workspaceTree(j.ws)
    const stale = cliJson(["resolve", `${out.runId}/b:m/f.txt`, "--apply", "--workspace", j.ws])
    expect(stale.status).toBe(1)
    expect(stale.json).toMatchObject({ ok: false, error: { code: "conflict_stale", paths: ["m/f.txt"] } })
    expect(workspaceTree(j.ws)).toEqual(before)
  })
})
