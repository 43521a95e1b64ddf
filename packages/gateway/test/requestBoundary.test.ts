/**
 * The gateway's request boundary attacked through the real server (port 0, raw node:http and
 * net requests so the Host header, the content type and the body are the attacker's): a Host
 * other than the server's names (DNS rebinding) on every kind of route, the fast apply path
 * and `Expect: 100-continue` included; the login exchange's body read before any token (a
 * cross-site `text/plain` POST, a type-less blob, chunked, over 8 KiB, 64 MiB that must not be
 * read); `/v1/` bodies with no valid token left unread; the event stream's `hello` revealing
 * only the caller's thread; error bodies naming no absolute path of the server; and token
 * threads held to the id rule.
 */
import { ThreadId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { allowedHostNames, makeRedact, requestHostName } from "../src/internal/boundary.ts"
import * as Tokens from "../src/Tokens.ts"
import { TokenStore } from "../src/TokenStore.ts"
import { call, makeWorkspace, openEvents, patchOf, registerThread, type Started, start, tokenFor } from "./support.ts"

let gw: Started
let w: ReturnType<typeof makeWorkspace>
let port: number
let main: string

beforeAll(async () => {
  w = makeWorkspace({ "a.txt": "one\n" })
  gw = await start({ root: w.ws, pollMs: 50, loginThread: "main" })
  port = Number(new URL(gw.url).port)
  await registerThread(w.ws, w.db, "main")
  main = (await tokenFor(w.db, "main")).token
})

afterAll(async () => {
  await gw?.stop()
  fs.rmSync(w.dir, { recursive: true, force: true })
})

interface Answer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly text: string
  readonly json: any
}

/** One request through node:http with the headers exactly as given (Host included). */
const send = (options: {
  readonly method?: string
  readonly path: string
  readonly headers?: Record<string, string>
  readonly body?: string
  readonly to?: number
}): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const request = http.request({
      host: "127.0.0.1",
      port: options.to ?? port,
      method: options.method ?? "GET",
      path: options.path,
      headers: options.headers,
      setHost: options.headers?.["host"] === undefined,
      agent: false
    }, (response) => {
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (d: string) => (text += d))
      response.on("end", () => {
        let json: any
        try {
          json = JSON.parse(text)
        } catch {
          json = undefined
        }
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text, json })
      })
    })
    request.on("error", reject)
    request.end(options.body)
  })

/**
 * Sends `head` then up to `total` body bytes on a raw connection, as fast as the connection
 * takes them, until the server closes it: what the server answered and how many body bytes
 * the connection accepted (handed to the kernel) before it closed. A server that stops reading
 * stops the upload at the sockets' buffers; one that reads takes all of it.
 */
const upload = (head: string, total: number): Promise<{ readonly response: string; readonly accepted: number }> =>
  new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1")
    const chunk = Buffer.alloc(64 * 1024, "a")
    let response = ""
    let accepted = 0
    let queued = 0
    let closed = false
    const pump = () => {
      while (!closed && queued < total) {
        queued += chunk.length
        const more = socket.write(chunk, (error) => {
          if (error === undefined || error === null) accepted += chunk.length
          // Everything sent: wait for the answer, then hang up ourselves.
          if (accepted >= total && /\r\n\r\n/.test(response)) socket.end()
        })
        if (!more) return void socket.once("drain", pump)
      }
    }
    socket.setEncoding("utf8")
    socket.on("data", (d: string) => {
      response += d
      if (accepted >= total) socket.end()
    })
    socket.on("error", () => {}) // the reset after the server's close, mid-upload
    socket.on("close", () => {
      closed = true
      resolve({ response, accepted })
    })
    socket.on("connect", () => {
      socket.write(head)
      pump()
    })
  })

const statusOf = (raw: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0)
const bodyOf = (raw: string) => JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4))
const MiB = 1024 * 1024

