/**
 * Failures keep their real kind and their cause: a busy or corrupt history database is
 * `history_unavailable` at the stage that met it (open, usage read, journaling, commit), other
 * store failures stay `commit_failed`, and a system error while staging keeps the thrown error.
 */
import { ThreadId, TurnId } from "@forkjoin/schema/Ids"
import { HistoryStore, StoreError } from "@forkjoin/history/HistoryStore"
import { layerMemory } from "@forkjoin/history/HistoryStoreSqlite"
import { assert, describe, it } from "@effect/vitest"
import { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll } from "vitest"
import { Engine, type EngineConfig } from "../src/Engine.ts"
import { makeWorkspace, patchOf, removeSandboxes, treeHash } from "./helpers.ts"

afterAll(removeSandboxes)

type Method = "openIntents" | "usage" | "openIntent" | "commitIntent"

/** The memory store, except that `method` fails with `error`. */
const failingStore = (method: Method, error: StoreError): Layer.Layer<HistoryStore> =>
  Layer.effect(
    HistoryStore,
    Effect.gen(function*() {
      const real = yield* HistoryStore
      return HistoryStore.of({ ...real, [method]: () => Effect.fail(error) })
    })
  ).pipe(Layer.provide(layerMemory))

const engineOver = (ws: string, store: Layer.Layer<HistoryStore>, config: Partial<EngineConfig> = {}) =>
  Engine.layer({ root: ws, ...config }).pipe(Layer.provide(store))

const update = { threadId: ThreadId.make("t"), turnId: TurnId.make("u"), patch: patchOf("*** Update File: a.txt", "@@", "-1", "+2") }

describe("history failures", () => {
  it.effect("a busy database at open (startup repair) is history_unavailable with the store error as cause", () =>
    Effect.gen(function*() {
      const ws = makeWorkspace({ "a.txt": "1\n" })
      const busy = new StoreError({ operation: "HistoryStore.openIntents", reason: "Busy" })
      const error = yield* Effect.flip(Effect.provide(Effect.gen(function*() {
        return yield* Engine
      }), engineOver(ws, failingStore("openIntents", busy))))
      assert.instanceOf(error, EngineError)
      assert.strictEqual(error.code, "history_unavailable")
      assert.strictEqual(error.stage, 9)
      assert.strictEqual(error.cause, busy)
    }))

  it.effect("a corrupt database while reading budget usage is history_unavailable at stage 7", () =>
    Effect.gen(function*() {
      const ws = makeWorkspace({ "a.txt": "1\n" })
      const corrupt = new StoreError({ operation: "HistoryStore.usage", reason: "Corrupt" })
      const error = yield* Engine.use((e) => Effect.flip(e.applyPatch(update))).pipe(
        Effect.provide(engineOver(ws, failingStore("usage", corrupt), { budgets: { turnFiles: 10 } }))
      )
      assert.strictEqual(error.code, "history_unavailable")
      assert.strictEqual(error.stage, 7)
      assert.strictEqual(error.cause, corrupt)
      assert.strictEqual(fs.readFileSync(path.join(ws, "a.txt"), "utf8"), "1\n")
    }))

  it.effect("a busy database while journaling is history_unavailable at stage 7 and writes nothing", () =>
    Effect.gen(function*() {
      const ws = makeWorkspace({ "a.txt": "1\n" })
      const before = treeHash(ws)
      const busy = new StoreError({ operation: "HistoryStore.openIntent", reason: "Busy" })
      const error = yield* Engine.use((e) => Effect.flip(e.applyPatch(update))).pipe(
        Effect.provide(engineOver(ws, failingStore("openIntent", busy)))
      )
      assert.deepStrictEqual([error.code, error.stage, error.paths], ["history_unavailable", 7, ["a.txt"]])
      assert.strictEqual(error.cause, busy)
      assert.strictEqual(treeHash(ws), before)
    }))

  it.effect("a corrupt database at commit is history_unavailable at stage 9 and every file is restored", () =>
    Effect.gen(function*() {
      const ws = makeWorkspace({ "a.txt": "1\n" })
      const before = treeHash(ws)
      const corrupt = new StoreError({ operation: "HistoryStore.commitIntent", reason: "Corrupt" })
      const error = yield* Engine.use((e) => Effect.flip(e.applyPatch(update))).pipe(
        Effect.provide(engineOver(ws, failingStore("commitIntent", corrupt)))
      )
      assert.deepStrictEqual([error.code, error.stage, error.paths], ["history_unavailable", 9, ["a.txt"]])
      assert.strictEqual(error.cause, corrupt)
      assert.include(error.message, "Every file was restored.")
      assert.strictEqual(treeHash(ws), before)
    }))

  it.effect("any other store failure at commit stays commit_failed with its message and cause", () =>
    Effect.gen(function*() {
      const ws = makeWorkspace({ "a.txt": "1\n" })
      const io = new StoreError({ operation: "HistoryStore.commitIntent", reason: "Io" })
      const error = yield* Engine.use((e) => Effect.flip(e.applyPatch(update))).pipe(
        Effect.provide(engineOver(ws, failingStore("commitIntent", io)))
      )
      assert.deepStrictEqual([error.code, error.stage], ["commit_failed", 9])
      assert.strictEqual(error.message, `Recording the change failed (${io.message}); every file was restored. Retry.`)
      assert.strictEqual(error.cause, io)
      assert.strictEqual(fs.readFileSync(path.join(ws, "a.txt"), "utf8"), "1\n")
    }))
})

describe("system failures", () => {
  it.effect("a system error while staging (stage 7) keeps the thrown error as cause", () =>
    Effect.gen(function*() {
      const ws = makeWorkspace({ "d/a.txt": "1\n" })
      const dir = path.join(ws, "d")
      // An immutable directory refuses the temp file beside the target, even for root.
      execFileSync("chattr", ["+i", dir])
      const error = yield* Engine.use((e) =>
        Effect.flip(e.applyPatch({ threadId: ThreadId.make("t"), turnId: TurnId.make("u"), patch: patchOf("*** Update File: d/a.txt", "@@", "-1", "+2") }))
      ).pipe(
        Effect.provide(engineOver(ws, layerMemory)),
        Effect.ensuring(Effect.sync(() => execFileSync("chattr", ["-i", dir])))
      )
      assert.deepStrictEqual([error.code, error.stage, error.paths], ["commit_failed", 7, ["d/a.txt"]])
      assert.instanceOf(error.cause, Error)
      assert.strictEqual((error.cause as NodeJS.ErrnoException).code, "EPERM")
      assert.strictEqual(fs.readFileSync(path.join(dir, "a.txt"), "utf8"), "1\n")
    }))
})
