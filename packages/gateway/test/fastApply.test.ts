/**
 * The fast `POST /v1/apply` path agrees with the router and the OpenAPI contract: the same
 * requests sent to a gateway with the fast path and to one without it (two identical
 * workspaces) get the same status, content type and body (ids and times aside) for success,
 * bad JSON, schema errors, 401s, an unseen thread, engine refusals, the body cap and odd
 * headers; the front handler alone shows which of them it answers itself and which it hands
 * to the router untouched; and every status it answers is one the OpenAPI document lists.
 */
import { ApplyRequest } from "@forkjoin/schema/Gateway"
import { PatchHistoryRecord } from "@forkjoin/schema/PatchHistoryRecord"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { servicesLayer } from "../src/Gateway.ts"
import { makeFastApply } from "../src/internal/fastApply.ts"
import { expiredTokenFor, makeWorkspace, patchOf, registerThread, revokeToken, type Started, start, tokenFor } from "./support.ts"

const FILES = { "a.txt": "one\ntwo\nthree\n", "b.txt": "b1\nb2\n" }
const CAP = 4096

interface Raw {
  readonly method?: string
  readonly path?: string
  readonly headers?: Record<string, string>
  readonly body?: string
  /** Send the body chunked (no Content-Length). */
  readonly chunked?: boolean
}

/** One request over node:http, exactly as given; resolves to status, content type and body. */
const send = (base: string, r: Raw) =>
  new Promise<{ status: number; contentType: string | undefined; text: string }>((resolve, reject) => {
    const u = new URL(base)
    const headers: Record<string, string | number> = { ...r.headers }
    if (r.body !== undefined && r.chunked !== true) headers["content-length"] = Buffer.byteLength(r.body)
    const req = http.request({ host: u.hostname, port: u.port, path: r.path ?? "/v1/apply", method: r.method ?? "POST", headers }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (c: string) => (text += c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, contentType: res.headers["content-type"], text }))
    })
    req.on("error", reject)
    if (r.body !== undefined && r.chunked === true) req.write(r.body)
    req.end(r.body !== undefined && r.chunked !== true ? r.body : undefined)
  })

/** Ids, times and the workspace's own path differ between two workspaces; nothing else may. */
const normalise = (text: string, roots: ReadonlyArray<string>) => {
  let out = text
  for (const root of roots) out = out.split(root).join("<root>")
  return out
    .replace(/(rec|inv|env)-[0-9a-f-]+/g, "$1-*")
    .replace(/patch:[0-9a-f-]+/g, "patch:*")
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, "<time>")
}

const json = { "content-type": "application/json" }
const bearer = (token: string) => ({ ...json, authorization: `Bearer ${token}` })
const applyBody = (patch: string, extra: Record<string, unknown> = {}) => JSON.stringify({ patch, turn: "t", ...extra })

interface Side {
  readonly w: ReturnType<typeof makeWorkspace>
  readonly gw: Started
  readonly tokens: Record<"main" | "other" | "revoked" | "expired", string>
}

const setUp = async (fastApply: boolean): Promise<Side> => {
  const w = makeWorkspace(FILES)
  const gw = await start({ root: w.ws, maxBodyBytes: CAP, fastApply })
  await registerThread(w.ws, w.db, "main")
  await registerThread(w.ws, w.db, "other")
  const revoked = await tokenFor(w.db, "main")
  await revokeToken(w.db, revoked.tokenId)
  const expired = await expiredTokenFor(w.db, "main")
  return {
    w,
    gw,
    tokens: { main: (await tokenFor(w.db, "main")).token, other: (await tokenFor(w.db, "other")).token, revoked: revoked.token, expired: expired.token }
  }
}