describe("the Host header (DNS rebinding)", () => {
  it("answers its loopback names, with or without a port, in any case", async () => {
    for (const host of ["127.0.0.1", `127.0.0.1:${port}`, "localhost", `localhost:${port}`, `LocalHost:${port}`, "[::1]", `[::1]:${port}`]) {
      const r = await send({ path: "/openapi.json", headers: { host } })
      expect({ host, status: r.status }).toEqual({ host, status: 200 })
    }
  })

  it("refuses any other name with 403 host_not_allowed on every kind of route, and applies nothing", async () => {
    const hostile = [`evil.example:${port}`, "evil.example", `127.0.0.1.nip.io:${port}`, `localhost.evil.example:${port}`, `127.0.0.1:${port}x`, "[::1", ""]
    const routes = [
      { path: "/" },
      { path: "/openapi.json" },
      { path: "/v1/whoami", headers: { authorization: `Bearer ${main}` } },
      { path: "/v1/timeline", headers: { authorization: `Bearer ${main}` } },
      { path: "/view/anything" },
      { method: "POST", path: "/auth/exchange", headers: { "content-type": "application/json" }, body: "{\"code\":\"x\"}" },
      // The fast apply path, with a valid token: it must not apply for a foreign Host either.
      {
        method: "POST",
        path: "/v1/apply",
        headers: { authorization: `Bearer ${main}`, "content-type": "application/json" },
        body: JSON.stringify({ patch: patchOf("*** Add File: rebound.txt", "+x"), turn: "t" })
      }
    ]
    for (const host of hostile) {
      for (const route of routes) {
        const r = await send({ ...route, headers: { ...route.headers, host } })
        expect({ host, path: route.path, status: r.status, code: r.json?.code }).toEqual({ host, path: route.path, status: 403, code: "host_not_allowed" })
        expect(r.json.message).toMatch(/--host-name/)
        expect(r.headers["connection"]).toBe("close")
      }
    }
    expect(fs.existsSync(path.join(w.ws, "rebound.txt"))).toBe(false)
  })

  it("refuses a foreign Host on the event stream, with 100-continue, and in an absolute request target", async () => {
    const events = await send({ path: "/v1/events", headers: { host: "evil.example", authorization: `Bearer ${main}` } })
    expect(events).toMatchObject({ status: 403, json: { code: "host_not_allowed" } })
    const body = JSON.stringify({ patch: patchOf("*** Add File: continued.txt", "+x"), turn: "t" })
    const continued = await send({
      method: "POST",
      path: "/v1/apply",
      headers: { host: "evil.example", expect: "100-continue", authorization: `Bearer ${main}`, "content-type": "application/json" },
      body
    })
    expect(continued).toMatchObject({ status: 403, json: { code: "host_not_allowed" } })
    expect(fs.existsSync(path.join(w.ws, "continued.txt"))).toBe(false)
    // The authority of an absolute target takes precedence over Host (RFC 9112): it is the one checked.
    const absolute = await send({ path: "http://evil.example/openapi.json", headers: { host: "127.0.0.1" } })
    expect(absolute).toMatchObject({ status: 403, json: { code: "host_not_allowed" } })
  })

  it("refuses an HTTP/1.0 request that names no Host", async () => {
    const { response } = await upload("GET /openapi.json HTTP/1.0\r\n\r\n", 0)
    expect(statusOf(response.replace(/^HTTP\/1\.0/, "HTTP/1.1"))).toBe(403)
    expect(bodyOf(response)).toMatchObject({ code: "host_not_allowed", message: expect.stringMatching(/names no Host/) })
  })

  it("bound to every address with --host-name: answers the bound address and the given names, nothing else", async () => {
    const remote = await start({ root: w.ws, host: "0.0.0.0", allowRemote: true, hostNames: ["gw.example.test", "10.9.8.7"] })
    try {
      const to = Number(new URL(remote.url).port)
      for (const host of ["gw.example.test", `GW.example.test:${to}`, "10.9.8.7", `0.0.0.0:${to}`, `127.0.0.1:${to}`]) {
        expect({ host, status: (await send({ to, path: "/openapi.json", headers: { host } })).status }).toEqual({ host, status: 200 })
      }
      for (const host of ["evil.example", "sub.gw.example.test", "10.9.8.70"]) {
        const r = await send({ to, path: "/openapi.json", headers: { host } })
        expect({ host, status: r.status, code: r.json?.code }).toEqual({ host, status: 403, code: "host_not_allowed" })
      }
    } finally {
      await remote.stop()
    }
  })

  it("a non-loopback bind answers only its address and the given names (no loopback names)", () => {
    expect([...allowedHostNames("10.1.2.3", false, ["gw.example"])].sort()).toEqual(["10.1.2.3", "gw.example"])
    expect([...allowedHostNames("fd00::5", false, [])]).toEqual(["[fd00::5]"])
    expect(requestHostName("[fd00::5]:80")).toBe("[fd00::5]")
    expect(requestHostName("fd00::5")).toBeUndefined()
  })

  it("refuses to start with a --host-name that is not a host name", async () => {
    for (const bad of ["http://gw.example", "gw.example:8080", "gw.example/x", "", "a b", "*.example"]) {
      await expect(start({ root: w.ws, hostNames: [bad] })).rejects.toMatchObject({ reason: "HostName" })
    }
  })
})

