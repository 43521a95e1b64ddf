/** The engine reads time from Effect's `Clock`: the intent's `createdAt` and the record's `committedAt`. */
import { ThreadId, TurnId } from "@forkjoin/schema/Ids"
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { layerMemory } from "@forkjoin/history/HistoryStoreSqlite"
import { assert, describe, it } from "@effect/vitest"
import type { JournalIntent } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { TestClock } from "effect/testing"
import { afterAll } from "vitest"
import { Engine } from "../src/Engine.ts"
import { makeWorkspace, patchOf, removeSandboxes } from "./helpers.ts"

afterAll(removeSandboxes)

/** The memory store, remembering every intent it journals. */
const recordingStore = (intents: Array<JournalIntent>): Layer.Layer<HistoryStore> =>
  Layer.effect(
    HistoryStore,
    Effect.gen(function*() {
      const real = yield* HistoryStore
      return HistoryStore.of({
        ...real,
        openIntent: (intent, blobs, hashes) => {
          intents.push(intent)
          return real.openIntent(intent, blobs, hashes)
        }
      })
    })
  ).pipe(Layer.provide(layerMemory))

describe("engine time", () => {
  it.effect("the intent and the record carry the Clock's time", () =>
    Effect.gen(function*() {
      const instant = Date.UTC(2031, 4, 6, 7, 8, 9, 123)
      yield* TestClock.setTime(instant)
      const ws = makeWorkspace({ "a.txt": "1\n" })
      const intents: Array<JournalIntent> = []
      const record = yield* Engine.use((e) =>
        e.applyPatch({ threadId: ThreadId.make("t"), turnId: TurnId.make("u"), patch: patchOf("*** Update File: a.txt", "@@", "-1", "+2") })
      ).pipe(Effect.provide(Engine.layer({ root: ws }).pipe(Layer.provide(recordingStore(intents)))))
      assert.strictEqual(record.committedAt, "2031-05-06T07:08:09.123Z")
      assert.strictEqual(intents.length, 1)
      assert.strictEqual(intents[0]!.createdAt, "2031-05-06T07:08:09.123Z")
    }))
})
