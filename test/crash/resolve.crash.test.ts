/**
 * `forkjoin resolve` survives real crashes: it is SIGKILLed (FORKJOIN_FAULT) right after its
 * resolution's transaction committed, before the child's other changes are applied, and right
 * after it recorded the resolution, before writing it. Either way nothing is lost or applied
 * twice: `status` names what is left, `run --resume` settles the child (or reopens the conflict
 * whose write never landed, to be resolved again), and resuming again changes nothing.
 */
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

  it("after recording the resolution, before writing it: run --resume reopens the conflict, which resolves again", () => {
    const { conflictId, j, runId } = heldConflict()
    const killed = cliJson(["resolve", conflictId, "--apply", "--workspace", j.ws], { FORKJOIN_FAULT: "resolve:after-claim" })
    expect(killed.status).toBe(null)
    expect(textAt(j.ws, "m/f.txt")).toBe(file("A2"))
    expect(status(j.ws).unsettledChildren).toEqual([{ runId, childId: "b" }])

    const resumed = cliJson(["run", "--resume", runId, "--workspace", j.ws])
    expect(resumed.json.mergeExecution.status).toBe("blocked")
    const after = status(j.ws)
    expect(after.openConflicts.map((c: { conflictId: string }) => c.conflictId)).toEqual([conflictId])
    expect(after.unsettledChildren).toEqual([])
    expect(textAt(j.ws, "m/g.txt")).toBe("g\n")

    const resolved = cliJson(["resolve", conflictId, "--apply", "--workspace", j.ws])
    expect(resolved.status, resolved.stderr).toBe(0)
    expect(resolved.json.outcome).toMatchObject({ childId: "b", status: "resolved" })
    expect(textAt(j.ws, "m/f.txt")).toBe(file("B2"))
    expect(textAt(j.ws, "m/g.txt")).toBe("G\n")
    expect(countOf(j.ws, `conflict_resolution:${conflictId}`)).toBe(1)
  })
})
