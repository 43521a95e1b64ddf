/**
 * Progress events of the write path: their order and counts for a large and a small request
 * (coarse, never per file), the fiber's `CurrentListener` as the default, and the lock wait
 * heard both by a request and by the startup repair while another process holds the lock.
 */
import { layerMemory } from "@forkjoin/history/HistoryStoreSqlite"
import { ThreadId, TurnId } from "@forkjoin/schema/Ids"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import { TestClock } from "effect/testing"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { Engine, type EngineConfig } from "../src/Engine.ts"
import { CurrentListener, LOCK_WAIT_EVERY_MS, PROGRESS_EVERY, type ProgressEvent } from "../src/Progress.ts"
import { failureOf, makeWorkspace, patchOf, removeSandboxes, withEngine } from "./helpers.ts"

afterAll(removeSandboxes)

const ctx = { threadId: ThreadId.make("t1"), turnId: TurnId.make("turn1") }

/** A patch adding `n` one-line files `f0000.txt`... */
const addFiles = (n: number): string =>
  patchOf(...Array.from({ length: n }, (_, i) => [`*** Add File: f${String(i).padStart(4, "0")}.txt`, `+${i}`]).flat())

/** Holds the workspace lock from another connection, as another process would. */
const holdLock = (ws: string): Database.Database => {
  fs.mkdirSync(path.join(ws, ".forkjoin"), { recursive: true })
  const db = new Database(path.join(ws, ".forkjoin", "lock.db"))
  db.exec("BEGIN IMMEDIATE")
  return db
}

/** Runs `f` with an engine over `ws`, `listener` provided as the fiber's current listener (layer build included). */
const withListener = <A>(
  ws: string,
  listener: ((e: ProgressEvent) => void) | undefined,
  f: (engine: Engine["Service"]) => Effect.Effect<A, unknown>,
  config: Partial<EngineConfig> = {}
): Promise<Exit.Exit<A, unknown>> =>
  Effect.runPromiseExit(
    Engine.use(f).pipe(
      Effect.provide(Engine.layer({ root: ws, ...config }).pipe(Layer.provideMerge(layerMemory))),
      Effect.provideService(CurrentListener, listener),
      Effect.scoped
    )
  )

