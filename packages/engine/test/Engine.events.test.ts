/** Stage 10 publishes every applied record; case-insensitive workspaces get one entry per file. */
import { ThreadId, TurnId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import { afterAll, describe, expect, it } from "vitest"
import { failureOf, makeWorkspace, patchOf, removeSandboxes, withEngine } from "./helpers.ts"

afterAll(removeSandboxes)

describe("engine events and path identity", () => {
  it("publishes an Applied event with the record for each apply", async () => {
    const ws = makeWorkspace({ "a": "1\n" })
    const { exit } = await withEngine(ws, (e) =>
      Effect.scoped(Effect.gen(function*() {
        const sub = yield* PubSub.subscribe(e.events)
        const r1 = yield* e.applyPatch({ threadId: ThreadId.make("t"), turnId: TurnId.make("u"), patch: patchOf("*** Update File: a", "@@", "-1", "+2") })
        const r2 = yield* e.applyPatch({ threadId: ThreadId.make("t"), turnId: TurnId.make("u"), patch: patchOf("*** Add File: b", "+b") })
        const events = [yield* PubSub.take(sub), yield* PubSub.take(sub)]
        return { events, ids: [r1.recordId, r2.recordId] }
      })))
    if (exit._tag !== "Success") throw new Error(String(exit.cause))
    expect(exit.value.events.map((ev) => ev.record.recordId)).toEqual(exit.value.ids)
    expect(exit.value.events.every((ev) => ev._tag === "Applied")).toBe(true)
  })

  it("on a case-insensitive filesystem A.txt and a.txt are one file: refused as two plan entries", async () => {
    const ws = makeWorkspace({ "a.txt": "x\n" })
    const { exit, records } = await withEngine(ws, (e) =>
      e.applyPatch({
        threadId: ThreadId.make("t"),
        turnId: TurnId.make("u"),
        patch: patchOf("*** Update File: a.txt", "@@", "-x", "+y", "*** Add File: A.TXT", "+z"),
        grant: { write: true, createDirs: true, overwrite: true }
      }), { caseInsensitive: true })
    expect(failureOf(exit)).toMatchObject({ code: "path_invalid", stage: 3 })
    expect(records).toEqual([])
  })
})
