/**
 * The gateway's HTTP API in-process (port 0, `fetch`): the OpenAPI document, bearer tokens and
 * thread authorization (401 / 404), apply with every bad input the issue lists (nothing
 * written), the views with caps and cursors, provider ingestion, concurrent applies to one file
 * and the live event stream.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { call, expiredTokenFor, makeWorkspace, openEvents, patchOf, registerThread, revokeToken, type Started, start, tokenFor } from "./support.ts"

const FILES = { "a.txt": "one\ntwo\nthree\n", "slots.txt": "slot-1\nx\nslot-2\nx\nslot-3\nx\nslot-4\n" }

let gw: Started
let w: ReturnType<typeof makeWorkspace>
let parent: string
let child: string
let sibling: string

beforeAll(async () => {
  w = makeWorkspace(FILES)
  fs.symlinkSync(w.outside, path.join(w.ws, "out-link"))
  fs.writeFileSync(path.join(w.outside, "secret.txt"), "secret\n")
  gw = await start({ root: w.ws, maxBodyBytes: 256 * 1024, pollMs: 50 })
  await registerThread(w.ws, w.db, "parent")
  await registerThread(w.ws, w.db, "parent/child", "parent")
  await registerThread(w.ws, w.db, "sibling")
  parent = (await tokenFor(w.db, "parent")).token
  child = (await tokenFor(w.db, "parent/child")).token
  sibling = (await tokenFor(w.db, "sibling")).token
})

afterAll(async () => {
  await gw?.stop()
  fs.rmSync(w.dir, { recursive: true, force: true })
})

const read = (rel: string) => fs.readFileSync(path.join(w.ws, rel), "utf8")

describe("the contract", () => {
  it("serves the OpenAPI document publicly, every route under /v1/ with bearer security", async () => {
    const r = await call(`${gw.url}/openapi.json`)
    expect(r.status).toBe(200)
    const paths = Object.keys(r.json.paths)
    expect(paths.length).toBeGreaterThanOrEqual(12)
    for (const p of paths) expect(p.startsWith("/v1/")).toBe(true)
    expect(r.json.paths["/v1/apply"].post.security).toEqual([{ bearer: [] }])
    expect(r.json.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "Bearer" })
  })

  it("documents the event stream: GET /v1/events, bearer, text/event-stream with its three events", async () => {
    const r = await call(`${gw.url}/openapi.json`)
    const events = r.json.paths["/v1/events"]?.get
    expect(events).toBeDefined()
    expect(events.security).toEqual([{ bearer: [] }])
    expect(Object.keys(events.responses)).toEqual(expect.arrayContaining(["200", "401"]))
    const stream = events.responses["200"].content["text/event-stream"]
    expect(stream).toBeDefined()
    const text = JSON.stringify(stream) + JSON.stringify(r.json.components ?? {})
    for (const name of ["hello", "record", "run"]) expect(text).toContain(`"${name}"`)
  })
})

describe("tokens", () => {
  it("401 without a token, with a malformed, unknown, revoked or expired one, naming why", async () => {
    expect((await call(`${gw.url}/v1/whoami`)).status).toBe(401)
    const malformed = await call(`${gw.url}/v1/whoami`, { token: "nope" })
    expect(malformed).toMatchObject({ status: 401, json: { _tag: "Unauthorized", reason: "Malformed" } })
    const unknown = await call(`${gw.url}/v1/whoami`, { token: `fjt_0123456789abcdef_${"A".repeat(43)}` })
    expect(unknown.json).toMatchObject({ reason: "Unknown" })
    const revoked = await tokenFor(w.db, "parent")
    expect((await call(`${gw.url}/v1/whoami`, { token: revoked.token })).json).toEqual({ thread: "parent" })
    await revokeToken(w.db, revoked.tokenId)
    expect((await call(`${gw.url}/v1/whoami`, { token: revoked.token })).json).toMatchObject({ reason: "Revoked" })
    const expired = await expiredTokenFor(w.db, "parent")
    expect((await call(`${gw.url}/v1/whoami`, { token: expired.token })).json).toMatchObject({ _tag: "Unauthorized", reason: "Expired" })
    const events = await call(`${gw.url}/v1/events`, { token: expired.token })
    expect(events).toMatchObject({ status: 401, json: { reason: "Expired" } })
  })
})

describe("apply", () => {
  it("applies a patch in the token's thread and returns the record", async () => {
    const r = await call(`${gw.url}/v1/apply`, {
      token: parent,
      body: { patch: patchOf("*** Update File: a.txt", "@@", "-two", "+TWO"), turn: "t1" }
    })
    expect(r.status).toBe(200)
    expect(r.json).toMatchObject({ threadId: "parent", turnId: "t1", outcome: "applied", exactness: "exact" })
    expect(read("a.txt")).toBe("one\nTWO\nthree\n")
  })

  it("refuses bad bodies precisely with nothing written", async () => {
    const before = read("a.txt")
    const url = `${gw.url}/v1/apply`
    const malformed = await call(url, { token: parent, raw: "{\"patch\":" })
    expect(malformed.status).toBe(400)
    expect(malformed.json.errors[0].message).toMatch(/JSON/)
    const wrongType = await call(url, { token: parent, body: { patch: 1, turn: "t" } })
    expect(wrongType.status).toBe(400)
    expect(wrongType.json.errors).toEqual([{ path: ["payload", "patch"], message: expect.stringMatching(/string/) }])
    const unknownField = await call(url, { token: parent, body: { patch: "x", turn: "t", force: true } })
    expect(unknownField.status).toBe(400)
    expect(unknownField.json.errors[0].path).toEqual(["payload", "force"])
    // Ids follow the one id rule: the refusal names the offending id.
    for (const turn of ["../x", "a//b", "caf\u00e9"]) {
      const badTurn = await call(url, { token: parent, body: { patch: patchOf("*** Add File: t.txt", "+t"), turn } })
      expect(badTurn.status).toBe(400)
      expect(badTurn.json.errors).toEqual([{ path: ["payload", "turn"], message: expect.stringContaining(`the id ${JSON.stringify(turn)} is refused`) }])
    }
    expect(fs.existsSync(path.join(w.ws, "t.txt"))).toBe(false)
    const huge = await call(url, { token: parent, body: { patch: "x".repeat(300 * 1024), turn: "t" } })
    expect(huge.status).toBe(413)
    expect(huge.json._tag).toBe("PayloadTooLarge")
    // Chunked, with no Content-Length to refuse up front: the read stops at the cap.
    const lines = Array.from({ length: 30_000 }, (_, i) => `+line ${i}`)
    const body = JSON.stringify({ patch: patchOf("*** Add File: chunked.txt", ...lines), turn: "t" })
    const chunked = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${parent}`, "content-type": "application/json" },
      body: new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode(body))
          c.close()
        }
      }),
      duplex: "half"
    } as RequestInit)
    expect(chunked.status).toBe(413)
    expect(fs.existsSync(path.join(w.ws, "chunked.txt"))).toBe(false)
    expect(read("a.txt")).toBe(before)
  })

  it("refuses '..', absolute paths and links out of the workspace (422, nothing written)", async () => {
    const url = `${gw.url}/v1/apply`
    const dotdot = await call(url, { token: parent, body: { patch: patchOf("*** Add File: ../evil.txt", "+x"), turn: "t" } })
    expect(dotdot).toMatchObject({ status: 422, json: { _tag: "Rejected", code: "path_outside_roots" } })
    const absolute = await call(url, { token: parent, body: { patch: patchOf(`*** Add File: ${w.outside}/abs.txt`, "+x"), turn: "t" } })
    expect(absolute).toMatchObject({ status: 422, json: { _tag: "Rejected" } })
    const link = await call(url, { token: parent, body: { patch: patchOf("*** Update File: out-link/secret.txt", "@@", "-secret", "+owned"), turn: "t" } })
    expect(link).toMatchObject({ status: 422, json: { _tag: "Rejected" } })
    expect(fs.existsSync(path.join(w.dir, "evil.txt"))).toBe(false)
    expect(fs.existsSync(path.join(w.outside, "abs.txt"))).toBe(false)
    expect(fs.readFileSync(path.join(w.outside, "secret.txt"), "utf8")).toBe("secret\n")
  })

  it("a token for one thread cannot apply in a thread it does not see (404)", async () => {
    const r = await call(`${gw.url}/v1/apply`, {
      token: child,
      body: { patch: patchOf("*** Add File: nope.txt", "+x"), thread: "parent", turn: "t" }
    })
    expect(r).toMatchObject({ status: 404, json: { _tag: "NotFound" } })
    expect(fs.existsSync(path.join(w.ws, "nope.txt"))).toBe(false)
  })

  it("4 clients applying to one file at once lose no update", async () => {
    const results = await Promise.all([1, 2, 3, 4].map((i) =>
      call(`${gw.url}/v1/apply`, {
        token: parent,
        body: { patch: patchOf("*** Update File: slots.txt", "@@", `-slot-${i}`, `+done-${i}`), turn: `c${i}` }
      })
    ))
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200])
    expect(read("slots.txt")).toBe("done-1\nx\ndone-2\nx\ndone-3\nx\ndone-4\n")
  })
})

describe("thread authorization and views", () => {
  it("a child token sees its own thread only; the parent sees the child's records", async () => {
    const applied = await call(`${gw.url}/v1/apply`, {
      token: child,
      body: { patch: patchOf("*** Add File: c.txt", "+from child"), turn: "ct" }
    })
    expect(applied.status).toBe(200)
    const own = await call(`${gw.url}/v1/timeline`, { token: child })
    expect(own.json.items.map((r: any) => r.threadId)).toEqual(["parent/child"])
    expect((await call(`${gw.url}/v1/timeline?thread=parent`, { token: child })).status).toBe(404)
    expect((await call(`${gw.url}/v1/timeline?thread=parent%2Fchild`, { token: sibling })).status).toBe(404)
    const all = await call(`${gw.url}/v1/timeline?descendants=true`, { token: parent })
    expect(all.json.items.map((r: any) => r.threadId)).toContain("parent/child")
    // A record of another thread by id is as absent as a record that does not exist.
    const byParent = await call(`${gw.url}/v1/timeline`, { token: parent })
    const parentRecord = byParent.json.items[0].recordId
    const hidden = await call(`${gw.url}/v1/diff?target=${encodeURIComponent(parentRecord)}`, { token: child })
    const missing = await call(`${gw.url}/v1/diff?target=rec-nothing`, { token: child })
    expect(hidden.status).toBe(404)
    expect(missing.status).toBe(404)
    expect((await call(`${gw.url}/v1/diff?target=${encodeURIComponent(parentRecord)}`, { token: parent })).status).toBe(200)
  })

  it("pages with a cap and an opaque cursor; a cut page says so; bad options are 400", async () => {
    const first = await call(`${gw.url}/v1/timeline?descendants=true&limit=1`, { token: parent })
    expect(first.status).toBe(200)
    expect(first.json.items).toHaveLength(1)
    expect(typeof first.json.nextCursor).toBe("string")
    const second = await call(`${gw.url}/v1/timeline?descendants=true&limit=1&cursor=${encodeURIComponent(first.json.nextCursor)}`, { token: parent })
    expect(second.json.items[0].recordId).not.toBe(first.json.items[0].recordId)
    const capped = await call(`${gw.url}/v1/timeline?descendants=true&maxBytes=1024`, { token: parent })
    expect(capped.json.truncated).toBe(true)
    expect((await call(`${gw.url}/v1/timeline?limit=0`, { token: parent })).status).toBe(400)
    expect((await call(`${gw.url}/v1/timeline?limit=abc`, { token: parent })).status).toBe(400)
    expect((await call(`${gw.url}/v1/timeline?cursor=garbage`, { token: parent })).status).toBe(400)
    expect((await call(`${gw.url}/v1/timeline?bogus=1`, { token: parent })).status).toBe(400)
    const file = await call(`${gw.url}/v1/files?path=a.txt`, { token: parent })
    expect(file.status).toBe(200)
    expect((await call(`${gw.url}/v1/files?path=..%2Fx`, { token: parent })).status).toBe(400)
  })
})

describe("provider events", () => {
  it("ingests a Codex turn diff as a partial provider aggregate; a malformed one is 400", async () => {
    const diff = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-TWO\n+two again\n three\n"
    const r = await call(`${gw.url}/v1/provider-events`, { token: parent, body: { format: "codex-turn-diff", text: diff, turn: "codex-1" } })
    expect(r.status).toBe(200)
    expect(r.json.record).toMatchObject({ authority: "codex_aggregate_event", provenance: "provider_aggregate", threadId: "parent" })
    expect(r.json.alreadyRecorded).toBe(false)
    const bad = await call(`${gw.url}/v1/provider-events`, { token: parent, body: { format: "codex-turn-diff", text: "not a diff", turn: "codex-2" } })
    expect(bad.status).toBe(400)
  })
})

describe("the event stream", () => {
  it("streams applied records the caller sees, not others'", async () => {
    const events = await openEvents(gw.url, child)
    expect(events.response.status).toBe(200)
    expect(events.response.headers.get("content-type")).toMatch(/text\/event-stream/)
    const until = events.until
    await until(/event: hello/)
    await call(`${gw.url}/v1/apply`, { token: parent, body: { patch: patchOf("*** Add File: p-only.txt", "+p"), turn: "s1" } })
    await call(`${gw.url}/v1/apply`, { token: child, body: { patch: patchOf("*** Add File: c-live.txt", "+c"), turn: "s2" } })
    await until(/c-live\.txt/)
    events.close()
    expect(events.seen()).toMatch(/event: record\ndata: .*"threadId":"parent\/child"/)
    expect(events.seen()).not.toMatch(/p-only\.txt/)
  })
})
