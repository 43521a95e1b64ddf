/**
 * The join survives real crashes (SPEC §6.6, §4.5): `forkjoin run` of four mutating children
 * (disjoint files, plus two on one file that auto-merge) is SIGKILLed by FORKJOIN_FAULT right
 * after the n-th child's transaction (before its outcome is recorded) or inside a child's
 * engine transaction (`stage:7`, `stage:8`, `commit:after-rename:1`, which the engine's repair
 * undoes or completes at the next open). After each crash: `status` lists the run, unrelated
 * commands (`apply` of another file, `history timeline`) do not resume it, and the files are
 * exactly the first k children applied. `run --resume` (itself crashed again in some cases)
 * finishes the join with every child applied exactly once; resuming again is a no-op. An
 * atomic join (one transaction for all children) crashed inside its transaction is all or
 * nothing, and its resume applies it once.
 */
import { ChildOutcome, MergePlan, MergeRunStatus } from "@forkjoin/schema/MergeRun"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, makeSandbox, removeSandboxes, runCli, type RunResult, writeTree } from "../../packages/cli/test/helpers.ts"
import { readRecords } from "../support/history.ts"
import { type CrashCase, crashCase, crashPlan, filesAfter } from "../support/joinCrash.ts"
import { filesOnly, readTree } from "../support/tree.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const SETTLED = new Set(["applied", "auto_merged", "noop", "resolved", "discarded"])

const RunJson = Schema.Struct({
  ok: Schema.Boolean,
  runId: Schema.String,
  mergePlan: MergePlan,
  mergeExecution: Schema.Struct({ status: MergeRunStatus, outcomes: Schema.Array(ChildOutcome) })
})
const StatusJson = Schema.Struct({
  ok: Schema.Literal(true),
  interruptedRuns: Schema.Array(Schema.Struct({ runId: Schema.String, pending: Schema.Array(Schema.String) })),
  openConflicts: Schema.Array(Schema.Unknown)
})

/** The one JSON line of a command, decoded; a missing or malformed line fails with the command's stderr. */
const decodeLine = <A>(schema: Schema.Decoder<A>, r: RunResult): A => {
  expect(r.stdout.trim(), `no JSON line (exit ${r.status}, signal ${r.signal}): ${r.stderr}`).not.toBe("")
  return Schema.decodeUnknownSync(schema)(JSON.parse(r.stdout))
}

/** The workspace's regular files (relative path → content), forkjoin's own `.forkjoin/` left out. */
const liveFiles = (ws: string): Record<string, string> =>
  Object.fromEntries([...filesOnly(readTree(ws))].filter(([p]) => !p.startsWith(".forkjoin/")))

const unrelatedPath = (k: number) => `notes/unrelated-${k}.txt`

/** What the workspace must hold: the first `applied` children, plus `unrelated` files added by `apply`. */
const expectedFiles = (c: CrashCase, applied: number, unrelated: number): Record<string, string> => {
  const files: Record<string, string> = { ...filesAfter(c, applied) }
  for (let k = 0; k < unrelated; k++) files[unrelatedPath(k)] = `unrelated ${k}\n`
  return files
}

const transactionOf = (runId: string, childId: string) => `subagent_merge:${runId}/${childId}`

/** How many children are applied once `fault` has killed a join that started with `before` applied. */
const appliedAfter = (c: CrashCase, before: number, fault: string): number => {
  const child = /^merge:after-child:(\d+)$/.exec(fault)
  if (child !== null) return before + Number(child[1])
  // Staged, nothing renamed: repair closes the intent as aborted.
  if (fault === "stage:7") return before
  // Every file renamed: repair completes the record from the journal.
  if (fault === "stage:8") return before + 1
  // One rename of several is a mix, which repair restores; one rename of one is all post.
  if (fault === "commit:after-rename:1") return c.children[before]!.renames > 1 ? before : before + 1
  throw new Error(`no model for the fault ${fault}`)
}

const status = (ws: string) => {
  const r = runCli(["status", "--workspace", ws, "--json"])
  expect(r.status, r.stderr).toBe(0)
  return decodeLine(StatusJson, r)
}