/** The requests both gateways get, in order (each may depend on the files the ones before left). */
const cases = (t: Side["tokens"]): ReadonlyArray<readonly [string, Raw]> => [
  ["success", { headers: bearer(t.main), body: applyBody(patchOf("*** Update File: a.txt", "@@", "-two", "+TWO")) }],
  ["success in a thread given explicitly, codex profile", {
    headers: bearer(t.main),
    body: applyBody(patchOf("*** Update File: b.txt", "@@", "-b1", "+B1"), { thread: "main", profile: "codex", invocation: "inv-x" })
  }],
  ["success, charset in the content type", {
    headers: { ...bearer(t.main), "content-type": "application/json; charset=utf-8" },
    body: applyBody(patchOf("*** Add File: new.txt", "+n"))
  }],
  ["bad JSON", { headers: bearer(t.main), body: "{\"patch\":" }],
  ["empty body", { headers: bearer(t.main), body: "" }],
  ["an array", { headers: bearer(t.main), body: "[]" }],
  ["wrong type", { headers: bearer(t.main), body: JSON.stringify({ patch: 1, turn: "t" }) }],
  ["missing key", { headers: bearer(t.main), body: JSON.stringify({ turn: "t" }) }],
  ["unknown field", { headers: bearer(t.main), body: JSON.stringify({ patch: "x", turn: "t", force: true }) }],
  ["bad profile and several bad fields", { headers: bearer(t.main), body: JSON.stringify({ patch: 2, turn: 3, profile: "vim" }) }],
  ["no token", { headers: json, body: applyBody("x") }],
  ["malformed token", { headers: bearer("nope"), body: applyBody("x") }],
  ["unknown token", { headers: bearer(`fjt_0123456789abcdef_${"A".repeat(43)}`), body: applyBody("x") }],
  ["revoked token", { headers: bearer(t.revoked), body: applyBody(patchOf("*** Add File: r.txt", "+r")) }],
  ["expired token", { headers: bearer(t.expired), body: applyBody(patchOf("*** Add File: e.txt", "+e")) }],
  ["lower-case scheme, extra spaces", {
    headers: { ...json, authorization: `bearer   ${t.main}` },
    body: applyBody(patchOf("*** Add File: spaced.txt", "+s"))
  }],
  ["a thread the token does not see", { headers: bearer(t.other), body: applyBody(patchOf("*** Add File: no.txt", "+x"), { thread: "main" }) }],
  ["engine refusal: syntax", { headers: bearer(t.main), body: applyBody("x") }],
  ["engine refusal: stale context", { headers: bearer(t.main), body: applyBody(patchOf("*** Update File: a.txt", "@@", "-two", "+again")) }],
  ["engine refusal: outside the workspace", { headers: bearer(t.main), body: applyBody(patchOf("*** Add File: ../evil.txt", "+x")) }],
  ["engine refusal: overwrite without allowOverwrite", { headers: bearer(t.main), body: applyBody(patchOf("*** Add File: new.txt", "+again")) }],
  ["over the body cap", { headers: bearer(t.main), body: applyBody("x".repeat(CAP)) }],
  ["chunked over the body cap", { headers: bearer(t.main), body: applyBody("x".repeat(CAP * 2)), chunked: true }],
  ["chunked, small", { headers: bearer(t.main), body: applyBody(patchOf("*** Add File: chunked.txt", "+c")), chunked: true }],
  ["another content type", { headers: { ...bearer(t.main), "content-type": "text/plain" }, body: applyBody("x") }],
  ["a query string", { path: "/v1/apply?x=1", headers: bearer(t.main), body: applyBody(patchOf("*** Add File: q.txt", "+q")) }],
  ["GET", { method: "GET", headers: bearer(t.main) }]
]

let fast: Side
let router: Side

beforeAll(async () => {
  fast = await setUp(true)
  router = await setUp(false)
})

afterAll(async () => {
  for (const side of [fast, router]) {
    await side?.gw.stop()
    if (side !== undefined) fs.rmSync(side.w.dir, { recursive: true, force: true })
  }
})

