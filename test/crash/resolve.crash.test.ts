/**
 * `forkjoin resolve` survives real crashes: it is SIGKILLed (FORKJOIN_FAULT) at each point of
 * its locked section and after it: once it found the conflict its to resolve, before writing;
 * once its transaction committed, before the resolution is recorded on the conflict; and once
 * both are done, before the child's other changes are applied. Nothing is lost or applied
 * twice: the conflict stays open when nothing was written, a resolve again recognises its own
 * committed transaction and finishes it (instead of calling the change it sees stale), `status`
 * names what is left, `run --resume` settles the child, and resuming again changes nothing.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, removeSandboxes } from "../../packages/cli/test/helpers.ts"
import { cliJson, editTask, makeCase, mergeTransaction, outcomeOf, planOf, recordsOf, runJoin, textAt } from "../../packages/cli/test/joinHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const file = (line2: string) => `line1\n${line2}\nline3\n`
const a = editTask("a", ["m"], ["*** Update File: m/f.txt", "@@", "-line2", "+A2"])
// b conflicts with a on m/f.txt; its edit of m/g.txt is the remainder applied once the conflict closes.
const b = editTask("b", ["m"], ["*** Update File: m/f.txt", "@@", "-line2", "+B2", "*** Update File: m/g.txt", "@@", "-g", "+G"])

/** A join left with b's conflict open, and that conflict's id. */
const heldConflict = () => {
  const j = makeCase({ "m/f.txt": file("line2"), "m/g.txt": "g\n" }, planOf([a, b]))
  const { out } = runJoin(j)
  expect(outcomeOf(out, "b")).toMatchObject({ status: "conflicted_unresolved" })
  return { j, runId: out.runId, conflictId: `${out.runId}/b:m/f.txt` }
}

const status = (ws: string) => {
  const r = cliJson(["status", "--workspace", ws])
  expect(r.status, r.stderr).toBe(0)
  return r.json
}

const countOf = (ws: string, transactionId: string) => recordsOf(ws).filter((r) => r.transactionId === transactionId).length

describe("resolve killed mid-way", () => {
  it("after its transaction committed: status names the child, run --resume applies the rest once", () => {
    const { conflictId, j, runId } = heldConflict()
    const killed = cliJson(["resolve", conflictId, "--apply", "--workspace", j.ws], { FORKJOIN_FAULT: "resolve:after-commit" })
    expect(killed.status).toBe(null)
    expect(textAt(j.ws, "m/f.txt")).toBe(file("B2"))
    expect(textAt(j.ws, "m/g.txt")).toBe("g\n")

    const before = status(j.ws)
    expect(before.openConflicts).toEqual([])
    expect(before.unsettledChildren).toEqual([{ runId, childId: "b" }])
    // The resolution is on record: resolving again writes nothing and says how to finish.
    const again = cliJson(["resolve", conflictId, "--apply", "--workspace", j.ws])
    expect(again.status).toBe(1)
    expect(again.json.error.code).toBe("conflict_already_resolved")
    expect(again.json.error.message).toContain(`forkjoin run --resume ${runId}`)

    const resumed = cliJson(["run", "--resume", runId, "--workspace", j.ws])
    expect(resumed.status, resumed.stderr).toBe(0)
    expect(resumed.json.mergeExecution.status).toBe("applied")
    expect(resumed.json.mergeExecution.outcomes.find((o: { childId: string }) => o.childId === "b")).toMatchObject({
      status: "resolved",
      transactionId: mergeTransaction(runId, "b")
    })
    expect(textAt(j.ws, "m/f.txt")).toBe(file("B2"))
    expect(textAt(j.ws, "m/g.txt")).toBe("G\n")
    expect(status(j.ws).unsettledChildren).toEqual([])

    const twice = cliJson(["run", "--resume", runId, "--workspace", j.ws])
    expect(twice.status, twice.stderr).toBe(0)
    expect(countOf(j.ws, mergeTransaction(runId, "b"))).toBe(1)
    expect(countOf(j.ws, `conflict_resolution:${conflictId}`)).toBe(1)
  })

  it("under the lock, before writing: nothing is written or recorded, the conflict stays open and resolves again", () => {
    const { conflictId, j, runId } = heldConflict()
    const killed = cliJson(["resolve", conflictId, "--apply", "--workspace", j.ws], { FORKJOIN_FAULT: "resolve:after-claim" })
    expect(killed.status).toBe(null)
    expect(textAt(j.ws, "m/f.txt")).toBe(file("A2"))
    const after = status(j.ws)
    expect(after.openConflicts.map((c: { conflictId: string }) => c.conflictId)).toEqual([conflictId])
    expect(after.unsettledChildren).toEqual([])
    expect(countOf(j.ws, `conflict_resolution:${conflictId}`)).toBe(0)

    const resumed = cliJson(["run", "--resume", runId, "--workspace", j.ws])
    expect(resumed.json.mergeExecution.status).toBe("blocked")
    expect(textAt(j.ws, "m/g.txt")).toBe("g\n")

    const resolved = cliJson(["resolve", conflictId, "--apply", "--workspace", j.ws])
    expect(resolved.status, resolved.stderr).toBe(0)
    expect(resolved.json.outcome).toMatchObject({ childId: "b", status: "resolved" })
    expect(textAt(j.ws, "m/f.txt")).toBe(file("B2"))
    expect(textAt(j.ws, "m/g.txt")).toBe("G\n")
    expect(countOf(j.ws, `conflict_resolution:${conflictId}`)).toBe(1)
  })

  for (const how of ["--apply", "--content"] as const) {
    it(`after its transaction committed, before it was recorded: resolve ${how} finishes it, nothing written twice`, () => {
      const { conflictId, j, runId } = heldConflict()
      const merged = path.join(j.dir, "merged.txt")
      fs.writeFileSync(merged, file("M2"))
      const args = how === "--apply" ? [how] : [how, merged]
      const killed = cliJson(["resolve", conflictId, ...args, "--workspace", j.ws], { FORKJOIN_FAULT: "resolve:before-record" })
      expect(killed.status).toBe(null)
      const written = how === "--apply" ? file("B2") : file("M2")
      expect(textAt(j.ws, "m/f.txt")).toBe(written)
      expect(countOf(j.ws, `conflict_resolution:${conflictId}`)).toBe(1)
      // Its write landed, its record did not: the conflict is still open.
      expect(status(j.ws).openConflicts.map((c: { conflictId: string }) => c.conflictId)).toEqual([conflictId])

      // The change it sees is its own: not conflict_stale, but finished.
      const again = cliJson(["resolve", conflictId, ...args, "--workspace", j.ws])
      expect(again.status, JSON.stringify(again.json)).toBe(0)
      expect(again.json).toMatchObject({ ok: true, transactionId: `conflict_resolution:${conflictId}`, outcome: { childId: "b", status: "resolved" } })
      expect(textAt(j.ws, "m/f.txt")).toBe(written)
      expect(textAt(j.ws, "m/g.txt")).toBe("G\n")
      const after = status(j.ws)
      expect(after.openConflicts).toEqual([])
      expect(after.unsettledChildren).toEqual([])
      expect(countOf(j.ws, `conflict_resolution:${conflictId}`)).toBe(1)
      expect(countOf(j.ws, mergeTransaction(runId, "b"))).toBe(1)
    })
  }
})