/** Join records of the run per child (all of them must be exact `applied`), and how many records exist in all. */
const joinRecords = async (ws: string, runId: string) => {
  const records = await readRecords(ws)
  const byChild = new Map<string, Array<(typeof records)[number]>>()
  for (const r of records) {
    if (!r.transactionId.startsWith(`subagent_merge:${runId}/`)) continue
    expect([r.outcome, r.exactness], `${r.transactionId}: ${JSON.stringify(r.warnings)}`).toEqual(["applied", "exact"])
    const id = r.transactionId.slice(`subagent_merge:${runId}/`.length)
    byChild.set(id, [...(byChild.get(id) ?? []), r])
  }
  return { byChild, total: records.length, ids: records.map((r) => r.recordId) }
}

/** Exactly the first `applied` children have one record each; the others none. */
const expectApplied = async (c: CrashCase, ws: string, runId: string, applied: number, unrelated: number, when: string) => {
  const { byChild, total } = await joinRecords(ws, runId)
  c.children.forEach((child, i) => {
    expect(byChild.get(child.id)?.length ?? 0, `${when}: records of ${transactionOf(runId, child.id)}`).toBe(i < applied ? 1 : 0)
  })
  expect(total, `${when}: records in all (join + unrelated applies)`).toBe(applied + unrelated)
  expect(liveFiles(ws), `${when}: files`).toEqual(expectedFiles(c, applied, unrelated))
}

/** A sandbox whose workspace holds the case's files, with `plan` beside it. */
const sandboxOf = (c: CrashCase, plan: unknown) => {
  const { dir, ws } = makeSandbox()
  writeTree(ws, c.files)
  const planFile = path.join(dir, "plan.json")
  fs.writeFileSync(planFile, JSON.stringify(plan))
  return { ws, planFile }
}

/**
 * Runs the plan with `faults[0]`, then `run --resume` once per further fault (each must kill
 * the process), checking the interrupted state after every crash; then the clean resume, and
 * a second one that must change nothing. Returns the final `run --json` line.
 */
const crashAndResume = async (seed: number, faults: ReadonlyArray<string>) => {
  const c = crashCase(seed)
  const ids = c.children.map((child) => child.id)
  const { ws, planFile } = sandboxOf(c, crashPlan(c))

  let applied = 0
  let unrelated = 0
  let runId = ""
  for (const [i, fault] of faults.entries()) {
    const when = `seed ${seed}, crash ${i + 1} (${fault})`
    const args = i === 0 ? ["run", planFile, "--workspace", ws, "--json"] : ["run", "--resume", runId, "--workspace", ws, "--json"]
    const killed = runCli(args, { env: { FORKJOIN_FAULT: fault } })
    expect(killed.signal, `${when}: the fault did not fire (exit ${killed.status}): ${killed.stdout}${killed.stderr}`).toBe("SIGKILL")
    const before = applied
    applied = appliedAfter(c, before, fault)

    // `status` (whose engine open runs the repair) lists the run; the child committed just
    // before the crash, if any, is still pending: its outcome was never recorded.
    const listed = status(ws)
    expect(listed.interruptedRuns.length, `${when}: interrupted runs`).toBe(1)
    if (i === 0) runId = listed.interruptedRuns[0]!.runId
    expect(listed.interruptedRuns[0]!.runId).toBe(runId)
    const pending = ids.slice(applied > before ? applied - 1 : applied)
    expect(listed.interruptedRuns[0]!.pending, `${when}: pending children`).toEqual(pending)
    expect(listed.openConflicts).toEqual([])
    await expectApplied(c, ws, runId, applied, unrelated, when)

    // Unrelated commands open the same workspace and database, and must not resume the join.
    const patch = ["*** Begin Patch", `*** Add File: ${unrelatedPath(unrelated)}`, `+unrelated ${unrelated}`, "*** End Patch", ""].join("\n")
    const applyRun = runCli(["apply", "-", "--workspace", ws, "--json"], { stdin: patch })
    expect(applyRun.status, `${when}: unrelated apply: ${applyRun.stdout}${applyRun.stderr}`).toBe(0)
    unrelated += 1
    const timeline = runCli(["history", "timeline", "--workspace", ws, "--json"])
    expect(timeline.status, `${when}: timeline: ${timeline.stderr}`).toBe(0)
    const still = status(ws)
    expect(still.interruptedRuns, `${when}: after unrelated commands`).toEqual(listed.interruptedRuns)
    await expectApplied(c, ws, runId, applied, unrelated, `${when}, after unrelated commands`)
  }

  const resumed = runCli(["run", "--resume", runId, "--workspace", ws, "--json"])
  expect(resumed.status, `seed ${seed}: resume: ${resumed.stdout}${resumed.stderr}`).toBe(0)
  const out = decodeLine(RunJson, resumed)
  expect(out.ok).toBe(true)
  expect(out.runId).toBe(runId)
  expect(out.mergeExecution.status).toBe("applied")
  expect(out.mergeExecution.outcomes.map((o) => o.childId)).toEqual(ids)
  for (const o of out.mergeExecution.outcomes) {
    expect(SETTLED.has(o.status), `${o.childId} is ${o.status}`).toBe(true)
    expect(o.transactionId).toBe(transactionOf(runId, o.childId))
  }
  await expectApplied(c, ws, runId, ids.length, unrelated, `seed ${seed}, resumed`)
  const { byChild, ids: recordIds } = await joinRecords(ws, runId)
  for (const id of ids) {
    const [record] = byChild.get(id)!
    expect(record!.threadId).toBe(`${runId}/${id}`)
    expect(record!.links.mergeRunId).toBe(runId)
  }
  expect(status(ws).interruptedRuns).toEqual([])

  // A second resume finds nothing pending: same records, same files, same outcomes.
  const files = liveFiles(ws)
  const again = runCli(["run", "--resume", runId, "--workspace", ws, "--json"])
  expect(again.status, again.stderr).toBe(0)
  expect(decodeLine(RunJson, again).mergeExecution).toEqual(out.mergeExecution)
  expect((await joinRecords(ws, runId)).ids).toEqual(recordIds)
  expect(liveFiles(ws)).toEqual(files)
  return { case: c, out }
}

