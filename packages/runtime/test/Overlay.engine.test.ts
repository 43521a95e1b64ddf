/**
 * The overlay resolves nothing itself: it neither stats files nor walks symbolic links. Run
 * against a fake `Engine` whose `root` is an empty directory, its reads, the modes and facts
 * of its exported preimages and its symlink-landing scope checks follow the engine's
 * `inspect` answers only (and `read` is never called).
 */
import { assert, describe, it } from "@effect/vitest"
import { Engine, type HistoryEvent, type Inspection } from "@forkjoin/engine/Engine"
import { factsOf, type FileState, type SnapshotFacts } from "@forkjoin/patch"
import type { EnvironmentId, TaskId, ThreadId } from "@forkjoin/schema"
import { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { BlobStore } from "../src/BlobStore.ts"
import * as Overlay from "../src/Overlay.ts"
import * as WriteScope from "../src/WriteScope.ts"
import { patchOf, text, utf8 } from "./helpers.ts"

const identity = { childId: "c" as TaskId, taskId: "c" as TaskId, threadId: "t-c" as ThreadId }

interface Answer {
  readonly state: FileState
  readonly mode?: number
  readonly landing?: string | undefined
  readonly error?: EngineError["code"]
}

/** What the fake engine was asked, and how often export read the facts it offered. */
interface Calls {
  readonly inspected: Array<ReadonlyArray<string>>
  factsRead: number
}

const outsideRoots = (p: string) =>
  new EngineError({ code: "path_outside_roots", stage: 3, paths: [p], message: `'${p}' goes through a link out of the workspace.` })

/** An `Engine` over an in-memory answer table; `root` is an empty directory, `read` dies. */
const fakeEngine = (answers: Readonly<Record<string, Answer>>, calls: Calls) =>
  Layer.effect(
    Engine,
    Effect.gen(function*() {
      const root = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "fj-fake-engine-"))),
        (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
      )
      const refused = Effect.die(new Error("the overlay must not write through the engine"))
      const inspectOne = (p: string): Result.Result<Inspection, EngineError> => {
        const a = answers[p] ?? { state: { _tag: "Missing" } }
        if (a.error !== undefined) return Result.fail(outsideRoots(p))
        const state = a.state
        return Result.succeed({
          path: p,
          state,
          mode: a.mode,
          landing: "landing" in a ? a.landing : p,
          get facts(): SnapshotFacts | undefined {
            calls.factsRead += 1
            return state._tag === "File" ? factsOf(state.bytes) : undefined
          }
        })
      }
      return Engine.of({
        root,
        environmentId: "env-fake" as EnvironmentId,
        applyPatch: () => refused,
        applyPlan: () => refused,
        locked: () => refused,
        repair: refused,
        startupRepair: { outcomes: [] },
        historyReset: undefined,
        historyResets: Effect.succeed([]),
        uncertainOutcomes: Effect.succeed([]),
        acknowledge: () => refused,
        read: () => Effect.die(new Error("the overlay must ask Engine.inspect, not Engine.read")),
        inspect: (paths) =>
          Effect.sync(() => {
            calls.inspected.push([...paths])
            return new Map(paths.map((p) => [p, inspectOne(p)] as const))
          }),
        events: yield* PubSub.unbounded<HistoryEvent>()
      })
    })
  )

describe("Overlay over a fake engine", () => {
  const calls: Calls = { inspected: [], factsRead: 0 }
  const layer = Layer.mergeAll(
    fakeEngine({
      "src/a.txt": { state: { _tag: "File", bytes: utf8("fake a\n") }, mode: 0o640 },
      "src/b.txt": { state: { _tag: "File", bytes: utf8("fake b\n") }, mode: 0o600 },
      "src/out/x.txt": { state: { _tag: "Missing" }, error: "path_outside_roots" },
      "src/alias/y.txt": { state: { _tag: "Missing" }, landing: "docs/y.txt" },
      "src/inner/z.txt": { state: { _tag: "Missing" }, landing: "src/real/z.txt" },
      "src/far/w.txt": { state: { _tag: "Missing" }, landing: undefined }
    }, calls),
    BlobStore.layerMemory
  )

  it.effect("reads, preimage modes and facts, and landings all come from Engine.inspect", () =>
    Effect.gen(function*() {
      const overlay = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src"]) })
      // No file exists under the fake root: these bytes can only be the engine's answer.
      assert.strictEqual(text(yield* overlay.readFile("src/a.txt")), "fake a\n")
      const refusals = []
      for (const p of ["src/out/x.txt", "src/alias/y.txt", "src/far/w.txt"]) {
        const e = yield* Effect.flip(overlay.writeFile(p, utf8("x")))
        refusals.push(e instanceof WriteScope.WriteScopeViolation ? e.violatingPaths : [String(e)])
      }
      assert.deepStrictEqual(refusals, [["src/out/x.txt"], ["src/alias/y.txt"], ["src/far/w.txt"]])
      // A landing the engine places inside the scope is allowed.
      yield* overlay.writeFile("src/inner/z.txt", utf8("z\n"))
      yield* overlay.applyPatch(patchOf("*** Update File: src/a.txt", "@@", "-fake a", "+A"))
      yield* overlay.moveFile("src/b.txt", "src/c.txt")
      assert.strictEqual(calls.factsRead, 0, "facts are only read when exporting")
      const changeset = yield* overlay.export(identity)
      const entries: unknown = changeset.entries.map((e) => ({ kind: e.kind, path: e.path, pre: e.preimage }))
      assert.deepStrictEqual(entries, [
        { kind: "update", path: "src/a.txt", pre: { path: "src/a.txt", ...factsOf(utf8("fake a\n")), mode: 0o640 } },
        { kind: "move", path: "src/c.txt", pre: { path: "src/b.txt", ...factsOf(utf8("fake b\n")), mode: 0o600 } },
        { kind: "add", path: "src/inner/z.txt", pre: undefined }
      ])
      assert.strictEqual(calls.factsRead, 2, "both preimages took their facts from the inspection")
      // The scope-violating writes were refused before any baseline: no later call captured them.
      assert.deepStrictEqual(calls.inspected, [
        ["src/a.txt"],
        ["src/out/x.txt"],
        ["src/alias/y.txt"],
        ["src/far/w.txt"],
        ["src/inner/z.txt"],
        ["src/a.txt"],
        ["src/b.txt", "src/c.txt"]
      ])
    }).pipe(Effect.provide(layer)))

  it.effect("a path outside the scope lexically is refused without asking the engine", () =>
    Effect.gen(function*() {
      const before = calls.inspected.length
      const overlay = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src"]) })
      const e = yield* Effect.flip(overlay.deleteFile("docs/readme.md"))
      assert.instanceOf(e, WriteScope.WriteScopeViolation)
      assert.strictEqual(calls.inspected.length, before)
    }).pipe(Effect.provide(layer)))
})