describe("bodies read before a token is checked", () => {
  it("the login exchange refuses text/plain, forms and type-less bodies with 415, before reading them", async () => {
    for (const contentType of ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", undefined]) {
      const r = await send({
        method: "POST",
        path: "/auth/exchange",
        headers: contentType === undefined ? {} : { "content-type": contentType },
        body: "{\"code\":\"x\"}"
      })
      expect({ contentType, status: r.status, code: r.json?.code }).toEqual({ contentType, status: 415, code: "unsupported_media_type" })
      expect(r.headers["connection"]).toBe("close")
    }
  })

  it("refuses a chunked body (411) and a declared body over 8 KiB (413); a small JSON one still logs in", async () => {
    const chunked = await send({ method: "POST", path: "/auth/exchange", headers: { "content-type": "application/json", "transfer-encoding": "chunked" }, body: "{}" })
    expect(chunked).toMatchObject({ status: 411, json: { code: "length_required" } })
    const over = await send({ method: "POST", path: "/auth/exchange", headers: { "content-type": "application/json" }, body: JSON.stringify({ code: "x".repeat(8 * 1024) }) })
    expect(over).toMatchObject({ status: 413, json: { _tag: "PayloadTooLarge", code: "body_too_large" } })
    const code = new URL(gw.loginUrl!).hash.slice("#code=".length)
    const login = await send({ method: "POST", path: "/auth/exchange", headers: { "content-type": "application/json; charset=utf-8" }, body: JSON.stringify({ code }) })
    expect(login.status).toBe(200)
    expect(login.json.thread).toBe("main")
    expect((await call(`${gw.url}/v1/whoami`, { token: login.json.token })).json).toEqual({ thread: "main" })
  })

  it("a 64 MiB upload to the exchange gets 413 and is not read: the connection closes with most of it unsent", async () => {
    const total = 64 * MiB
    const head = `POST /auth/exchange HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${total}\r\n\r\n`
    // Several at once, as the attack did; each closes at its sockets' buffers.
    const uploads = await Promise.all([1, 2, 3, 4].map(() => upload(head, total)))
    for (const { response, accepted } of uploads) {
      expect(statusOf(response)).toBe(413)
      expect(bodyOf(response)).toMatchObject({ code: "body_too_large" })
      // Only what the two sockets' kernel buffers hold got out; a server reading the body takes all 64 MiB.
      expect(accepted).toBeLessThan(total / 4)
    }
  })

  it("a /v1/ upload with no valid token is answered 401 and not read either (the token is checked before the body)", async () => {
    const total = 64 * MiB
    for (const authorization of ["", `Authorization: Bearer fjt_0123456789abcdef_${"A".repeat(43)}\r\n`]) {
      for (const route of ["/v1/apply", "/v1/provider-events"]) {
        const head = `POST ${route} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${authorization}Content-Length: ${total}\r\n\r\n`
        const { response, accepted } = await upload(head, total)
        expect({ route, authorization, status: statusOf(response) }).toEqual({ route, authorization, status: 401 })
        expect(accepted).toBeLessThan(total / 4)
      }
    }
  })
})

