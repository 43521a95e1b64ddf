/**
 * One POST to a model provider over `node:http` / `node:https` with keep-alive agents (not
 * `@effect/platform-node`'s undici layer, which crashes on Node 20 here; and about five times
 * less CPU per request than the built-in `fetch`): a request timeout (for a stream, the longest
 * silence between two chunks), retries with exponential backoff on 429 and 5xx honouring
 * `retry-after`, server-sent events read incrementally, an answer larger than
 * `maxResponseBytes` refused as soon as it passes the cap (the response destroyed, nothing more
 * read), and every failure turned into an `AiError` whose description names the setting to fix.
 * The API key goes in a header only, and every body is redacted (`provider.redact`) before
 * anything reads it, so no message, error or artifact carries a key the provider echoed.
 */
import * as AiError from "effect/ai/AiError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as http from "node:http"
import * as https from "node:https"
import type { ResolvedProvider } from "../ProviderSettings.ts"
import { codedFailure } from "./wire.ts"

/** One server-sent event: its `event:` name (when given) and its `data:` lines joined. */
export interface SseEvent {
  readonly event: string | undefined
  readonly data: string
}

/** What one request needs: the provider, its headers (the key among them) and the JSON body. */
export interface Request {
  readonly provider: ResolvedProvider
  readonly headers: Record<string, string>
  readonly body: unknown
  /** For the `AiError` (`OpenAiCompatible`, `Anthropic`). */
  readonly module: string
  readonly method: string
}

const RETRY_AFTER_CAP_MS = 60_000

type Outcome =
  | { readonly _tag: "Json"; readonly value: unknown }
  | { readonly _tag: "Streamed" }
  | { readonly _tag: "Status"; readonly status: number; readonly retryAfterMs: number | undefined; readonly text: string }

class Transport {
  constructor(readonly kind: "unreachable" | "timeout" | "stalled" | "not_json" | "too_large", readonly detail: string) {}
}

const header = (headers: http.IncomingHttpHeaders, name: string): string | undefined => {
  const v = headers[name]
  return Array.isArray(v) ? v[0] : v
}

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

/** The provider's own error text, when its body has one (`{error:{message}}` in both protocols). */
const providerMessage = (text: string): string => {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown }
    if (typeof body.error === "string") return body.error
    if (typeof body.error?.message === "string") return body.error.message
    if (typeof body.message === "string") return body.message
  } catch {
    // Not JSON: fall through to the first bytes.
  }
  return text.slice(0, 200)
}

const parseSse = (buffer: string, emit: (e: SseEvent) => void): string => {
  const blocks = buffer.split(/\r?\n\r?\n/)
  const rest = blocks.pop() ?? ""
  for (const block of blocks) {
    let event: string | undefined
    const data: Array<string> = []
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith("event:")) event = line.slice(6).trim()
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""))
    }
    if (data.length > 0) emit({ event, data: data.join("\n") })
  }
  return rest
}

// One keep-alive agent per scheme: a session sends a request per turn to the same host.
const agents = { "http:": new http.Agent({ keepAlive: true }), "https:": new https.Agent({ keepAlive: true }) } as const

const once = (request: Request, onEvent: ((e: SseEvent) => void) | undefined, signal: AbortSignal): Promise<Outcome> =>
  new Promise<Outcome>((resolve, reject) => {
    const p = request.provider
    const url = new URL(p.endpoint)
    const body = Buffer.from(JSON.stringify(request.body))
    let settled = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const finish = (f: () => void) => {
      if (settled) return
      settled = true
      if (timer !== undefined) clearTimeout(timer)
      signal.removeEventListener("abort", onAbort)
      f()
    }
    const onAbort = () => {
      req.destroy()
      finish(() => reject(new Error("interrupted")))
    }
    const tooLarge = (what: string) => {
      req.destroy()
      finish(() => reject(new Transport("too_large", what)))
    }
    // Until the first byte: the request's budget; while streaming: the longest silence allowed.
    const arm = (kind: "timeout" | "stalled") => {
      if (timer !== undefined) clearTimeout(timer)
      timer = setTimeout(() => {
        req.destroy()
        finish(() =>
          reject(new Transport(kind, kind === "timeout" ? `no answer within ${p.timeoutMs} ms` : `the stream stalled: nothing arrived for ${p.timeoutMs} ms`))
        )
      }, p.timeoutMs)
    }
    const req = (url.protocol === "https:" ? https : http).request(url, {
      method: "POST",
      agent: agents[url.protocol === "https:" ? "https:" : "http:"],
      headers: {
        "content-type": "application/json",
        "content-length": String(body.length),
        accept: onEvent === undefined ? "application/json" : "text/event-stream",
        ...request.headers
      }
    }, (res) => {
      const status = res.statusCode ?? 0
      const type = String(res.headers["content-type"] ?? "")
      const streaming = onEvent !== undefined && status >= 200 && status < 300 && type.includes("text/event-stream")
      const chunks: Array<Buffer> = []
      const decoder = new TextDecoder()
      let buffer = ""
      let received = 0
      const cap = p.maxResponseBytes
      const declared = Number(res.headers["content-length"])
      if (Number.isFinite(declared) && declared > cap) return tooLarge(`announced an answer of ${declared} bytes`)
      // Redacted as each event is cut out, before any folder reads it.
      const emit = (e: SseEvent) => onEvent!({ event: e.event, data: p.redact.text(e.data) })
      if (onEvent !== undefined) arm("stalled")
      res.on("data", (chunk: Buffer) => {
        if (settled) return
        received += chunk.length
        if (received > cap) return tooLarge(`sent more than ${cap} bytes in one answer`)
        if (streaming) {
          arm("stalled")
          buffer = parseSse(buffer + decoder.decode(chunk, { stream: true }), emit)
        } else chunks.push(chunk)
      })
      res.on("error", (e) => finish(() => reject(e)))
      res.on("end", () =>
        finish(() => {
          if (streaming) {
            parseSse(buffer + decoder.decode() + "\n\n", emit)
            return resolve({ _tag: "Streamed" })
          }
          const text = p.redact.text(Buffer.concat(chunks).toString("utf8"))
          if (status < 200 || status >= 300) {
            return resolve({ _tag: "Status", status, retryAfterMs: retryAfterOf(res.headers), text })
          }
          if (onEvent !== undefined) {
            return reject(new Transport("not_json", `answered a streaming request with '${type || "no content type"}' instead of server-sent events (${JSON.stringify(text.slice(0, 80))})`))
          }
          try {
            resolve({ _tag: "Json", value: JSON.parse(text) })
          } catch {
            reject(new Transport("not_json", `answered HTTP ${status} with a body that is not JSON (${JSON.stringify(text.slice(0, 80))})`))
          }
        })
      )
    })
    req.on("error", (e: NodeJS.ErrnoException) =>
      finish(() => reject(new Transport("unreachable", `cannot reach ${p.endpoint} (${e.code ?? e.message})`)))
    )
    if (signal.aborted) return onAbort()
    signal.addEventListener("abort", onAbort, { once: true })
    arm("timeout")
    req.end(body)
  })

