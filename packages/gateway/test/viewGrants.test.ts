/**
 * File-view grants through the running gateway: a grant serves one file as bounded text with
 * the line marked and an ETag; replayed, edited and expired grants, `..`, absolute paths, links
 * out of the workspace, binary and oversized files, and threads the token does not see are each
 * refused precisely. Also the grant format itself (`ViewGrants`).
 */
import * as Result from "effect/Result"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { checkPath, DEFAULT_GRANT_TTL_MS, makeGrants } from "../src/ViewGrants.ts"
import { call, makeWorkspace, registerThread, type Started, start, tokenFor } from "./support.ts"

let gw: Started
let shortGw: Started
let w: ReturnType<typeof makeWorkspace>
let token: string
let childToken: string

beforeAll(async () => {
  w = makeWorkspace({
    "src/a.ts": "line 1\nline <2>\nline 3\n",
    "bin.dat": new Uint8Array([0, 1, 2, 3]),
    "big.txt": "x".repeat(1024 * 1024 + 1)
  })
  fs.writeFileSync(path.join(w.outside, "secret.txt"), "secret\n")
  fs.symlinkSync(path.join(w.outside, "secret.txt"), path.join(w.ws, "leak.txt"))
  gw = await start({ root: w.ws })
  shortGw = await start({ root: w.ws, grantTtlMs: 0 })
  await registerThread(w.ws, w.db, "p")
  await registerThread(w.ws, w.db, "p/c", "p")
  await registerThread(w.ws, w.db, "other")
  token = (await tokenFor(w.db, "p")).token
  childToken = (await tokenFor(w.db, "p/c")).token
})

afterAll(async () => {
  await gw?.stop()
  await shortGw?.stop()
  fs.rmSync(w.dir, { recursive: true, force: true })
})

const grant = (server: Started, thread: string, body: unknown, t = token) =>
  call(`${server.url}/v1/threads/${encodeURIComponent(thread)}/view-grants`, { token: t, body })