describe("what errors and events reveal", () => {
  it("the event stream's hello names the caller's thread only, not the workspace's commit count", async () => {
    await registerThread(w.ws, w.db, "other")
    const other = (await tokenFor(w.db, "other")).token
    for (const i of [1, 2, 3]) {
      const r = await call(`${gw.url}/v1/apply`, { token: main, body: { patch: patchOf(`*** Add File: main-${i}.txt`, "+x"), turn: `m${i}` } })
      expect(r.status).toBe(200)
    }
    const events = await openEvents(gw.url, other)
    await events.until(/event: hello\ndata: [^\n]*\n\n/)
    events.close()
    const data = /event: hello\ndata: ([^\n]*)\n/.exec(events.seen())![1]!
    expect(JSON.parse(data)).toEqual({ thread: "other" })
  })

  it("error bodies name no absolute path of the server: the router's and the fast apply path's", async () => {
    const router = await start({ root: w.ws, fastApply: false })
    try {
      for (const base of [gw.url, router.url]) {
        // Ingestion refuses a path outside the workspace, naming where the workspace is.
        const ingest = await call(`${base}/v1/provider-events`, {
          token: main,
          body: { format: "claude-tool-event", text: JSON.stringify({ tool_name: "Write", tool_input: { file_path: "/nowhere/x.txt", content: "x\n" } }), turn: "i1" }
        })
        expect(ingest.status).toBe(400)
        expect(ingest.text).not.toContain(w.dir)
        expect(ingest.json.message).toContain("<workspace>")
        // An absolute path under the workspace, echoed by the engine, reads <workspace>/...
        const apply = await call(`${base}/v1/apply`, { token: main, body: { patch: patchOf(`*** Add File: ${w.ws}/abs.txt`, "+x"), turn: "t" } })
        expect(apply.status).toBe(422)
        expect(apply.text).not.toContain(w.dir)
        expect(apply.json).toMatchObject({ code: "path_outside_roots", paths: ["<workspace>/abs.txt"] })
      }
    } finally {
      await router.stop()
    }
  })

  it("redaction: roots become <workspace>, a database outside it <history database>, a longer name is left alone", () => {
    const redact = makeRedact(["/srv/ws"], ["/var/db/h.db"])
    expect(redact("cannot open '/srv/ws/src/a.ts' under /srv/ws.")).toBe("cannot open '<workspace>/src/a.ts' under <workspace>.")
    expect(redact("/srv/ws2/a and /srv/wsx")).toBe("/srv/ws2/a and /srv/wsx")
    expect(redact("database '/var/db/h.db' in /var/db is locked")).toBe("database '<history database>' in <history database folder> is locked")
    expect(makeRedact(["/srv/ws"], ["/srv/ws/.forkjoin/history.db"])("'/srv/ws/.forkjoin/history.db'")).toBe("'<workspace>/.forkjoin/history.db'")
  })
})

describe("token threads", () => {
  const issue = (thread: string) => Effect.runPromise(Effect.result(Tokens.issue(thread as ThreadId).pipe(Effect.provide(TokenStore.layerMemory))))

  it("refuses a thread id outside the id rule with invalid_thread_id, storing nothing", async () => {
    for (const thread of ["../x", "..", ".", "a/../b", "a/./b", "a//b", "/a", "a/", "", "x".repeat(257), "a b", "a\nb", "é", "a\\b"]) {
      const issued = await issue(thread)
      expect({ thread, refused: Result.isFailure(issued) ? issued.failure : "issued" }).toMatchObject({
        thread,
        refused: { _tag: "TokenRequestError", code: "invalid_thread_id", thread }
      })
    }
  })

  it("issues tokens for ids inside the rule", async () => {
    for (const thread of ["main", "parent/child", "run-1:abc/task.a_b", "x".repeat(256)]) {
      const issued = await issue(thread)
      expect(Result.isSuccess(issued) ? issued.success.thread : issued.failure).toBe(thread)
    }
    expect(ThreadId.make("main")).toBe("main")
  })
})
