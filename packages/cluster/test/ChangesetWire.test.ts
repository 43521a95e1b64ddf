/**
 * A changeset coming back from a runner: only the blobs the parent lacks are uploaded (content
 * in the baseline or already uploaded is skipped); what arrived is laid out as a
 * `changesetFile`, and the run stages and revalidates it exactly as any other: a good one
 * lands in the workspace, one wider than its task's scope is refused (`scope_violation`), one
 * whose blob never arrived is refused, and the workspace is untouched by either.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { sha256 } from "@forkjoin/patch"
import { BlobStore, makeMemory, Overlay, RunPlan, WriteScope } from "@forkjoin/runtime"
import { TaskId, ThreadId } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"
import * as OrchestratorRun from "@forkjoin/orchestrator/Run"
import * as ChangesetWire from "../src/ChangesetWire.ts"
import { Objects } from "../src/Objects.ts"
import { makeWorkspace, removeSandboxes, served } from "./helpers.ts"

afterAll(removeSandboxes)

const utf8 = (s: string) => new TextEncoder().encode(s)
const FILES = { "src/a.txt": "a\n", "src/b.txt": "b\n", "other/c.txt": "c\n" }

const layerOf = (root: string) =>
  Layer.mergeAll(OrchestratorRun.layer(root, path.join(root, ".forkjoin", "history.db")), BlobStore.layerMemory)

/** A child's changeset made on the runner: its blobs in the runner's own store. */
const childChangeset = (runnerStore: BlobStore["Service"]) =>
  Effect.gen(function*() {
    const view = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src"]) })
    yield* view.writeFile("src/a.txt", utf8("A\n"))
    yield* view.writeFile("src/b.txt", utf8("B\n"))
    // Same bytes as other/c.txt: the parent has them in the baseline.
    yield* view.writeFile("src/new.txt", utf8("c\n"))
    return yield* Effect.provideService(view.export({ childId: TaskId.make("edit"), taskId: TaskId.make("edit"), threadId: ThreadId.make("runner-edit") }), BlobStore, runnerStore)
  })

const runWith = (file: string, writeScope: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const plan = Result.getOrThrow(RunPlan.decode({ schemaVersion: 1, tasks: [{ id: "edit", mode: "transactional_write", writeScope, changesetFile: file }] }))
    return yield* OrchestratorRun.runPlan(plan, { planDirectory: path.dirname(file), callerThreadId: ThreadId.make("cluster-test"), admission: { _tag: "Exempt", reason: "test workspace" } })
  })

describe("ChangesetWire", () => {
  it.live("uploads only missing blobs; the received changeset lands through the run's own staging and revalidation", () => {
    const root = fs.realpathSync(makeWorkspace(FILES))
    return Effect.gen(function*() {
      const { client, objects } = yield* served()
      const runnerStore = makeMemory()
      const changeset = yield* childChangeset(runnerStore)
      // Another child already uploaded "B\n".
      yield* objects.put(sha256("B\n"), utf8("B\n"))
      const sent = yield* Effect.provideService(ChangesetWire.send(client, changeset, { askAboveBytes: 0 }), BlobStore, runnerStore)
      assert.deepStrictEqual([sent.uploaded, sent.skipped], [1, 2])
      // One question, then one batch: the missing blob, the changeset last.
      assert.strictEqual(client.stats().requests, 2)
      const again = yield* Effect.provideService(ChangesetWire.send(client, changeset, { askAboveBytes: 0 }), BlobStore, runnerStore)
      assert.deepStrictEqual([again.changeset, again.uploaded, again.skipped], [sent.changeset, 0, 3])
      assert.strictEqual(client.stats().requests, 3)
      // Under 64 KiB nothing is asked: one request sends it all (the parent stores each object once).
      const small = yield* Effect.provideService(ChangesetWire.send(client, changeset), BlobStore, runnerStore)
      assert.deepStrictEqual([small.uploaded, small.skipped], [3, 0])
      assert.strictEqual(client.stats().requests, 4)

      const file = yield* Effect.provideService(ChangesetWire.receive(sent.changeset, path.join(root, ".forkjoin", "received", "edit")), Objects, objects).pipe(Effect.map((r) => r.file))
      assert.deepStrictEqual(fs.readdirSync(path.join(path.dirname(file), "blobs", "sha256")).sort(), changeset.blobs.hashes.map((h) => h.slice(7)).sort())
      const result = yield* runWith(file, ["src"])
      assert.strictEqual(result.run.status, "applied")
      assert.deepStrictEqual(["src/a.txt", "src/b.txt", "src/new.txt"].map((p) => fs.readFileSync(path.join(root, p), "utf8")), ["A\n", "B\n", "c\n"])
    }).pipe(Effect.scoped, Effect.provide(layerOf(root)))
  }, 60_000)

  it.live("a received changeset wider than its task, or missing a blob, is refused by the run's revalidation", () => {
    const root = fs.realpathSync(makeWorkspace(FILES))
    return Effect.gen(function*() {
      const { client, objects } = yield* served()
      const runnerStore = makeMemory()
      const changeset = yield* childChangeset(runnerStore)
      const sent = yield* Effect.provideService(ChangesetWire.send(client, changeset, { askAboveBytes: 0 }), BlobStore, runnerStore)
      const file = yield* Effect.provideService(ChangesetWire.receive(sent.changeset, path.join(root, ".forkjoin", "received", "wide")), Objects, objects).pipe(Effect.map((r) => r.file))
      const wide = yield* runWith(file, ["src/a.txt"])
      assert.strictEqual(wide.run.outcomes[0]?.status, "scope_violation")
      // A blob lost on the way: the run refuses the child rather than apply part of it.
      const lost = path.join(root, ".forkjoin", "received", "lost")
      const lostFile = yield* Effect.provideService(ChangesetWire.receive(sent.changeset, lost), Objects, objects).pipe(Effect.map((r) => r.file))
      fs.rmSync(path.join(lost, "blobs", "sha256", sha256("A\n").slice(7)))
      const refused = yield* runWith(lostFile, ["src"])
      assert.notStrictEqual(refused.run.outcomes[0]?.status, "applied")
      assert.deepStrictEqual(Object.keys(FILES).map((p) => fs.readFileSync(path.join(root, p), "utf8")), Object.values(FILES))
      assert.isFalse(fs.existsSync(path.join(root, "src", "new.txt")))
      const missing = yield* Effect.result(Effect.provideService(ChangesetWire.receive(sha256("never uploaded"), path.join(root, ".forkjoin", "received", "none")), Objects, objects))
      assert.isTrue(Result.isFailure(missing) && missing.failure._tag === "ReceiveError" && missing.failure.code === "changeset_missing")
    }).pipe(Effect.scoped, Effect.provide(layerOf(root)))
  }, 60_000)
})