describe("view grants", () => {
  it("serves one file as text with the line marked, an ETag, once", async () => {
    const before = Date.now()
    const g = await grant(gw, "p/c", { path: "src/a.ts", line: 2, column: 3 })
    const after = Date.now()
    expect(g.status).toBe(200)
    expect(g.json.url).toBe(`${gw.url}/view/${g.json.grant}`)
    // Valid for the default lifetime from when the server issued it (between the two readings).
    const expiresAt = Date.parse(g.json.expiresAt)
    expect(expiresAt).toBeGreaterThanOrEqual(before + DEFAULT_GRANT_TTL_MS)
    expect(expiresAt).toBeLessThanOrEqual(after + DEFAULT_GRANT_TTL_MS)
    const page = await call(g.json.url)
    expect(page.status).toBe(200)
    expect(page.headers.get("content-type")).toMatch(/text\/html/)
    expect(page.text).toContain('<tr id="L2" class="mark">')
    expect(page.text).toContain("line &lt;2&gt;")
    expect(page.headers.get("etag")).toMatch(/^"[0-9a-f]{64}"$/)
    const replay = await call(g.json.url)
    expect(replay).toMatchObject({ status: 410, json: { reason: "Replayed" } })
    // A client that has the content asks with its ETag: nothing is sent again.
    const again = await grant(gw, "p", { path: "src/a.ts" })
    const cached = await call(`${again.json.url}?format=text`, { headers: { "if-none-match": page.headers.get("etag")! } })
    expect(cached.status).toBe(304)
    const plain = await call(`${(await grant(gw, "p", { path: "src/a.ts" })).json.url}?format=text`)
    expect(plain.text).toBe("line 1\nline <2>\nline 3\n")
  })

  it("refuses an edited, a foreign and an expired grant", async () => {
    const g = await grant(gw, "p", { path: "src/a.ts" })
    const [payload, mac] = g.json.grant.split(".")
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString())
    const edited = Buffer.from(JSON.stringify({ ...claims, path: "big.txt" })).toString("base64url")
    expect(await call(`${gw.url}/view/${edited}.${mac}`)).toMatchObject({ status: 403, json: { reason: "Altered" } })
    const foreign = await grant(shortGw, "p", { path: "src/a.ts" })
    expect(await call(`${gw.url}/view/${foreign.json.grant}`)).toMatchObject({ status: 403, json: { reason: "Altered" } })
    // shortGw's grants expire as they are issued.
    expect(await call(foreign.json.url)).toMatchObject({ status: 410, json: { reason: "Expired" } })
    expect(await call(`${gw.url}/view/garbage`)).toMatchObject({ status: 403, json: { reason: "Malformed" } })
  })

  it("refuses '..', absolute paths, links out of the workspace, binary and oversized files", async () => {
    expect(await grant(gw, "p", { path: "../outside/secret.txt" })).toMatchObject({ status: 400, json: { _tag: "BadRequest", reason: "PathRefused" } })
    expect(await grant(gw, "p", { path: "src/../src/a.ts" })).toMatchObject({ status: 400 })
    expect(await grant(gw, "p", { path: path.join(w.outside, "secret.txt") })).toMatchObject({ status: 400, json: { reason: "PathRefused" } })
    const leak = await grant(gw, "p", { path: "leak.txt" })
    expect(leak.status).toBe(422)
    expect(leak.text).not.toContain("secret\\n")
    expect(await grant(gw, "p", { path: "missing.txt" })).toMatchObject({ status: 404 })
    expect(await grant(gw, "p", { path: "src" })).toMatchObject({ status: 422, json: { code: "not_a_file" } })
    expect(await grant(gw, "p", { path: "src/a.ts", line: 0 })).toMatchObject({ status: 400 })
    expect(await grant(gw, "p", { path: "src/a.ts", extra: 1 })).toMatchObject({ status: 400 })
    const bin = await grant(gw, "p", { path: "bin.dat" })
    expect(await call(bin.json.url)).toMatchObject({ status: 415, json: { _tag: "Binary" } })
    const big = await grant(gw, "p", { path: "big.txt" })
    expect(await call(big.json.url)).toMatchObject({ status: 413, json: { _tag: "TooLarge" } })
  })

  it("a token never gets a grant for a thread it does not see", async () => {
    expect(await grant(gw, "p", { path: "src/a.ts" }, childToken)).toMatchObject({ status: 404 })
    expect(await grant(gw, "other", { path: "src/a.ts" })).toMatchObject({ status: 404 })
    expect((await call(`${gw.url}/v1/threads/p/view-grants`, { body: { path: "src/a.ts" } })).status).toBe(401)
  })
})

describe("ViewGrants", () => {
  it("checkPath keeps clean relative paths and refuses the rest", () => {
    expect(checkPath("a/b.txt")).toEqual(Result.succeed("a/b.txt"))
    for (const bad of ["../a", "a/../../b", "/etc/passwd", "C:\\x", "a\u0000b", ""]) {
      expect(Result.isFailure(checkPath(bad))).toBe(true)
    }
  })

  it("a grant redeems once, before its expiry, only under its own secret", () => {
    const a = makeGrants(new Uint8Array(32).fill(1))
    const b = makeGrants(new Uint8Array(32).fill(2))
    const g = a.issue({ thread: "t", path: "p.txt", line: 3 }, 1_000, 500)
    expect(Result.isFailure(b.redeem(g.grant, 1_100))).toBe(true)
    expect(Result.getOrThrow(a.redeem(g.grant, 1_100))).toMatchObject({ thread: "t", path: "p.txt", line: 3 })
    expect(Result.isFailure(a.redeem(g.grant, 1_200))).toBe(true)
    const late = a.issue({ thread: "t", path: "p.txt" }, 1_000, 500)
    const expired = a.redeem(late.grant, 1_500)
    expect(Result.isFailure(expired) && expired.failure.reason).toBe("Expired")
  })
})
