/**
 * Reverse-merge rollback through the gateway, attacked by another thread: rolling back an
 * older patch after later work on the same file merges it (`?strict=true` refuses as before);
 * an overlapping later edit holds the path as a conflict only the asking thread sees and
 * resolves (another thread gets 404 for it, as for an unknown one), and resolving it applies
 * the whole rollback as one record.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, makeWorkspace, patchOf, registerThread, type Started, start, tokenFor } from "./support.ts"

let gw: Started
let w: ReturnType<typeof makeWorkspace>
let a: string
let stranger: string

const TEN = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"

beforeAll(async () => {
  w = makeWorkspace({ "f.txt": TEN, "g.txt": TEN })
  gw = await start({ root: w.ws, pollMs: 50 })
  await registerThread(w.ws, w.db, "thread-a")
  await registerThread(w.ws, w.db, "stranger")
  a = (await tokenFor(w.db, "thread-a")).token
  stranger = (await tokenFor(w.db, "stranger")).token
})

afterAll(async () => {
  await gw?.stop()
  fs.rmSync(w.dir, { recursive: true, force: true })
})

const apply = async (...body: ReadonlyArray<string>): Promise<string> => {
  const r = await call(`${gw.url}/v1/apply`, { token: a, body: { patch: patchOf(...body), turn: "t" } })
  expect(r.status, r.text).toBe(200)
  return r.json.record?.transactionId ?? r.json.transactionId
}

const rollbackUrl = (tx: string, query = "") => `${gw.url}/v1/transactions/${encodeURIComponent(tx)}/rollback${query}`
const read = (rel: string) => fs.readFileSync(path.join(w.ws, rel), "utf8")

describe("the gateway's rollback route merges", () => {
  it("merges a later disjoint edit, refuses it with ?strict=true, and holds an overlapping one as a conflict of the caller's", async () => {
    const first = await apply("*** Update File: f.txt", "@@", " 1", "-2", "+two", "*** Update File: g.txt", "@@", " 1", "-2", "+two")
    await apply("*** Update File: f.txt", "@@", " 8", "-9", "+nine", "*** Update File: g.txt", "@@", " 1", "-two", "+TWO")

    expect(await call(rollbackUrl(first, "?strict=true"), { token: a, method: "POST" })).toMatchObject({ status: 422, json: { code: "rollback_drift" } })
    expect(await call(rollbackUrl(first, "?strict=maybe"), { token: a, method: "POST" })).toMatchObject({ status: 400 })
    expect(await call(rollbackUrl(first), { token: stranger, method: "POST" })).toMatchObject({ status: 404 })
    const before = [read("f.txt"), read("g.txt")]

    const held = await call(rollbackUrl(first), { token: a, method: "POST" })
    expect(held).toMatchObject({ status: 422, json: { code: "rollback_conflicted", paths: ["g.txt"] } })
    expect([read("f.txt"), read("g.txt")]).toEqual(before)
    const id = `rollback:${first}:g.txt`
    const mine = await call(`${gw.url}/v1/conflicts?status=open`, { token: a })
    expect(mine.json.conflicts).toEqual([expect.objectContaining({ conflictId: id, kind: "rollback", transactionId: first, threadId: "thread-a" })])
    // Another thread neither lists it nor resolves it: its 404 reads as for an unknown id.
    expect((await call(`${gw.url}/v1/conflicts`, { token: stranger })).json.conflicts).toEqual([])
    const foreign = await call(`${gw.url}/v1/conflicts/${encodeURIComponent(id)}/resolve`, { token: stranger, body: { kind: "apply" } })
    const unknown = await call(`${gw.url}/v1/conflicts/${encodeURIComponent(`rollback:${first}:nope.txt`)}/resolve`, { token: stranger, body: { kind: "apply" } })
    expect(foreign.status).toBe(404)
    expect(unknown.status).toBe(404)
    expect(read("g.txt")).toBe(before[1])

    const done = await call(`${gw.url}/v1/conflicts/${encodeURIComponent(id)}/resolve`, { token: a, body: { kind: "discard" } })
    expect(done.status, done.text).toBe(200)
    expect(done.json.conflict).toMatchObject({ status: "resolved", resolution: { kind: "discard" } })
    expect(done.json.record).toMatchObject({ transactionId: `rollback:${first}`, threadId: "thread-a", links: { rollbackOf: first } })
    // f: the first patch's line 2 undone, the later line 9 kept; g kept as the caller chose.
    expect(read("f.txt")).toBe(TEN.replace("9\n", "nine\n"))
    expect(read("g.txt")).toBe(before[1])
  })
})