describe("progress events", () => {
  it("a 300-file apply reports each stage once and the per-file stages every PROGRESS_EVERY files", async () => {
    const ws = makeWorkspace()
    const events: Array<ProgressEvent> = []
    const { exit } = await withEngine(ws, (e) => e.applyPatch({ ...ctx, patch: addFiles(300), onProgress: (ev) => events.push(ev) }))
    expect(Exit.isSuccess(exit)).toBe(true)
    expect(PROGRESS_EVERY).toBe(128)
    expect(events).toEqual([
      { _tag: "Resolving", paths: 300 },
      { _tag: "Planning", paths: 300 },
      { _tag: "Checking", files: 300 },
      { _tag: "Journaling", files: 300 },
      { _tag: "Staging", done: 128, total: 300 },
      { _tag: "Staging", done: 256, total: 300 },
      { _tag: "Staging", done: 300, total: 300 },
      { _tag: "Committing", done: 0, total: 300 },
      { _tag: "Committing", done: 128, total: 300 },
      { _tag: "Committing", done: 256, total: 300 },
      { _tag: "Committing", done: 300, total: 300 },
      { _tag: "Recording", files: 300 }
    ])
  })

  it("a 20-file apply hears a fixed handful of events, not one per file", async () => {
    const ws = makeWorkspace()
    const events: Array<ProgressEvent> = []
    const { exit } = await withEngine(ws, (e) => e.applyPatch({ ...ctx, patch: addFiles(20), onProgress: (ev) => events.push(ev) }))
    expect(Exit.isSuccess(exit)).toBe(true)
    expect(events.map((e) => e._tag)).toEqual([
      "Resolving",
      "Planning",
      "Checking",
      "Journaling",
      "Staging",
      "Committing",
      "Committing",
      "Recording"
    ])
  })

  it("a rejected request stops reporting at the stage that refused it", async () => {
    const ws = makeWorkspace({ "a.txt": "x\n" })
    const events: Array<ProgressEvent> = []
    const { exit } = await withEngine(ws, (e) =>
      e.applyPatch({ ...ctx, patch: patchOf("*** Add File: a.txt", "+y"), onProgress: (ev) => events.push(ev) }))
    expect(failureOf(exit).code).toBe("target_exists")
    expect(events.map((e) => e._tag)).toEqual(["Resolving", "Planning"])
  })

  it("a request without onProgress reports to the fiber's CurrentListener; its own listener wins", async () => {
    const ws = makeWorkspace()
    const ambient: Array<ProgressEvent> = []
    const own: Array<ProgressEvent> = []
    const exit = await withListener(ws, (ev) => ambient.push(ev), (e) =>
      Effect.gen(function*() {
        yield* e.applyPatch({ ...ctx, patch: addFiles(2) })
        yield* e.applyPatch({ ...ctx, patch: patchOf("*** Add File: own.txt", "+1"), onProgress: (ev) => own.push(ev) })
      }))
    expect(Exit.isSuccess(exit)).toBe(true)
    expect(ambient[0]).toEqual({ _tag: "Resolving", paths: 2 })
    expect(ambient.at(-1)).toEqual({ _tag: "Recording", files: 2 })
    expect(own[0]).toEqual({ _tag: "Resolving", paths: 1 })
    expect(ambient.length).toBe(own.length)
  })

  it("a lock held by another process is heard as LockWaiting, at its start then throttled, until lock_timeout", async () => {
    const ws = makeWorkspace({ "a": "1\n" })
    const events: Array<ProgressEvent> = []
    const { exit } = await withEngine(ws, (e) =>
      Effect.gen(function*() {
        const holder = holdLock(ws)
        try {
          const fiber = yield* Effect.forkChild(e.applyPatch({ ...ctx, patch: patchOf("*** Add File: b", "+1"), onProgress: (ev) => events.push(ev) }))
          // The wait runs on the TestClock: a millisecond per turn of the real event loop (the
          // engine takes turns of it), so the reported waits are exact however loaded the machine.
          while (fiber.pollUnsafe() === undefined) {
            yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
            yield* TestClock.adjust(1)
          }
          return yield* Fiber.join(fiber)
        } finally {
          holder.close()
        }
      }).pipe(Effect.provide(TestClock.layer())), { lockTimeoutMs: 700 })
    expect(failureOf(exit)).toMatchObject({ code: "lock_timeout", stage: 6 })
    expect(events.slice(0, 2).map((e) => e._tag)).toEqual(["Resolving", "Planning"])
    const waits = events.slice(2).map((e) => (e._tag === "LockWaiting" ? e.waitedMs : -1))
    // The first is heard as the wait starts.
    expect(waits[0]).toBe(0)
    // One at the start, then one per LOCK_WAIT_EVERY_MS at most: never one per poll.
    expect(waits.length).toBeGreaterThanOrEqual(2)
    expect(waits.length).toBeLessThanOrEqual(Math.ceil(700 / LOCK_WAIT_EVERY_MS) + 1)
    for (let i = 1; i < waits.length; i++) expect(waits[i]! - waits[i - 1]!).toBeGreaterThanOrEqual(LOCK_WAIT_EVERY_MS)
  })

  it("the startup repair's lock wait is heard by the CurrentListener of the fiber building the engine", async () => {
    const ws = makeWorkspace()
    const events: Array<ProgressEvent> = []
    const holder = holdLock(ws)
    try {
      const exit = await withListener(ws, (ev) => events.push(ev), () => Effect.void, { lockTimeoutMs: 300 })
      expect(failureOf(exit)).toMatchObject({ code: "lock_timeout" })
    } finally {
      holder.close()
    }
    expect(events.length).toBeGreaterThanOrEqual(1)
    expect(events.every((e) => e._tag === "LockWaiting")).toBe(true)
  })

  it("an uncontended lock is never reported", async () => {
    const ws = makeWorkspace()
    const events: Array<ProgressEvent> = []
    const exit = await withListener(ws, (ev) => events.push(ev), (e) => e.applyPatch({ ...ctx, patch: addFiles(1) }))
    expect(Exit.isSuccess(exit)).toBe(true)
    expect(events.some((e) => e._tag === "LockWaiting")).toBe(false)
  })
})
