/**
 * Applies yield to Node's event loop: a caller applying patches back to back (a join, an agent
 * loop) still lets its process's timers and I/O run between them.
 */
import { assert, describe, it } from "@effect/vitest"
import { afterAll } from "vitest"
import { openWorkspace } from "../src/Facade.ts"
import { makeWorkspace, patchOf, removeSandboxes } from "./helpers.ts"

afterAll(removeSandboxes)

describe("event loop", () => {
  it("back-to-back applies let queued callbacks run between them", async () => {
    const w = await openWorkspace(makeWorkspace({ "a.txt": "0\n" }))
    try {
      let turned = false
      setImmediate(() => {
        turned = true
      })
      // Applies for 50 ms, well past the 10 ms the engine lets pass between turns.
      const started = performance.now()
      for (let k = 0; performance.now() - started < 50; k++) {
        await w.applyPatch(patchOf("*** Update File: a.txt", "@@", `-${k}`, `+${k + 1}`), { threadId: "t", turnId: `u${k}` })
      }
      assert.isTrue(turned, "a callback queued before the applies ran before they all finished")
    } finally {
      await w.close()
    }
  })
})
