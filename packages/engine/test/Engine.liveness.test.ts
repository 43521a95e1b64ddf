/**
 * Applies yield to Node's event loop: between back-to-back applies, and within one large apply
 * (resolving, re-checking, staging), so a process's timers and I/O (a gateway's other clients)
 * run meanwhile. What may run meanwhile is safe: a reader sees every file before or every file
 * after, and another apply waits for this one and plans against its result.
 */
import { assert, describe, it } from "@effect/vitest"
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { layerMemory } from "@forkjoin/history/HistoryStoreSqlite"
import { type PatchHistoryRecord, ThreadId, TurnId } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll } from "vitest"
import { Engine } from "../src/Engine.ts"
import { openWorkspace } from "../src/Facade.ts"
import type { ProgressEvent } from "../src/Progress.ts"
import { makeWorkspace, patchOf, removeSandboxes, withEngine } from "./helpers.ts"

afterAll(removeSandboxes)

const ctx = { threadId: ThreadId.make("t"), turnId: TurnId.make("u") }

// Enough files that staging them takes well over the engine's 10 ms between turns.
const FILES = 600
const nameOf = (i: number) => `d${i % 30}/f${i}.txt`
const tree = (version: string) => Object.fromEntries(Array.from({ length: FILES }, (_, i) => [nameOf(i), `${version} ${i}\n`]))
const updateAll = (from: string, to: string) =>
  patchOf(...Array.from({ length: FILES }, (_, i) => [`*** Update File: ${nameOf(i)}`, "@@", `-${from} ${i}`, `+${to} ${i}`]).flat())

/**
 * Counts turns of the event loop (a `setImmediate` that queues itself again) until stopped.
 */
const turnCounter = () => {
  let turns = 0
  let running = true
  const tick = () => {
    turns++
    if (running) setImmediate(tick)
  }
  setImmediate(tick)
  return {
    get turns() {
      return turns
    },
    stop: () => {
      running = false
    }
  }
}