/** The uninterrupted run of a case: the model's final files, and bottom auto-merged with top. */
const reference = (seed: number) => {
  const c = crashCase(seed)
  const { ws, planFile } = sandboxOf(c, crashPlan(c))
  const r = runCli(["run", planFile, "--workspace", ws, "--json"])
  expect(r.status, r.stdout + r.stderr).toBe(0)
  const out = decodeLine(RunJson, r)
  expect(liveFiles(ws)).toEqual(filesAfter(c, c.children.length))
  return out
}

describe("the join after a crash: status lists it, unrelated commands leave it, resume finishes it once", () => {
  it("an uninterrupted run of the case applies three children and auto-merges the fourth (the model is right)", () => {
    for (const seed of [101, 102, 103]) {
      const out = reference(seed)
      expect(out.mergeExecution.outcomes.map((o) => [o.childId, o.status])).toEqual([
        ["alpha", "applied"], ["top", "applied"], ["beta", "applied"], ["bottom", "auto_merged"]
      ])
      expect(out.mergeExecution.outcomes[3]!.autoMergedPaths).toEqual(["shared/s.txt"])
      expect(out.mergePlan.overlaps).toEqual([{ path: "shared/s.txt", resultIds: ["top", "bottom"] }])
    }
  })

  const single: ReadonlyArray<readonly [number, string]> = [
    [1, "merge:after-child:1"],
    [2, "merge:after-child:2"],
    [3, "merge:after-child:3"],
    [4, "merge:after-child:4"],
    [5, "stage:7"],
    [6, "stage:8"],
    [7, "commit:after-rename:1"]
  ]
  it.each(single)("seed %i: FORKJOIN_FAULT=%s during the run, then resume", async (seed, fault) => {
    const { out } = await crashAndResume(seed, [fault])
    expect(out.mergePlan).toEqual(reference(seed).mergePlan)
  })

  // The resume crashes too: each process is killed in the transaction of a later child.
  const chains: ReadonlyArray<readonly [number, ReadonlyArray<string>]> = [
    [11, ["merge:after-child:1", "merge:after-child:1", "merge:after-child:1", "merge:after-child:1"]],
    [12, ["merge:after-child:2", "stage:7", "commit:after-rename:1", "stage:8"]],
    [13, ["stage:8", "commit:after-rename:1", "merge:after-child:2"]],
    [14, ["commit:after-rename:1", "stage:7", "merge:after-child:3"]]
  ]
  it.each(chains)("seed %i: crashes %j (the run, then each resume), then a clean resume", async (seed, faults) => {
    await crashAndResume(seed, faults)
  })
})

