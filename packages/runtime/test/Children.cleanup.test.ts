/**
 * A child that ends without a changeset leaves no staged blobs in its run (issue 9 item 7):
 * timed out, stopped, read-only or cancelled, only its trace stays; a retried child keeps only
 * the blobs of the attempt that exported; a finished child keeps every blob its changeset names.
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { encodeAction } from "../src/Action.ts"
import * as Artifacts from "../src/Artifacts.ts"
import { blobDirectory, blobPath } from "../src/BlobStore.ts"
import * as Children from "../src/Children.ts"
import { Driver, scripted } from "../src/Driver.ts"
import * as RunPlan from "../src/RunPlan.ts"
import { makeWorkspace, patchOf, removeSandboxes, run, valueOf } from "./helpers.ts"

afterAll(removeSandboxes)

const editTask = (id: string, file: string, extra: Record<string, unknown> = {}) => ({
  id,
  mode: "transactional_write",
  writeScope: [path.dirname(file)],
  actions: [{ apply_patch: { patch: patchOf(`*** Update File: ${file}`, "@@", "-old", `+${id}`) } }, { finish: {} }],
  ...extra
})

const decodePlan = (tasks: ReadonlyArray<unknown>): RunPlan.RunPlan => {
  const plan = RunPlan.decode({ schemaVersion: 1, tasks })
  if (Result.isFailure(plan)) throw plan.failure
  return plan.success
}

/** The file names below a child's `blobs/sha256/` (undefined when there is no `blobs/` at all). */
const blobsOf = (namespace: string): ReadonlyArray<string> | undefined => {
  const dir = blobDirectory(namespace)
  if (!fs.existsSync(dir)) return undefined
  const sha = path.join(dir, "sha256")
  return fs.existsSync(sha) ? fs.readdirSync(sha).sort() : []
}

/**
 * A driver that stages a blob in the child's store (as an export cut short would) and then
 * never issues another action: the child can only end by its timeout or a cancellation.
 */
const stagesThenHangs = (runDirectory: string, taskId: string, content: string, staged: Array<string> = [], onStaged = () => {}) =>
  Driver.of({
    next: () =>
      Effect.sync(() => {
        const file = blobPath(blobDirectory(path.join(runDirectory, "subagents", taskId)), sha256(content))
        fs.mkdirSync(path.dirname(file), { recursive: true })
        fs.writeFileSync(file, content)
        staged.push(file)
        onStaged()
      }).pipe(Effect.andThen(Effect.never))
  })

describe("Children.runExportOnly: blobs of children that export nothing", () => {
  it("a child that times out keeps its trace and leaves no blobs directory", async () => {
    const ws = makeWorkspace({ "a/f.txt": "old\n" })
    const runDirectory = Artifacts.defaultRunDirectory(ws, "r")
    const plan = decodePlan([editTask("t", "a/f.txt", { timeoutMs: 100, maxAttempts: 1 })])
    const staged: Array<string> = []
    const r = valueOf(await run(ws, Children.runExportOnly(plan, {
      runId: "r",
      runDirectory,
      driverFor: (task) => stagesThenHangs(runDirectory, task.id, "staged by a timed-out child\n", staged)
    })))
    const child = r.results[0]!
    expect(child).toMatchObject({ status: "timed_out", attempts: 1 })
    expect(staged).toHaveLength(1)
    expect(blobsOf(child.artifacts)).toBeUndefined()
    expect(fs.readdirSync(child.artifacts)).toEqual(["trace.json"])
  })

  it("a stopped child and a read-only child keep only their trace; a finished child keeps every blob its changeset names", async () => {
    const ws = makeWorkspace({ "a/f.txt": "old\n", "b/f.txt": "old\n" })
    const runDirectory = Artifacts.defaultRunDirectory(ws, "r")
    const plan = decodePlan([
      editTask("done", "a/f.txt"),
      { ...editTask("stopped", "b/f.txt"), actions: [{ apply_patch: { patch: patchOf("*** Update File: b/f.txt", "@@", "-old", "+new") } }] },
      { id: "reader", mode: "read_only", actions: [{ read_file: { path: "a/f.txt" } }, { finish: {} }] }
    ])
    const r = valueOf(await run(ws, Children.runExportOnly(plan, { runId: "r", runDirectory })))
    const [done, stopped, reader] = r.results
    expect(r.results.map((c) => c.status)).toEqual(["finished", "driver_stopped", "finished"])
    const named = done!.changeset!.entries.flatMap((e) => (e.postimage === undefined ? [] : [e.postimage.hash.slice("sha256:".length)]))
    expect(named).toEqual([sha256("done\n").slice("sha256:".length)])
    expect(blobsOf(done!.artifacts)).toEqual(named)
    expect(fs.readdirSync(done!.artifacts).sort()).toEqual(["blobs", "changeset.json", "trace.json"])
    for (const child of [stopped!, reader!]) {
      expect(child.changeset).toBeUndefined()
      expect(blobsOf(child.artifacts)).toBeUndefined()
      expect(fs.readdirSync(child.artifacts)).toEqual(["trace.json"])
    }
  })

  it("a retried child keeps only the blobs of the attempt that exported", async () => {
    const ws = makeWorkspace({ "a/f.txt": "old\n" })
    const runDirectory = Artifacts.defaultRunDirectory(ws, "r")
    const plan = decodePlan([editTask("t", "a/f.txt", { timeoutMs: 200, maxAttempts: 2 })])
    const script = plan.tasks[0]!.actions.map(encodeAction)
    const r = valueOf(await run(ws, Children.runExportOnly(plan, {
      runId: "r",
      runDirectory,
      driverFor: (task, attempt) => (attempt === 1 ? stagesThenHangs(runDirectory, task.id, "stray from attempt 1\n") : scripted(script))
    })))
    const child = r.results[0]!
    expect(child).toMatchObject({ status: "finished", attempts: 2 })
    expect(blobsOf(child.artifacts)).toEqual([sha256("t\n").slice("sha256:".length)])
  })

  it("a cancelled child leaves no blobs directory", async () => {
    const ws = makeWorkspace({ "a/f.txt": "old\n" })
    const runDirectory = Artifacts.defaultRunDirectory(ws, "r")
    const plan = decodePlan([editTask("t", "a/f.txt")])
    const staged: Array<string> = []
    let stagedOne!: () => void
    const hasStaged = new Promise<void>((resolve) => (stagedOne = resolve))
    const r = valueOf(await run(ws, Children.runExportOnly(plan, {
      runId: "r",
      runDirectory,
      driverFor: (task) => stagesThenHangs(runDirectory, task.id, "staged by a cancelled child\n", staged, stagedOne),
      cancel: Effect.promise(() => hasStaged)
    })))
    expect(r.results[0]).toMatchObject({ status: "cancelled", attempts: 1 })
    expect(staged).toHaveLength(1)
    expect(blobsOf(path.join(runDirectory, "subagents", "t"))).toBeUndefined()
  })
})
