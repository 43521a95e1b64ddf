/**
 * The transport against loopback servers: a kept-alive connection serves the next request (and
 * one the server closed while idle is replaced, the request sent again), a
 * silent server hits the timeout and a stalled stream the silence limit, 429 and 5xx answers are
 * retried after the wait `retry-after` asks for (or the backoff), server-sent events cut anywhere
 * are read whole, an answer past the cap is refused, and a server that sends garbage or breaks
 * the connection mid-answer fails with a stable error.
 */
import { HttpTransportError, send } from "@forkjoin/http/HttpTransport"
import type { SseEvent } from "@forkjoin/http/Sse"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as http from "node:http"
import * as net from "node:net"
import { afterEach, describe, expect, it } from "vitest"

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})

/** A server on 127.0.0.1 answering with `handler`; its URL and the sockets of the requests it saw. */
const serve = async (handler: (req: http.IncomingMessage, res: http.ServerResponse, n: number) => void) => {
  const sockets: Array<net.Socket> = []
  const server = http.createServer((req, res) => {
    sockets.push(req.socket)
    handler(req, res, sockets.length)
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  closers.push(() => new Promise((r) => {
    server.closeAllConnections()
    server.close(() => r())
  }))
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/x`, sockets }
}

/** A TCP server that answers every connection with `reply` (not HTTP at all, or broken HTTP). */
const raw = async (reply: (socket: net.Socket) => void) => {
  const sockets = new Set<net.Socket>()
  const server = net.createServer((socket) => {
    sockets.add(socket)
    reply(socket)
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  closers.push(() => new Promise((r) => {
    for (const socket of sockets) socket.destroy()
    server.close(() => r())
  }))
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/x`
}

/** Runs `effect` with a clock whose sleeps end at once and are recorded (no test waits in real time). */
const runRecordingSleeps = <A, E>(effect: Effect.Effect<A, E>) => {
  const sleeps: Array<number> = []
  const real = Clock.Clock.defaultValue()
  const clock: Clock.Clock = {
    ...real,
    currentTimeMillisUnsafe: () => real.currentTimeMillisUnsafe(),
    currentTimeNanosUnsafe: () => real.currentTimeNanosUnsafe(),
    monotonicTimeNanosUnsafe: () => real.monotonicTimeNanosUnsafe(),
    sleep: (d) => Effect.sync(() => void sleeps.push(Duration.toMillis(d)))
  }
  return Effect.runPromise(Effect.provideService(effect, Clock.Clock, clock)).then((value) => ({ value, sleeps }))
}

const failureOf = (effect: Effect.Effect<unknown, HttpTransportError>) => Effect.runPromise(Effect.flip(effect))

describe("HttpTransport.send", () => {
  it("sends the method, headers and body, and reuses the kept-alive connection", async () => {
    const seen: Array<string> = []
    const s = await serve((req, res) => {
      let body = ""
      req.on("data", (c: Buffer) => (body += c.toString("utf8")))
      req.on("end", () => {
        seen.push(`${req.method} ${req.headers["x-test"]} ${req.headers["content-length"]} ${body}`)
        res.setHeader("content-type", "application/json")
        res.end(JSON.stringify({ ok: seen.length }))
      })
    })
    const first = await Effect.runPromise(send({ url: s.url, method: "POST", headers: { "x-test": "a" }, body: "héllo" }))
    const second = await Effect.runPromise(send({ url: s.url, method: "GET", headers: { "x-test": "b" } }))
    expect(first).toEqual({ status: 200, contentType: "application/json", text: "{\"ok\":1}", streamed: false, attempts: 1 })
    expect(second.text).toBe("{\"ok\":2}")
    expect(seen).toEqual(["POST a 6 héllo", "GET b undefined "])
    expect(s.sockets[1]).toBe(s.sockets[0])
  })

  it("a kept-alive connection the server closed while idle is replaced: the request is sent again on a fresh one", async () => {
    // Raw HTTP: each connection answers its first request with keep-alive; a second request on
    // the same connection gets it reset (as a server closing an idle connection does).
    let connections = 0
    const url = await raw((socket) => {
      connections += 1
      let requests = 0
      socket.on("data", () => {
        requests += 1
        if (requests === 1) socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok")
        else socket.resetAndDestroy()
      })
    })
    const first = await Effect.runPromise(send({ url, method: "POST", headers: {}, body: "a" }))
    const second = await Effect.runPromise(send({ url, method: "POST", headers: {}, body: "b" }))
    expect([first.text, second.text]).toEqual(["ok", "ok"])
    expect(connections).toBe(2)
  })

  it("fails with timeout when no answer comes in time", async () => {
    const s = await serve(() => {
      // never answers
    })
    const e = await failureOf(send({ url: s.url, method: "GET", timeoutMs: 50 }))
    expect(e).toBeInstanceOf(HttpTransportError)
    expect(e).toMatchObject({ kind: "timeout", url: s.url, message: "no answer within 50 ms" })
  })

  it("fails with stalled when a stream goes silent", async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write("data: one\n\n")
    })
    const events: Array<SseEvent> = []
    const e = await failureOf(send({ url: s.url, method: "GET", timeoutMs: 50, onEvent: (ev) => events.push(ev) }))
    expect(e).toMatchObject({ kind: "stalled", message: "the stream stalled: nothing arrived for 50 ms" })
    expect(events).toEqual([{ event: undefined, data: "one" }])
  })

  it("retries 429 and 5xx after the wait retry-after asks for, else with backoff", async () => {
    const s = await serve((_req, res, n) => {
      if (n === 1) res.writeHead(429, { "retry-after": "2" }).end("slow down")
      else if (n === 2) res.writeHead(503, { "retry-after-ms": "250" }).end()
      else if (n === 3) res.writeHead(500, { "retry-after": "3600" }).end()
      else if (n === 4) res.writeHead(502).end()
      else res.end("done")
    })
    const { value, sleeps } = await runRecordingSleeps(send({ url: s.url, method: "GET", retry: { maxRetries: 5, baseMs: 10 } }))
    expect(value).toMatchObject({ status: 200, text: "done", attempts: 5 })
    // retry-after in seconds, retry-after-ms, an hour capped to a minute, then backoff 10 * 2^3.
    expect(sleeps).toEqual([2000, 250, 60_000, 80])
  })

  it("answers with the last status once the retries are spent, and never retries without a policy", async () => {
    const s = await serve((_req, res) => res.writeHead(503).end("busy"))
    const spent = await runRecordingSleeps(send({ url: s.url, method: "GET", retry: { maxRetries: 2, baseMs: 5 } }))
    expect(spent.value).toMatchObject({ status: 503, text: "busy", attempts: 3 })
    expect(spent.sleeps).toEqual([5, 10])
    const none = await runRecordingSleeps(send({ url: s.url, method: "GET" }))
    expect(none.value).toMatchObject({ status: 503, attempts: 1 })
    expect(none.sleeps).toEqual([])
  })

  it("reads server-sent events split across chunks, redacted, and a last event without its blank line", async () => {
    const bytes = Buffer.from("event: delta\ndata: hé\r\n\r\n: keep-alive\n\ndata: a\ndata: SECRET b\n\ndata: tail", "utf8")
    const s = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      // One byte at a time, each in its own write: inside lines, between \r and \n, inside the é.
      let i = 0
      const next = () => (i < bytes.length ? res.write(bytes.subarray(i, ++i), () => setImmediate(next)) : res.end())
      next()
    })
    const events: Array<SseEvent> = []
    const answer = await Effect.runPromise(
      send({ url: s.url, method: "GET", onEvent: (e) => events.push(e), redact: (t) => t.replaceAll("SECRET", "[redacted]") })
    )
    expect(answer).toMatchObject({ status: 200, streamed: true, text: "" })
    expect(events).toEqual([
      { event: "delta", data: "hé" },
      { event: undefined, data: "a\n[redacted] b" },
      { event: undefined, data: "tail" }
    ])
  })

  it("collects a non-stream answer to a streaming request, and an error status, as text", async () => {
    const s = await serve((_req, res, n) => (n === 1 ? res.end("{\"plain\":true}") : res.writeHead(400).end("bad SECRET")))
    const events: Array<SseEvent> = []
    const plain = await Effect.runPromise(send({ url: s.url, method: "GET", onEvent: (e) => events.push(e) }))
    expect(plain).toMatchObject({ status: 200, streamed: false, text: "{\"plain\":true}" })
    const refused = await Effect.runPromise(send({ url: s.url, method: "GET", onEvent: (e) => events.push(e), redact: (t) => t.replace("SECRET", "x") }))
    expect(refused).toMatchObject({ status: 400, text: "bad x" })
    expect(events).toEqual([])
  })

  it("refuses an answer past the cap, announced or sent", async () => {
    const s = await serve((_req, res, n) => {
      if (n === 1) res.writeHead(200, { "content-length": "1000" }).end("x".repeat(1000))
      else {
        res.writeHead(200)
        res.write("x".repeat(60))
        res.write("x".repeat(60))
      }
    })
    expect(await failureOf(send({ url: s.url, method: "GET", maxResponseBytes: 100 }))).toMatchObject({
      kind: "too_large",
      message: "announced an answer of 1000 bytes"
    })
    expect(await failureOf(send({ url: s.url, method: "GET", maxResponseBytes: 100 }))).toMatchObject({
      kind: "too_large",
      message: "sent more than 100 bytes in one answer"
    })
  })

  it("fails with unreachable, naming the socket error, when the server resets the connection", async () => {
    const url = await raw((socket) => socket.destroy())
    const e = await failureOf(send({ url, method: "GET" }))
    expect(e).toMatchObject({ kind: "unreachable", url, message: `cannot reach ${url} (ECONNRESET)` })
  })

  it("fails the same stable way for a server that sends garbage instead of HTTP", async () => {
    const url = await raw((socket) => socket.end("this is not HTTP\r\n\r\n"))
    const e = await failureOf(send({ url, method: "GET" }))
    expect(e).toMatchObject({ kind: "unreachable", url })
    expect(e.message).toMatch(new RegExp(`^cannot reach ${url} \\(HPE_[A-Z_]+\\)$`))
    expect(e.cause).toBeInstanceOf(Error)
  })

  it("fails with broken when the connection drops mid-answer", async () => {
    const url = await raw((socket) => {
      socket.write("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly part")
      setImmediate(() => socket.destroy())
    })
    const e = await failureOf(send({ url, method: "GET" }))
    expect(e).toMatchObject({ kind: "broken", url })
    expect(e.message).toContain(`the connection to ${url} broke mid-answer`)
  })
})
