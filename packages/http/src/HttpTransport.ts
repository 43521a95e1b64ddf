/**
 * One HTTP request over `node:http` / `node:https` with a keep-alive agent per scheme: not the
 * global `fetch` (undici costs about 0.4 ms more per request, more than a small apply through
 * the gateway takes, and about five times the CPU of a provider request) and not
 * `@effect/platform-node`'s undici layer (it crashes on Node 20 here). It owns the request, an
 * optional timeout (until the first byte; for a stream, the longest silence between chunks), an
 * optional cap on the answer's size (refused as soon as it is passed, the response destroyed),
 * retries of 429 and 5xx answers honouring `retry-after`, and server-sent events read as they
 * arrive. It does not own what a body means nor the wording its callers give a failure.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as http from "node:http"
import * as https from "node:https"
import { reader, type SseEvent } from "./Sse.ts"

/**
 * What one request needs. `redact` rewrites the body text and each event's data before anything
 * reads them (a provider's echoed key); with `onEvent`, a 2xx `text/event-stream` answer is
 * fed to it event by event instead of being collected.
 *
 * @category models
 * @since 0.1.0
 */
export interface HttpRequest {
  readonly url: string
  readonly method: "GET" | "POST"
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly body?: string | Uint8Array | undefined
  readonly timeoutMs?: number | undefined
  readonly maxResponseBytes?: number | undefined
  readonly redact?: ((text: string) => string) | undefined
  readonly onEvent?: ((event: SseEvent) => void) | undefined
  /** Retries of a 429 or 5xx answer: `retry-after` (capped at a minute), else `baseMs * 2^(n-1)`. */
  readonly retry?: { readonly maxRetries: number; readonly baseMs: number } | undefined
}

/**
 * The last answer: its status, content type, body text (empty when `streamed`: the events went
 * to `onEvent`), and how many attempts it took.
 *
 * @category models
 * @since 0.1.0
 */
export interface HttpAnswer {
  readonly status: number
  readonly contentType: string
  readonly text: string
  readonly streamed: boolean
  readonly attempts: number
}

/**
 * Why no answer came: the server could not be reached (`unreachable`), did not answer in time
 * (`timeout`), went silent mid-stream (`stalled`), sent more than the cap (`too_large`) or broke
 * the connection mid-answer (`broken`). `message` says it in words; `cause` is the socket error.
 *
 * @category errors
 * @since 0.1.0
 */
export class HttpTransportError extends Schema.TaggedError<HttpTransportError>()("HttpTransportError", {
  kind: Schema.Literals(["unreachable", "timeout", "stalled", "too_large", "broken"]),
  url: Schema.String,
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

const RETRY_AFTER_CAP_MS = 60_000

const header = (headers: http.IncomingHttpHeaders, name: string): string | undefined => {
  const v = headers[name]
  return Array.isArray(v) ? v[0] : v
}

/** The wait an answer asks for (`retry-after-ms`, or `retry-after` in seconds or as a date), capped. */
const retryAfterOf = (headers: http.IncomingHttpHeaders): number | undefined => {
  const ms = header(headers, "retry-after-ms")
  if (ms !== undefined && Number.isFinite(Number(ms))) return Math.min(Number(ms), RETRY_AFTER_CAP_MS)
  const value = header(headers, "retry-after")
  if (value === undefined) return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.min(Math.max(0, seconds * 1000), RETRY_AFTER_CAP_MS)
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.min(Math.max(0, at - Date.now()), RETRY_AFTER_CAP_MS)
}

// Idle sockets are unref'd by the agents, so a kept-alive connection never holds the process open.
const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) }

type Attempt = Omit<HttpAnswer, "attempts"> & { readonly retryAfterMs: number | undefined }

/** A reused keep-alive socket the server had closed: the request was not delivered. */
class StaleConnection extends Error {}

