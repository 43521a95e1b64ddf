/**
 * `forkjoin resolve` against the files as they are now, through the built bundle: `--content`
 * is written over the live file whatever it became (the live file is the change's `before`),
 * and a conflict held at a move's destination resolves as the move (the source goes away),
 * whether a sibling edited the source (`move_vs_edit`) or added the destination (`add_vs_add`).
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, removeSandboxes } from "./helpers.ts"
import { cliJson, editTask, makeCase, outcomeOf, planOf, recordsOf, runJoin, textAt } from "./joinHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const file = (line2: string) => `line1\n${line2}\nline3\n`

/** The one change the resolution of `conflictId` recorded. */
const resolutionChanges = (ws: string, conflictId: string) =>
  recordsOf(ws).filter((r) => r.transactionId === `conflict_resolution:${conflictId}`).flatMap((r) => r.changes)

describe("resolve --content against the live file", () => {
  it("writes the supplied bytes over a file edited by hand since the join; --apply stays refused", () => {
    const a = editTask("a", ["m"], ["*** Update File: m/f.txt", "@@", "-line2", "+A2"])
    const b = editTask("b", ["m"], ["*** Update File: m/f.txt", "@@", "-line2", "+B2"])
    const j = makeCase({ "m/f.txt": file("line2") }, planOf([a, b]))
    const { out } = runJoin(j)
    const conflictId = `${out.runId}/b:m/f.txt`
    fs.writeFileSync(path.join(j.ws, "m/f.txt"), file("edited by hand"))

    const stale = cliJson(["resolve", conflictId, "--apply", "--workspace", j.ws])
    expect(stale.json.error.code).toBe("conflict_stale")
    expect(stale.json.error.message).toContain("--content FILE built from the current file")
    expect(textAt(j.ws, "m/f.txt")).toBe(file("edited by hand"))

    const merged = path.join(j.dir, "merged.txt")
    fs.writeFileSync(merged, file("merged by hand"))
    const resolved = cliJson(["resolve", conflictId, "--content", merged, "--workspace", j.ws])
    expect(resolved.status, resolved.stderr).toBe(0)
    expect(resolved.json.outcome).toMatchObject({ childId: "b", status: "resolved" })
    expect(textAt(j.ws, "m/f.txt")).toBe(file("merged by hand"))
    const [change] = resolutionChanges(j.ws, conflictId)
    // The change's `before` is the hand-edited file it replaced.
    expect(change?.before?.hash).toBe(`sha256:${createHash("sha256").update(file("edited by hand")).digest("hex")}`)
  })
})

describe("a conflict at a move's destination resolves as the move", () => {
  const move = editTask("b", ["m"], ["*** Update File: m/src.txt", "*** Move to: m/dst.txt", "@@", "-s", "+S"])

  it.each(["--apply", "--content"])("move_vs_edit (a sibling edited the source): %s moves, the source goes away", (how) => {
    const a = editTask("a", ["m"], ["*** Update File: m/src.txt", "@@", "-s", "+edited"])
    const j = makeCase({ "m/src.txt": "s\n" }, planOf([a, move]))
    const { out } = runJoin(j)
    expect(out.conflicts.map((c) => [c.path, c.reason])).toEqual([["m/dst.txt", "move_vs_edit"]])
    const conflictId = `${out.runId}/b:m/dst.txt`
    const content = path.join(j.dir, "content.txt")
    fs.writeFileSync(content, "mine\n")
    const r = cliJson(["resolve", conflictId, ...(how === "--apply" ? ["--apply"] : ["--content", content]), "--workspace", j.ws])
    expect(r.status, JSON.stringify(r.json)).toBe(0)
    expect(textAt(j.ws, "m/dst.txt")).toBe(how === "--apply" ? "S\n" : "mine\n")
    expect(textAt(j.ws, "m/src.txt")).toBeUndefined()
    expect(resolutionChanges(j.ws, conflictId).map((c) => [c.kind, c.path])).toEqual([["move", "m/dst.txt"]])
  })

  it("add_vs_add (a sibling added the destination): --apply moves, the source is not left behind as a copy", () => {
    const a = editTask("a", ["m"], ["*** Add File: m/dst.txt", "+added by a"])
    const j = makeCase({ "m/src.txt": "s\n" }, planOf([a, move]))
    const { out } = runJoin(j)
    expect(outcomeOf(out, "b")).toMatchObject({ status: "conflicted_unresolved" })
    expect(out.conflicts.map((c) => [c.path, c.reason])).toEqual([["m/dst.txt", "add_vs_add"]])
    const conflictId = `${out.runId}/b:m/dst.txt`
    const r = cliJson(["resolve", conflictId, "--apply", "--workspace", j.ws])
    expect(r.status, JSON.stringify(r.json)).toBe(0)
    expect(textAt(j.ws, "m/dst.txt")).toBe("S\n")
    expect(textAt(j.ws, "m/src.txt")).toBeUndefined()
  })
})
