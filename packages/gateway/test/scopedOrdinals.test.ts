/**
 * What a thread-scoped token learns of other threads' commits, attacked through the real
 * server: a token for thread A applies, thread B commits five times, A applies again. Nothing A
 * gets back (apply and rollback answers, timeline and file-history items, page cursors, the
 * event stream) tells it that five commits happened in between: A's records are numbered
 * 1, 2, 3 among the records A sees, and cursors are sealed (no ordinal to decode), yet page on.
 */
import * as fs from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, makeWorkspace, openEvents, patchOf, registerThread, type Started, start, tokenFor } from "./support.ts"

let gw: Started
let w: ReturnType<typeof makeWorkspace>
let a: string
let b: string

beforeAll(async () => {
  w = makeWorkspace({ "a.txt": "a0\n", "b.txt": "b0\n" })
  gw = await start({ root: w.ws, pollMs: 50 })
  await registerThread(w.ws, w.db, "thread-a")
  await registerThread(w.ws, w.db, "thread-b")
  a = (await tokenFor(w.db, "thread-a")).token
  b = (await tokenFor(w.db, "thread-b")).token
})

afterAll(async () => {
  await gw?.stop()
  fs.rmSync(w.dir, { recursive: true, force: true })
})

const update = (file: string, from: string, to: string) => patchOf(`*** Update File: ${file}`, "@@", `-${from}`, `+${to}`)

const apply = async (token: string, patch: string, turn: string) => {
  const r = await call(`${gw.url}/v1/apply`, { token, body: { patch, turn } })
  expect(r.status, r.text).toBe(200)
  return r.json
}

/** Every number a JSON body holds under any `commitOrdinal` key. */
const ordinalsIn = (value: unknown): Array<number> =>
  Array.isArray(value)
    ? value.flatMap(ordinalsIn)
    : typeof value === "object" && value !== null
    ? Object.entries(value).flatMap(([k, v]) => (k === "commitOrdinal" && typeof v === "number" ? [v] : ordinalsIn(v)))
    : []

/** What a cursor reads as when decoded the way the views encode it (base64url JSON), or undefined. */
const decoded = (cursor: string): unknown => {
  try {
    return JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
  } catch {
    return undefined
  }
}

describe("a thread-scoped token cannot count other threads' commits", () => {
  it("after thread B commits five times, nothing thread A reads shows the gap", async () => {
    const events = await openEvents(gw.url, a)
    try {
      await events.until(/event: hello/)
      const first = await apply(a, update("a.txt", "a0", "a1"), "a-1")
      for (let k = 0; k < 5; k++) await apply(b, update("b.txt", `b${k}`, `b${k + 1}`), `b-${k}`)
      const second = await apply(a, update("a.txt", "a1", "a2"), "a-2")
      // The answers to A's own applies.
      expect([first.commitOrdinal, second.commitOrdinal]).toEqual([1, 2])

      // A rollback answered to A is numbered among A's records too.
      const rolled = await call(`${gw.url}/v1/transactions/${encodeURIComponent(second.transactionId)}/rollback`, { token: a, method: "POST" })
      expect(rolled.status, rolled.text).toBe(200)
      expect(rolled.json.commitOrdinal).toBe(3)

      // The timeline and the file history, whole and page by page.
      const timeline = await call(`${gw.url}/v1/timeline`, { token: a })
      const byOrdinal = timeline.json.items.map((r: any) => [r.turnId, r.commitOrdinal]).sort((x: any, y: any) => x[1] - y[1])
      expect(byOrdinal).toEqual([["a-1", 1], ["a-2", 2], [rolled.json.turnId, 3]])
      expect(ordinalsIn(timeline.json).sort()).toEqual([1, 2, 3])
      const file = await call(`${gw.url}/v1/files?path=a.txt`, { token: a })
      expect(ordinalsIn(file.json).sort()).toEqual([1, 2, 3])
      const cursors: Array<string> = []
      let page = await call(`${gw.url}/v1/timeline?limit=1`, { token: a })
      const paged: Array<number> = [...ordinalsIn(page.json)]
      while (page.json.nextCursor !== null) {
        cursors.push(page.json.nextCursor)
        page = await call(`${gw.url}/v1/timeline?limit=1&cursor=${encodeURIComponent(page.json.nextCursor)}`, { token: a })
        expect(page.status, page.text).toBe(200)
        paged.push(...ordinalsIn(page.json))
      }
      expect(paged.sort()).toEqual([1, 2, 3])
      const filePage = await call(`${gw.url}/v1/files?path=a.txt&limit=1`, { token: a })
      cursors.push(filePage.json.nextCursor)
      // A cursor read as the views write it names no ordinal (nor anything else).
      expect(cursors.map(decoded)).toEqual(cursors.map(() => undefined))
      // A cursor made up or altered by the client is refused as a bad request.
      const forged = await call(`${gw.url}/v1/timeline?limit=1&cursor=${Buffer.from(JSON.stringify({ q: "x", s: "thread-a", t: "", o: 6 })).toString("base64url")}`, { token: a })
      expect(forged.status).toBe(400)

      // A diff by #N names A's N-th record; past A's last there is nothing, whatever B committed.
      const byNumber = await Promise.all([1, 2, 3, 4, 7].map((n) => call(`${gw.url}/v1/diff?target=${encodeURIComponent(`#${n}`)}`, { token: a })))
      expect(byNumber.map((r) => r.status)).toEqual([200, 200, 200, 404, 404])
      expect(byNumber[1]!.json.items.map((i: any) => i.path)).toEqual(["a.txt"])

      // The event stream: A's three records, numbered among A's.
      await events.until(/(event: record[\s\S]*){3}/)
      const streamed = events.seen().split("\n\n").filter((e) => e.startsWith("event: record")).map((e) => JSON.parse(e.split("data: ")[1]!))
      expect(streamed.map((r) => [r.threadId, r.commitOrdinal])).toEqual([["thread-a", 1], ["thread-a", 2], ["thread-a", 3]])
    } finally {
      events.close()
    }
  })
})