describe("event loop", () => {
  it("back-to-back applies let queued callbacks run between them", async () => {
    const w = await openWorkspace(makeWorkspace({ "a.txt": "0\n" }))
    try {
      let turned = false
      setImmediate(() => {
        turned = true
      })
      // Apply until the callback has run; a thousand applies are far more than 10 ms of work.
      let k = 0
      while (!turned && k < 1_000) {
        await w.applyPatch(patchOf("*** Update File: a.txt", "@@", `-${k}`, `+${k + 1}`), { threadId: "t", turnId: `u${k}` })
        k++
      }
      assert.isTrue(turned, "a callback queued before the applies ran before a thousand of them finished")
    } finally {
      await w.close()
    }
  })

  it("one large apply lets the event loop turn while it stages its files", async () => {
    const ws = makeWorkspace(tree("v1"))
    const counter = turnCounter()
    // Turns counted at the apply's first event, its first staging and its first rename event.
    let atResolving: number | undefined
    let atStaging: number | undefined
    let atCommitting: number | undefined
    const onProgress = (e: ProgressEvent) => {
      if (e._tag === "Resolving") atResolving ??= counter.turns
      if (e._tag === "Staging") atStaging ??= counter.turns
      if (e._tag === "Committing") atCommitting ??= counter.turns
    }
    const { exit } = await withEngine(ws, (e) =>
      Effect.map(e.applyPatch({ ...ctx, patch: updateAll("v1", "v2"), onProgress }), () => counter.turns))
    counter.stop()
    assert.isTrue(Exit.isSuccess(exit))
    if (!Exit.isSuccess(exit)) return
    assert.strictEqual(fs.readFileSync(path.join(ws, nameOf(FILES - 1)), "utf8"), `v2 ${FILES - 1}\n`)
    assert.isDefined(atResolving)
    assert.isDefined(atStaging)
    assert.isDefined(atCommitting)
    // Staging the fsynced files ran in slices, the event loop turning between them; so did
    // reading and re-reading them (one turn before the lock is all an apply took before).
    assert.isAtLeast(atCommitting! - atStaging!, 1, "the event loop turned while the files were staged")
    assert.isAtLeast(exit.value - atResolving!, 3, "the event loop turned several times during the apply")
  })

  it("a reader during a large apply sees every file before or every file after, and a second apply waits and plans on its result", async () => {
    const ws = makeWorkspace(tree("v1"))
    // A sample of the apply's files, spread over it, read together.
    const sample = Array.from({ length: 16 }, (_, k) => nameOf(Math.floor((k * (FILES - 1)) / 15)))
    const log: Array<string> = []
    const program = Effect.gen(function*() {
        const e = yield* Engine
        const store = yield* HistoryStore
        const first = yield* Effect.forkChild(e.applyPatch({
          ...ctx,
          patch: updateAll("v1", "v2"),
          onProgress: (ev) => log.push(`first:${ev._tag}`)
        }))
        let second: Fiber.Fiber<PatchHistoryRecord, unknown> | undefined
        const seen: Array<{ readonly versions: string; readonly recorded: number; readonly stage: string | undefined }> = []
        // Reads whenever the apply lets the event loop turn, until it is done.
        while (first.pollUnsafe() === undefined) {
          const files = yield* e.read(sample)
          const versions = [...new Set(sample.map((p) => {
            const state = files.get(p)
            return state?._tag === "File" ? Buffer.from(state.bytes).toString("utf8").split(" ")[0]! : "absent"
          }))].join(",")
          const recorded = (yield* Effect.orDie(store.recordsAfter(e.environmentId, 0, 10))).length
          seen.push({ versions, recorded, stage: log.at(-1) })
          // Once the first apply is staging, a second one on one of its files starts.
          if (second === undefined && log.includes("first:Staging")) {
            second = yield* Effect.forkChild(e.applyPatch({
              ...ctx,
              patch: patchOf(`*** Update File: ${nameOf(0)}`, "@@", "-v2 0", "+v3 0"),
              onProgress: (ev) => log.push(`second:${ev._tag}`)
            }))
          }
          yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
        }
        const firstRecord = yield* Fiber.join(first)
        assert.isDefined(second, "the second apply started while the first one was staging")
        const secondRecord = yield* Fiber.join(second!)
        const records = yield* store.recordsAfter(e.environmentId, 0, 10)
        return { seen, firstRecord, secondRecord, records }
      })
    const { firstRecord, records, secondRecord, seen } = await Effect.runPromise(
      program.pipe(Effect.provide(Engine.layer({ root: ws }).pipe(Layer.provideMerge(layerMemory))), Effect.scoped)
    )
    // The reader ran many times during the apply, and never saw half of it.
    assert.isAtLeast(seen.length, 3)
    for (const s of seen) {
      assert.include(["v1", "v2"], s.versions, `a reader saw ${s.versions} (at ${s.stage})`)
      // The record comes after the files: never a record of files still at their old version.
      if (s.recorded > 0) assert.strictEqual(s.versions, "v2")
    }
    assert.isTrue(seen.some((s) => s.versions === "v1" && s.stage === "first:Staging"), "a read ran while the files were being staged")
    // The second apply waited for the first (it resolved nothing before the first was recorded)
    // and planned against its result (v2 → v3).
    assert.isAbove(log.indexOf("second:Resolving"), log.indexOf("first:Recording"))
    assert.strictEqual(secondRecord.commitOrdinal, firstRecord.commitOrdinal + 1)
    assert.strictEqual(fs.readFileSync(path.join(ws, nameOf(0)), "utf8"), "v3 0\n")
    assert.strictEqual(fs.readFileSync(path.join(ws, nameOf(1)), "utf8"), "v2 1\n")
    assert.deepStrictEqual(records.map((r) => r.commitOrdinal), [firstRecord.commitOrdinal, secondRecord.commitOrdinal])
  })
})
