/**
 * Running a plan's children through the library (issue 5): decoded plans, per-child artifact
 * namespaces, results in task order, and a workspace tree identical before and after.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as Artifacts from "../src/Artifacts.ts"
import { encodeAction } from "../src/Action.ts"
import * as Children from "../src/Children.ts"
import { Driver, scripted } from "../src/Driver.ts"
import * as RunPlan from "../src/RunPlan.ts"
import { fingerprint, makeWorkspace, patchOf, removeSandboxes, run, valueOf } from "./helpers.ts"

afterAll(removeSandboxes)

const task = (id: string, file: string) => ({
  id,
  mode: "transactional_write",
  writeScope: [path.dirname(file)],
  actions: [{ apply_patch: { patch: patchOf(`*** Update File: ${file}`, "@@", "-old", `+${id}`) } }, { finish: {} }]
})

describe("Children.runExportOnly", () => {
  it("runs 12 children with bounded concurrency; results in task order; each in its own namespace; tree identical", async () => {
    const files = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`d${i}/f.txt`, "old\n"]))
    const ws = makeWorkspace(files)
    const before = fingerprint(ws)
    const ids = Array.from({ length: 12 }, (_, i) => `t${11 - i}`)
    const plan = RunPlan.decode({ schemaVersion: 1, tasks: ids.map((id, i) => task(id, `d${i}/f.txt`)) })
    if (Result.isFailure(plan)) throw plan.failure
    const runDirectory = Artifacts.defaultRunDirectory(ws, "run-1")
    const r = valueOf(await run(ws, Children.runExportOnly(plan.success, { runId: "run-1", runDirectory, concurrency: 3 })))
    expect(r.results.map((c) => c.id)).toEqual(ids)
    expect(r.results.every((c) => c.status === "finished")).toBe(true)
    for (const [i, c] of r.results.entries()) {
      expect(c.artifacts).toBe(path.join(runDirectory, "subagents", ids[i]!))
      const cs = JSON.parse(fs.readFileSync(path.join(c.artifacts, "changeset.json"), "utf8"))
      expect(cs.taskId).toBe(ids[i])
      expect(cs.entries.map((e: any) => e.path)).toEqual([`d${i}/f.txt`])
    }
    expect(fingerprint(ws)).toEqual(before)
  })

  it("refuses artifact namespaces for invalid task ids", async () => {
    for (const bad of ["..", "../x", "a/b", ""]) {
      const exit = await Effect.runPromise(Effect.exit(Artifacts.childDirectory("/tmp/run", bad)))
      expect(exit._tag).toBe("Failure")
    }
  })

  it("retries on error only: a stopped driver is not retried, a timed-out attempt is (fresh driver each time)", async () => {
    const ws = makeWorkspace({ "a/f.txt": "old\n" })
    const stopped = RunPlan.decode({ schemaVersion: 1, tasks: [{ id: "t", mode: "read_only", maxAttempts: 3, actions: [{ list_dir: { path: "a" } }] }] })
    if (Result.isFailure(stopped)) throw stopped.failure
    const r1 = valueOf(await run(ws, Children.runExportOnly(stopped.success, { runId: "r1", runDirectory: Artifacts.defaultRunDirectory(ws, "r1") })))
    expect(r1.results[0]).toMatchObject({ status: "driver_stopped", attempts: 1 })

    const plan = RunPlan.decode({ schemaVersion: 1, tasks: [{ ...task("t", "a/f.txt"), maxAttempts: 3, timeoutMs: 200 }] })
    if (Result.isFailure(plan)) throw plan.failure
    const script = plan.success.tasks[0]!.actions.map(encodeAction)
    const attempts: Array<number> = []
    // Attempts 1 and 2 hang past the timeout; attempt 3 runs the script.
    const driverFor = (_task: RunPlan.Task, attempt: number) => {
      attempts.push(attempt)
      return attempt < 3 ? Driver.of({ next: () => Effect.never }) : scripted(script)
    }
    const r2 = valueOf(await run(ws, Children.runExportOnly(plan.success, { runId: "r2", runDirectory: Artifacts.defaultRunDirectory(ws, "r2"), driverFor })))
    expect(attempts).toEqual([1, 2, 3])
    expect(r2.results[0]).toMatchObject({ status: "finished", attempts: 3 })
    expect(r2.results[0]!.changeset?.entries.map((e) => e.path)).toEqual(["a/f.txt"])
  })

  it("a child's timeout ends it even when every step runs synchronously", async () => {
    const ws = makeWorkspace({ "a/f.txt": "old\n" })
    const many = Array.from({ length: 20000 }, () => ({ read_file: { path: "a/f.txt" } }))
    const plan = RunPlan.decode({ schemaVersion: 1, tasks: [{ id: "t", mode: "read_only", timeoutMs: 20, actions: many }] })
    if (Result.isFailure(plan)) throw plan.failure
    const r = valueOf(await run(ws, Children.runExportOnly(plan.success, { runId: "r", runDirectory: Artifacts.defaultRunDirectory(ws, "r") })))
    expect(r.results[0]).toMatchObject({ status: "timed_out", attempts: 1 })
    // Ended by its timeout, not by running out of steps.
    expect(r.results[0]!.observations.length).toBeLessThan(20000)
  })

  it("cancelling interrupts running children and marks queued ones cancelled; finished ones keep their result", async () => {
    const ws = makeWorkspace({ "a/f.txt": "old\n", "b/f.txt": "old\n", "c/f.txt": "old\n" })
    const plan = RunPlan.decode({ schemaVersion: 1, tasks: [task("quick", "a/f.txt"), task("slow", "b/f.txt"), task("queued", "c/f.txt")] })
    if (Result.isFailure(plan)) throw plan.failure
    // Cancel once "slow" is running: with concurrency 1, "quick" has finished and "queued" waits.
    let slowStarted!: () => void
    const slowRunning = new Promise<void>((resolve) => (slowStarted = resolve))
    const hangs = Driver.of({ next: () => Effect.sync(() => slowStarted()).pipe(Effect.andThen(Effect.never)) })
    const driverFor = (t: RunPlan.Task) => (t.id === "quick" ? scripted(t.actions.map(encodeAction)) : hangs)
    const before = fingerprint(ws)
    const r = valueOf(await run(ws, Children.runExportOnly(plan.success, {
      runId: "r",
      runDirectory: Artifacts.defaultRunDirectory(ws, "r"),
      concurrency: 1,
      driverFor,
      cancel: Effect.promise(() => slowRunning)
    })))
    expect(r.results.map((c) => [c.id, c.status, c.attempts])).toEqual([["quick", "finished", 1], ["slow", "cancelled", 1], ["queued", "cancelled", 0]])
    expect(fingerprint(ws)).toEqual(before)
  })
})