const fail = (request: Request, reason: AiError.AiErrorReason) => AiError.make({ module: request.module, method: request.method, reason })

const transportError = (request: Request, t: Transport): AiError.AiError => {
  const p = request.provider
  const baseSetting = p.settingNames.baseUrl
  switch (t.kind) {
    case "unreachable":
      return fail(request, new AiError.NetworkError({ reason: "TransportError", method: "POST", url: p.endpoint, description: `${t.detail}; check ${baseSetting}` }))
    case "timeout":
    case "stalled":
      return fail(request, new AiError.NetworkError({ reason: "TransportError", method: "POST", url: p.endpoint, description: `${p.endpoint}: ${t.detail} (${p.settingNames.timeoutMs})` }))
    case "not_json":
      return fail(request, new AiError.InvalidResponseError({ description: `${p.endpoint} ${t.detail}; check ${baseSetting} points at ${p.kind === "openai" ? "an OpenAI-compatible /v1 API" : "the Anthropic Messages API"}` }))
    case "too_large":
      return fail(
        request,
        codedFailure(
          "provider_response_too_large",
          `${p.endpoint} ${t.detail}, more than ${p.settingNames.maxResponseBytes} allows (${p.maxResponseBytes}); nothing more was read. ` +
            `Lower maxTokens, or raise ${p.settingNames.maxResponseBytes} if answers this large are expected`
        )
      )
  }
}

const statusError = (request: Request, o: Extract<Outcome, { _tag: "Status" }>, attempts: number): AiError.AiError => {
  const p = request.provider
  // The body was redacted as read; the message again, once JSON escapes are decoded.
  const said = p.redact.text(providerMessage(o.text))
  const modelSetting = p.settingNames.model
  const description = o.status === 401 || o.status === 403
    ? `${p.endpoint} refused the API key (HTTP ${o.status}: ${said}); check the variable ${p.apiKeyEnv}`
    : o.status === 404
    ? `HTTP 404 from ${p.endpoint} (${said}): an unknown model '${p.model}' (${modelSetting}) or a wrong base URL`
    : o.status === 429 || o.status >= 500
    ? `HTTP ${o.status} from ${p.endpoint} after ${attempts} attempt(s) (${said})`
    : `HTTP ${o.status} from ${p.endpoint} (${said}); check ${modelSetting} '${p.model}'`
  return fail(request, AiError.reasonFromHttpStatus({ status: o.status, description }))
}

/**
 * POSTs `request`; resolves to the JSON body, or, with `onEvent`, feeds every server-sent
 * event to it as it arrives. Retries 429 and 5xx answers (before any event was read).
 */
export const post = (request: Request, onEvent?: (e: SseEvent) => void): Effect.Effect<unknown, AiError.AiError> =>
  Effect.gen(function*() {
    const p = request.provider
    for (let attempt = 1;; attempt++) {
      const outcome = yield* Effect.tryPromise({
        try: (signal) => once(request, onEvent, signal),
        catch: (e) =>
          e instanceof Transport ? transportError(request, e) : fail(request, new AiError.UnknownError({ description: p.redact.text(String(e)) }))
      })
      if (outcome._tag === "Json") return outcome.value
      if (outcome._tag === "Streamed") return undefined
      const retryable = outcome.status === 429 || outcome.status >= 500
      if (!retryable || attempt > p.maxRetries) return yield* statusError(request, outcome, attempt)
      const wait = outcome.retryAfterMs ?? p.retryBaseMs * 2 ** (attempt - 1)
      yield* Effect.sleep(Duration.millis(wait))
    }
  })
