/**
 * A link swapped in under a child's write scope while a real `forkjoin` process is between
 * deciding what to write and taking the workspace lock (held there by a preloaded hook, see
 * `test/support/lockHold.ts`). The attacker's folder holds a file with the very bytes the
 * child expects, so only where the write lands gives it away. The join (per child and atomic)
 * and `resolve --apply` must refuse under the lock: `scope_violation` for a link leading out
 * of the scope, `path_refused` for one leading elsewhere inside it, nothing written through
 * the link, no record of the child's transaction, the run exits 1.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, removeSandboxes } from "../../packages/cli/test/helpers.ts"
import { cliJson, editTask, makeCase, mergeTransaction, outcomeOf, planOf, recordsOf, runJoin, textAt } from "../../packages/cli/test/joinHelpers.ts"
import { startHeld } from "../support/lockHold.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

// Lock attempts of a `run` or `resolve`: 1 is the startup repair, 2 the first write.
const FIRST_WRITE = 2

const edit = editTask("c", ["sub"], ["*** Update File: sub/x/a.txt", "@@", "-v1", "+v2"])

/** `sub/x` (a real folder when the child was admitted) becomes a link to `target`. */
const swap = (ws: string, target: string) => {
  fs.renameSync(path.join(ws, "sub/x"), path.join(ws, "sub/x.old"))
  fs.symlinkSync(target, path.join(ws, "sub/x"))
}

/** Runs the join of `plan` held before its first write, swaps `sub/x` to `target`, lets it go. */
const joinWithSwap = async (files: Record<string, string>, plan: unknown, target: string) => {
  const j = makeCase(files, plan)
  const held = startHeld(j.dir, ["run", j.planFile, "--workspace", j.ws, "--json"], FIRST_WRITE)
  await Promise.race([held.reached, held.ended])
  swap(j.ws, target)
  await held.release()
  const r = await held.ended
  expect(r.stdout, r.stderr).not.toBe("")
  return { j, r, out: JSON.parse(r.stdout) }
}

const noRecordOf = (ws: string, runId: string, childId?: string) => {
  const records = recordsOf(ws)
  expect(records.filter((x) => x.transactionId === mergeTransaction(runId, childId))).toEqual([])
  expect(records.flatMap((x) => x.changes.map((c) => c.path)).filter((p) => p.startsWith("docs/") || p.startsWith("sub/"))).toEqual([])
}

describe("a link swapped in between the join's admission and the engine's lock", () => {
  it("leading out of the scope: scope_violation, the outside file untouched, no record, exit 1", async () => {
    const { j, out, r } = await joinWithSwap({ "sub/x/a.txt": "v1\n", "docs/a.txt": "v1\n" }, planOf([edit]), "../docs")
    expect(outcomeOf(out, "c")).toMatchObject({ status: "scope_violation" })
    expect(outcomeOf(out, "c").reason).toContain("docs/a.txt")
    expect(r.code).toBe(1)
    expect(textAt(j.ws, "docs/a.txt")).toBe("v1\n")
    expect(textAt(j.ws, "sub/x.old/a.txt")).toBe("v1\n")
    noRecordOf(j.ws, out.runId, "c")
  })

  it("leading to another folder inside the scope: path_refused (history would name a file that did not change), nothing written", async () => {
    const { j, out, r } = await joinWithSwap({ "sub/x/a.txt": "v1\n", "sub/y/a.txt": "v1\n" }, planOf([edit]), "y")
    expect(outcomeOf(out, "c")).toMatchObject({ status: "path_refused" })
    expect(outcomeOf(out, "c").reason).toContain("sub/y/a.txt")
    expect(r.code).toBe(1)
    expect(textAt(j.ws, "sub/y/a.txt")).toBe("v1\n")
    noRecordOf(j.ws, out.runId, "c")
  })

  it("an atomic join: the child is scope_violation, its sibling not applied, nothing written", async () => {
    const sibling = editTask("s", ["other"], ["*** Update File: other/b.txt", "@@", "-b", "+B"])
    const { j, out, r } = await joinWithSwap(
      { "sub/x/a.txt": "v1\n", "docs/a.txt": "v1\n", "other/b.txt": "b\n" },
      planOf([edit, sibling], { atomic: true }),
      "../docs"
    )
    expect(outcomeOf(out, "c")).toMatchObject({ status: "scope_violation" })
    expect(outcomeOf(out, "s")).toMatchObject({ status: "apply_failed_rolled_back" })
    expect(r.code).toBe(1)
    expect(textAt(j.ws, "docs/a.txt")).toBe("v1\n")
    expect(textAt(j.ws, "other/b.txt")).toBe("b\n")
    noRecordOf(j.ws, out.runId)
  })
})

describe("a link swapped in while resolve --apply waits for the lock", () => {
  it("is refused as path_outside_scope: nothing written through it, the conflict stays open", async () => {
    const a = editTask("a", ["sub"], ["*** Update File: sub/x/a.txt", "@@", "-v1", "+A"])
    const b = editTask("b", ["sub"], ["*** Update File: sub/x/a.txt", "@@", "-v1", "+B"])
    const j = makeCase({ "sub/x/a.txt": "v1\n", "docs/a.txt": "A\n" }, planOf([a, b]))
    const { out } = runJoin(j)
    expect(outcomeOf(out, "b")).toMatchObject({ status: "conflicted_unresolved" })
    const conflictId = `${out.runId}/b:sub/x/a.txt`
    const held = startHeld(j.dir, ["resolve", conflictId, "--apply", "--workspace", j.ws, "--json"], FIRST_WRITE)
    await Promise.race([held.reached, held.ended])
    swap(j.ws, "../docs")
    await held.release()
    const r = await held.ended
    expect(r.code, r.stderr).toBe(1)
    expect(JSON.parse(r.stdout).error).toMatchObject({ code: "path_outside_scope", paths: ["sub/x/a.txt", "docs/a.txt"] })
    expect(textAt(j.ws, "docs/a.txt")).toBe("A\n")
    expect(recordsOf(j.ws).filter((x) => x.transactionId === `conflict_resolution:${conflictId}`)).toEqual([])
    const listed = cliJson(["conflicts", "--workspace", j.ws]).json
    expect(listed.conflicts.find((c: { conflictId: string }) => c.conflictId === conflictId)?.status).toBe("open")
  })
})