const once = (request: HttpRequest, signal: AbortSignal): Promise<Attempt> =>
  new Promise<Attempt>((resolve, reject) => {
    const url = new URL(request.url)
    const secure = url.protocol === "https:"
    const redact = request.redact ?? ((text: string) => text)
    const onEvent = request.onEvent
    const cap = request.maxResponseBytes ?? Infinity
    let settled = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const finish = (f: () => void) => {
      if (settled) return
      settled = true
      if (timer !== undefined) clearTimeout(timer)
      signal.removeEventListener("abort", onAbort)
      f()
    }
    const failWith = (kind: HttpTransportError["kind"], message: string, cause?: unknown) => {
      req.destroy()
      finish(() => reject(new HttpTransportError({ kind, url: request.url, message, cause })))
    }
    const onAbort = () => {
      req.destroy()
      finish(() => reject(new Error("interrupted")))
    }
    // Until the first byte: the request's budget; while streaming: the longest silence allowed.
    const arm = (kind: "timeout" | "stalled") => {
      const ms = request.timeoutMs
      if (ms === undefined) return
      if (timer !== undefined) clearTimeout(timer)
      timer = setTimeout(
        () => failWith(kind, kind === "timeout" ? `no answer within ${ms} ms` : `the stream stalled: nothing arrived for ${ms} ms`),
        ms
      )
    }
    const body = request.body
    const headers = body === undefined ? { ...request.headers } : { ...request.headers, "content-length": String(Buffer.byteLength(body)) }
    const req = (secure ? https : http).request(url, { method: request.method, agent: secure ? agents.https : agents.http, headers }, (res) => {
      const status = res.statusCode ?? 0
      const contentType = String(res.headers["content-type"] ?? "")
      const streaming = onEvent !== undefined && status >= 200 && status < 300 && contentType.includes("text/event-stream")
      const declared = Number(res.headers["content-length"])
      if (Number.isFinite(declared) && declared > cap) return failWith("too_large", `announced an answer of ${declared} bytes`)
      const chunks: Array<Buffer> = []
      const decoder = new TextDecoder()
      // Redacted as each event is cut out, before anything reads it.
      const events = streaming ? reader((e) => onEvent({ event: e.event, data: redact(e.data) })) : undefined
      let received = 0
      if (onEvent !== undefined) arm("stalled")
      res.on("data", (chunk: Buffer) => {
        if (settled) return
        received += chunk.length
        if (received > cap) return failWith("too_large", `sent more than ${cap} bytes in one answer`)
        if (events !== undefined) {
          arm("stalled")
          events.push(decoder.decode(chunk, { stream: true }))
        } else chunks.push(chunk)
      })
      res.on("error", (e) => failWith("broken", `the connection to ${request.url} broke mid-answer (${String(e)})`, e))
      res.on("end", () =>
        finish(() => {
          const retryAfterMs = retryAfterOf(res.headers)
          if (events !== undefined) {
            events.push(decoder.decode())
            events.end()
            return resolve({ status, contentType, text: "", streamed: true, retryAfterMs })
          }
          resolve({ status, contentType, text: redact(Buffer.concat(chunks).toString("utf8")), streamed: false, retryAfterMs })
        })
      )
    })
    req.on("error", (e: NodeJS.ErrnoException) => {
      // A kept-alive connection the server closed while it sat idle: the request never reached
      // the server, so the caller may send it again on a fresh connection.
      if (req.reusedSocket && e.code === "ECONNRESET") {
        req.destroy()
        return finish(() => reject(new StaleConnection()))
      }
      failWith("unreachable", `cannot reach ${request.url} (${e.code ?? e.message})`, e)
    })
    if (signal.aborted) return onAbort()
    signal.addEventListener("abort", onAbort, { once: true })
    arm("timeout")
    req.end(body)
  })

/**
 * Sends `request`; succeeds with the last answer whatever its status (a 429 or 5xx only once
 * the retries are spent), fails with `HttpTransportError` when there is none.
 *
 * @category constructors
 * @since 0.1.0
 */
export const send = (request: HttpRequest): Effect.Effect<HttpAnswer, HttpTransportError> =>
  Effect.gen(function*() {
    const maxRetries = request.retry?.maxRetries ?? 0
    for (let attempt = 1;; attempt++) {
      const answer = yield* Effect.tryPromise({
        // Once more on a fresh connection when an idle kept-alive one turned out closed.
        try: (signal) => once(request, signal).catch((e) => (e instanceof StaleConnection ? once(request, signal) : Promise.reject(e))),
        catch: (e) =>
          e instanceof HttpTransportError
            ? e
            : new HttpTransportError({ kind: e instanceof StaleConnection ? "unreachable" : "broken", url: request.url, message: String(e), cause: e })
      })
      const retryable = answer.status === 429 || answer.status >= 500
      if (!retryable || attempt > maxRetries || request.retry === undefined) {
        return { status: answer.status, contentType: answer.contentType, text: answer.text, streamed: answer.streamed, attempts: attempt }
      }
      yield* Effect.sleep(Duration.millis(answer.retryAfterMs ?? request.retry.baseMs * 2 ** (attempt - 1)))
    }
  })