describe("the fast apply path", () => {
  it("answers every request exactly as the router does", async () => {
    const fastCases = cases(fast.tokens)
    const routerCases = cases(router.tokens)
    const roots = [fast.w.ws, router.w.ws]
    for (let i = 0; i < fastCases.length; i++) {
      const [name, request] = fastCases[i]!
      const a = await send(fast.gw.url, request)
      const b = await send(router.gw.url, routerCases[i]![1])
      expect({ name, status: a.status, contentType: a.contentType, body: normalise(a.text, roots) }).toEqual({
        name,
        status: b.status,
        contentType: b.contentType,
        body: normalise(b.text, roots)
      })
    }
    // And both workspaces hold the same files after the same requests.
    for (const file of ["a.txt", "b.txt", "new.txt", "spaced.txt", "chunked.txt", "q.txt"]) {
      expect(fs.readFileSync(path.join(fast.w.ws, file), "utf8")).toBe(fs.readFileSync(path.join(router.w.ws, file), "utf8"))
    }
    for (const file of ["r.txt", "e.txt", "no.txt"]) expect(fs.existsSync(path.join(fast.w.ws, file))).toBe(false)
  })

  it("answers the common requests itself and hands the rest to the router unread", async () => {
    const w = makeWorkspace(FILES)
    const scope = Effect.runSync(Scope.make())
    const server = http.createServer()
    try {
      const services = await Effect.runPromise(Layer.buildWithScope(servicesLayer(w.ws, w.db), scope))
      const front = makeFastApply(services, CAP, (text) => text)
      const routed: Array<string> = []
      // The stand-in router answers 599 with the body it could still read, so a hand-over that lost the body shows.
      server.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
        const taken = front(req, res, (q, s) => {
          let body = ""
          q.on("data", (c: Buffer) => (body += c.toString()))
          q.on("end", () => {
            routed.push(body)
            s.writeHead(599)
            s.end(body)
          })
        })
        if (!taken) {
          res.writeHead(598)
          res.end()
        }
      })
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
      const address = server.address()
      const base = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
      await registerThread(w.ws, w.db, "main")
      await registerThread(w.ws, w.db, "other")
      const tokens = {
        main: (await tokenFor(w.db, "main")).token,
        other: (await tokenFor(w.db, "other")).token
      }
      const revoked = (await tokenFor(w.db, "main"))
      await revokeToken(w.db, revoked.tokenId)
      const status = async (r: Raw) => (await send(base, r)).status
      // Answered by the fast path.
      expect(await status({ headers: bearer(tokens.main), body: applyBody(patchOf("*** Update File: a.txt", "@@", "-two", "+TWO")) })).toBe(200)
      expect(fs.readFileSync(path.join(w.ws, "a.txt"), "utf8")).toBe("one\nTWO\nthree\n")
      expect(await status({ headers: bearer(tokens.main), body: "{" })).toBe(400)
      expect(await status({ headers: bearer(tokens.main), body: JSON.stringify({ patch: 1, turn: "t" }) })).toBe(400)
      expect(await status({ headers: bearer(tokens.other), body: applyBody("x", { thread: "main" }) })).toBe(404)
      expect(await status({ headers: bearer(tokens.main), body: applyBody("x") })).toBe(422)
      expect(routed).toEqual([])
      // Declined before anything is read (598: the router's own listener gets it as ever).
      const body = applyBody(patchOf("*** Add File: z.txt", "+z"))
      const declined: ReadonlyArray<Raw> = [
        { headers: json, body },
        { headers: { ...json, authorization: `bearer ${tokens.main}` }, body },
        { headers: bearer(tokens.main), body, chunked: true },
        { headers: bearer(tokens.main), body: applyBody("x".repeat(CAP)) },
        { headers: { ...bearer(tokens.main), "content-type": "text/plain" }, body },
        { headers: { ...bearer(tokens.main), expect: "100-continue" }, body },
        { path: "/v1/apply?x", headers: bearer(tokens.main), body },
        { path: "/v1/whoami", method: "GET", headers: bearer(tokens.main) }
      ]
      for (const r of declined) expect(await status(r)).toBe(598)
      // A refused token is handed over after the check (599), its body still unread and intact.
      expect(await send(base, { headers: bearer("nope"), body })).toMatchObject({ status: 599, text: body })
      expect(await send(base, { headers: bearer(revoked.token), body })).toMatchObject({ status: 599, text: body })
      expect(routed).toEqual([body, body])
      expect(fs.existsSync(path.join(w.ws, "z.txt"))).toBe(false)
    } finally {
      await new Promise((r) => server.close(r))
      await Effect.runPromise(Scope.close(scope, Exit.void))
      fs.rmSync(w.dir, { recursive: true, force: true })
    }
  })

  it("answers only statuses and bodies the OpenAPI document lists for /v1/apply", async () => {
    const doc = JSON.parse((await send(fast.gw.url, { method: "GET", path: "/openapi.json" })).text)
    const operation = doc.paths["/v1/apply"].post
    expect(Object.keys(operation.requestBody.content)).toEqual(["application/json"])
    const documented = Object.keys(operation.responses)
    const t = fast.tokens
    const observed = [
      await send(fast.gw.url, { headers: bearer(t.main), body: applyBody(patchOf("*** Add File: doc.txt", "+d")) }),
      await send(fast.gw.url, { headers: bearer(t.main), body: "{" }),
      await send(fast.gw.url, { headers: bearer("nope"), body: applyBody("x") }),
      await send(fast.gw.url, { headers: bearer(t.other), body: applyBody("x", { thread: "main" }) }),
      await send(fast.gw.url, { headers: bearer(t.main), body: applyBody("x") })
    ]
    expect(observed.map((r) => r.status)).toEqual([200, 400, 401, 404, 422])
    for (const r of observed) expect(documented).toContain(String(r.status))
    // The success body is the documented record; the request the documented envelope.
    expect(Schema.decodeUnknownExit(PatchHistoryRecord)(JSON.parse(observed[0]!.text))._tag).toBe("Success")
    expect(Schema.decodeUnknownExit(ApplyRequest)(JSON.parse(applyBody("x")))._tag).toBe("Success")
    expect(Object.keys(operation.responses["200"].content)).toEqual(["application/json"])
    expect(Object.keys(operation.responses["400"].content)).toContain("application/problem+json")
  })
})