describe("what a resume reports", () => {
  // The child committed just before the crash is found in history on resume; its outcome must
  // still say how the join applied it (here: a diff3 merge with `top`), as an uninterrupted run does.
  it("a child auto-merged just before the crash is reported auto_merged after the resume", async () => {
    const { out } = await crashAndResume(21, ["merge:after-child:4"])
    expect(out.mergeExecution.outcomes).toEqual(reference(21).mergeExecution.outcomes.map((o) => ({ ...o, transactionId: transactionOf(out.runId, o.childId) })))
  })
})

describe("an atomic join after a crash", () => {
  // Three disjoint children (alpha, top, beta) as ONE transaction `subagent_merge:<run-id>`.
  it.each(["stage:7", "stage:8", "commit:after-rename:1"])("FORKJOIN_FAULT=%s: all or nothing, then resume applies it once", async (fault) => {
    const c = crashCase(31)
    const ids = c.children.slice(0, 3).map((child) => child.id)
    const { ws, planFile } = sandboxOf(c, crashPlan(c, { atomic: true, children: 3 }))
    const killed = runCli(["run", planFile, "--workspace", ws, "--json"], { env: { FORKJOIN_FAULT: fault } })
    expect(killed.signal, `the fault did not fire (exit ${killed.status}): ${killed.stdout}${killed.stderr}`).toBe("SIGKILL")
    const listed = status(ws)
    expect(listed.interruptedRuns.map((r) => r.pending)).toEqual([ids])
    const runId = listed.interruptedRuns[0]!.runId
    const atomicRecords = async () => (await readRecords(ws)).filter((r) => r.transactionId.startsWith(`subagent_merge:${runId}`))
    // Staged only, or a mix of renames: repair restores everything; every rename done: repair completes it.
    const applied = fault === "stage:8" ? 3 : 0
    expect(liveFiles(ws)).toEqual(filesAfter(c, applied))
    expect((await atomicRecords()).length).toBe(applied === 0 ? 0 : 1)

    const resumed = runCli(["run", "--resume", runId, "--workspace", ws, "--json"])
    expect(resumed.status, resumed.stdout + resumed.stderr).toBe(0)
    const out = decodeLine(RunJson, resumed)
    expect(out.mergeExecution.status).toBe("applied")
    expect(out.mergeExecution.outcomes.map((o) => [o.childId, o.status, o.transactionId])).toEqual(ids.map((id) => [id, "applied", `subagent_merge:${runId}`]))
    expect(liveFiles(ws)).toEqual(filesAfter(c, 3))
    const records = await atomicRecords()
    expect(records.map((r) => r.transactionId)).toEqual([`subagent_merge:${runId}`])
    expect(status(ws).interruptedRuns).toEqual([])
    const again = runCli(["run", "--resume", runId, "--workspace", ws, "--json"])
    expect(again.status, again.stderr).toBe(0)
    expect((await atomicRecords()).map((r) => r.recordId)).toEqual(records.map((r) => r.recordId))
    expect(liveFiles(ws)).toEqual(filesAfter(c, 3))
  })

  // The diff3 base of `bottom` is its preimage, which is the live file before the join; an atomic
  // join has committed nothing yet, so that base must not depend on history already holding it.
  it("same-file edits of two children auto-merge in an atomic join on a fresh workspace", () => {
    const c = crashCase(32)
    const { ws, planFile } = sandboxOf(c, crashPlan(c, { atomic: true }))
    const r = runCli(["run", planFile, "--workspace", ws, "--json"])
    const out = decodeLine(RunJson, r)
    expect(out.mergeExecution.outcomes.map((o) => [o.childId, o.status])).toEqual([
      ["alpha", "applied"], ["top", "applied"], ["beta", "applied"], ["bottom", "auto_merged"]
    ])
    expect(r.status).toBe(0)
    expect(liveFiles(ws)).toEqual(filesAfter(c, 4))
  })
})
