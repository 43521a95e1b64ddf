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
import * as Children from "../src/Children.ts"
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

  it("retries a child that did not finish, up to maxAttempts", async () => {
    const ws = makeWorkspace({ "a/f.txt": "old\n" })
    const plan = RunPlan.decode({ schemaVersion: 1, tasks: [{ id: "t", mode: "read_only", maxAttempts: 3, actions: [{ list_dir: { path: "a" } }] }] })
    if (Result.isFailure(plan)) throw plan.failure
    const r = valueOf(await run(ws, Children.runExportOnly(plan.success, { runId: "r", runDirectory: Artifacts.defaultRunDirectory(ws, "r") })))
    expect(r.results[0]).toMatchObject({ status: "driver_stopped", attempts: 3 })
  })
})
