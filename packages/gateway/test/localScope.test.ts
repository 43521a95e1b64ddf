/**
 * The whole-workspace scope the CLI's local user gets (`everyThread`) cannot be reached with a
 * token: a client asking for it in the query still sees its own thread only, and another
 * thread's record stays as absent as one that does not exist.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as fs from "node:fs"
import { call, makeWorkspace, patchOf, registerThread, type Started, start, tokenFor } from "./support.ts"

let gw: Started
let w: ReturnType<typeof makeWorkspace>
let mine: string
let theirs: string

beforeAll(async () => {
  w = makeWorkspace({ "a.txt": "a\n" })
  gw = await start({ root: w.ws, maxBodyBytes: 256 * 1024, pollMs: 50 })
  await registerThread(w.ws, w.db, "mine")
  await registerThread(w.ws, w.db, "theirs")
  mine = (await tokenFor(w.db, "mine")).token
  theirs = (await tokenFor(w.db, "theirs")).token
})

afterAll(async () => {
  await gw?.stop()
  fs.rmSync(w.dir, { recursive: true, force: true })
})

describe("a token never gets the local user's whole-workspace scope", () => {
  it("everyThread in the query is not honoured: the timeline and diff stay scoped to the token's thread", async () => {
    const other = await call(`${gw.url}/v1/apply`, { token: theirs, body: { patch: patchOf("*** Add File: t.txt", "+t"), turn: "t" } })
    expect(other.status).toBe(200)
    const own = await call(`${gw.url}/v1/apply`, { token: mine, body: { patch: patchOf("*** Add File: m.txt", "+m"), turn: "m" } })
    expect(own.status).toBe(200)
    const theirRecord = other.json.recordId

    for (const query of ["everyThread=true", "everyThread=1&descendants=true"]) {
      const timeline = await call(`${gw.url}/v1/timeline?${query}`, { token: mine })
      if (timeline.status === 200) expect(timeline.json.items.map((r: any) => r.threadId)).toEqual(["mine"])
      else expect(timeline.status).toBe(400)
      const diff = await call(`${gw.url}/v1/diff?target=${encodeURIComponent(theirRecord)}&${query}`, { token: mine })
      expect([400, 404]).toContain(diff.status)
    }
    // Without the flag the views stay scoped: their record is as absent as one that does not exist.
    expect((await call(`${gw.url}/v1/diff?target=${encodeURIComponent(theirRecord)}`, { token: mine })).status).toBe(404)
    const timeline = await call(`${gw.url}/v1/timeline?descendants=true`, { token: mine })
    expect(timeline.json.items.map((r: any) => r.threadId)).toEqual(["mine"])
  })
})
