/**
 * Two `forkjoin run --resume` of one interrupted run, as real processes at the same time. A
 * preloaded hook holds each process at its first read of the merge run (the start of the
 * resume proper) and says so on stderr, so the test knows when they overlap: either both were
 * held there together, or one was held while the other had already ended. Every round must
 * end with one resume finishing the join and the other refused as `run_busy` (nothing done),
 * every child applied exactly once, and outcomes that say what happened (the uninterrupted
 * run's). Repeated over several crashed runs.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, makeSandbox, removeSandboxes, runCli, writeTree } from "../../packages/cli/test/helpers.ts"
import { readRecords } from "../support/history.ts"
import { type HoldPoint, startHeld, writeHoldHook } from "../support/statementHold.ts"
import { crashCase, crashPlan, filesAfter } from "../support/joinCrash.ts"
import { filesOnly, readTree } from "../support/tree.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const ROUNDS = 6

// Each resume is held at its first read of a merge run (the start of the resume proper).
const AT_THE_RUN: HoldPoint = {
  method: "get",
  source: /^SELECT run_id, run_json FROM merge_runs WHERE run_id = \?$/,
  after: false,
  reached: "forkjoin-test: reached the merge run\n"
}

/** One `run --resume` held at its first read of the run until `release`. */
const startResume = (dir: string, ws: string, runId: string, k: number, hook: string) =>
  startHeld(dir, k, hook, AT_THE_RUN, ["run", "--resume", runId, "--workspace", ws, "--json"])

const liveFiles = (ws: string): Record<string, string> =>
  Object.fromEntries([...filesOnly(readTree(ws))].filter(([p]) => !p.startsWith(".forkjoin/")))

describe("two concurrent resumes of one run", () => {
  it(`${ROUNDS} crashed runs, each resumed twice at once: one finishes it, the other is run_busy; no child lost or applied twice, true outcomes`, async () => {
    const { dir: hookDir } = makeSandbox()
    const hook = path.join(hookDir, "hold.cjs")
    writeHoldHook(hook, AT_THE_RUN)
    for (let round = 0; round < ROUNDS; round++) {
      const c = crashCase(400 + round)
      const { dir, ws } = makeSandbox()
      writeTree(ws, c.files)
      const planFile = path.join(dir, "plan.json")
      fs.writeFileSync(planFile, JSON.stringify(crashPlan(c)))
      const killed = runCli(["run", planFile, "--workspace", ws, "--json"], { env: { FORKJOIN_FAULT: "merge:after-child:1" } })
      expect(killed.signal, `round ${round}: the fault did not fire: ${killed.stdout}${killed.stderr}`).toBe("SIGKILL")
      const listed = JSON.parse(runCli(["status", "--workspace", ws, "--json"]).stdout)
      const runId: string = listed.interruptedRuns[0].runId

      const resumes = [0, 1].map((k) => startResume(dir, ws, runId, k, hook))
      // The overlap, as an event: each one is held at the run, or has already ended while the other is held.
      await Promise.all(resumes.map((r) => Promise.race([r.reached, r.ended])))
      await Promise.all(resumes.map((r) => r.release()))
      const results = await Promise.all(resumes.map((r) => r.ended))

      const when = `round ${round}`
      const finished = results.filter((r) => r.code === 0)
      const refused = results.filter((r) => r.code !== 0)
      expect(finished.length, `${when}: ${JSON.stringify(results)}`).toBe(1)
      expect(refused.length).toBe(1)
      const refusal = JSON.parse(refused[0]!.stdout)
      expect(refusal).toMatchObject({ ok: false, error: { code: "run_busy" } })
      expect(refusal.error.message).toContain(`forkjoin run --resume ${runId}`)
      const out = JSON.parse(finished[0]!.stdout)
      expect(out.mergeExecution.status, when).toBe("applied")
      expect(out.mergeExecution.outcomes.map((o: { childId: string; status: string }) => [o.childId, o.status]), when).toEqual([
        ["alpha", "applied"], ["top", "applied"], ["beta", "applied"], ["bottom", "auto_merged"]
      ])

      // As stored: a later resume reports the same, and every child has exactly one record.
      const again = runCli(["run", "--resume", runId, "--workspace", ws, "--json"])
      expect(again.status, again.stderr).toBe(0)
      expect(JSON.parse(again.stdout).mergeExecution.outcomes).toEqual(out.mergeExecution.outcomes)
      const records = (await readRecords(ws)).filter((r) => r.transactionId.startsWith(`subagent_merge:${runId}/`))
      expect(records.map((r) => r.transactionId).sort(), when).toEqual(c.children.map((child) => `subagent_merge:${runId}/${child.id}`).sort())
      expect(liveFiles(ws), when).toEqual(filesAfter(c, c.children.length))
    }
  })
})
