/**
 * One POST to a model provider through forkjoin's HTTP transport (`@forkjoin/http`, which owns
 * the keep-alive, timeouts, retries honouring `retry-after`, the size cap and server-sent
 * events), with the provider's settings: its timeout, retries and cap, the API key in a header
 * only, and every body redacted (`provider.redact`) before anything reads it, so no message,
 * error or artifact carries a key the provider echoed. It owns what a provider's failure says:
 * every one becomes an `AiError` whose description names the setting to fix.
 */
import { type HttpAnswer, type HttpTransportError, send } from "@forkjoin/http/HttpTransport"
import type { SseEvent } from "@forkjoin/http/Sse"
import * as AiError from "effect/ai/AiError"
import * as Effect from "effect/Effect"
import type { ResolvedProvider } from "../ProviderSettings.ts"
import { codedFailure } from "./wire.ts"

export type { SseEvent }

/** What one request needs: the provider, its headers (the key among them) and the JSON body. */
export interface Request {
  readonly provider: ResolvedProvider
  readonly headers: Record<string, string>
  readonly body: unknown
  /** For the `AiError` (`OpenAiCompatible`, `Anthropic`). */
  readonly module: string
  readonly method: string
}

/** A stream's folder: fed each event, then asked for the reply (with the stream's own error, if it sent one). */
export interface StreamFolder<R extends { readonly error?: string | undefined }> {
  readonly onEvent: (e: SseEvent) => void
  readonly result: () => R
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

const fail = (request: Request, reason: AiError.AiErrorReason) => AiError.make({ module: request.module, method: request.method, reason })

/**
 * An answer that is not what the protocol promises; `detail` may quote the provider (a stream's
 * error message, decoded), so it is redacted again.
 */
export const invalidAnswer = (request: Request, detail: string): AiError.AiError =>
  fail(request, new AiError.InvalidResponseError({ description: `${request.provider.endpoint}: ${request.provider.redact.text(detail)}` }))

const notJson = (request: Request, detail: string): AiError.AiError => {
  const p = request.provider
  return fail(request, new AiError.InvalidResponseError({
    description: `${p.endpoint} ${detail}; check ${p.settingNames.baseUrl} points at ${p.kind === "openai" ? "an OpenAI-compatible /v1 API" : "the Anthropic Messages API"}`
  }))
}

const transportError = (request: Request, e: HttpTransportError): AiError.AiError => {
  const p = request.provider
  switch (e.kind) {
    case "unreachable":
      return fail(request, new AiError.NetworkError({ reason: "TransportError", method: "POST", url: p.endpoint, description: `${e.message}; check ${p.settingNames.baseUrl}` }))
    case "timeout":
    case "stalled":
      return fail(request, new AiError.NetworkError({ reason: "TransportError", method: "POST", url: p.endpoint, description: `${p.endpoint}: ${e.message} (${p.settingNames.timeoutMs})` }))
    case "too_large":
      return fail(
        request,
        codedFailure(
          "provider_response_too_large",
          `${p.endpoint} ${e.message}, more than ${p.settingNames.maxResponseBytes} allows (${p.maxResponseBytes}); nothing more was read. ` +
            `Lower maxTokens, or raise ${p.settingNames.maxResponseBytes} if answers this large are expected`
        )
      )
    case "broken":
      return fail(request, new AiError.UnknownError({ description: p.redact.text(String(e.cause ?? e.message)) }))
  }
}

const statusError = (request: Request, answer: HttpAnswer): AiError.AiError => {
  const p = request.provider
  const status = answer.status
  // The body was redacted as read; the message again, once JSON escapes are decoded.
  const said = p.redact.text(providerMessage(answer.text))
  const modelSetting = p.settingNames.model
  const description = status === 401 || status === 403
    ? `${p.endpoint} refused the API key (HTTP ${status}: ${said}); check the variable ${p.apiKeyEnv}`
    : status === 404
    ? `HTTP 404 from ${p.endpoint} (${said}): an unknown model '${p.model}' (${modelSetting}) or a wrong base URL`
    : status === 429 || status >= 500
    ? `HTTP ${status} from ${p.endpoint} after ${answer.attempts} attempt(s) (${said})`
    : `HTTP ${status} from ${p.endpoint} (${said}); check ${modelSetting} '${p.model}'`
  return fail(request, AiError.reasonFromHttpStatus({ status, description }))
}

/**
 * POSTs `request`; resolves to the JSON body, or, with `onEvent`, feeds every server-sent
 * event to it as it arrives. Retries 429 and 5xx answers (before any event was read).
 */
export const post = (request: Request, onEvent?: (e: SseEvent) => void): Effect.Effect<unknown, AiError.AiError> => {
  const p = request.provider
  return send({
    url: p.endpoint,
    method: "POST",
    headers: { "content-type": "application/json", accept: onEvent === undefined ? "application/json" : "text/event-stream", ...request.headers },
    body: JSON.stringify(request.body),
    timeoutMs: p.timeoutMs,
    maxResponseBytes: p.maxResponseBytes,
    redact: (text) => p.redact.text(text),
    onEvent,
    retry: { maxRetries: p.maxRetries, baseMs: p.retryBaseMs }
  }).pipe(
    Effect.mapError((e) => transportError(request, e)),
    Effect.flatMap((answer) => {
      if (answer.status < 200 || answer.status >= 300) return Effect.fail(statusError(request, answer))
      if (answer.streamed) return Effect.succeed(undefined)
      const type = answer.contentType
      if (onEvent !== undefined) {
        return Effect.fail(notJson(request, `answered a streaming request with '${type || "no content type"}' instead of server-sent events (${JSON.stringify(answer.text.slice(0, 80))})`))
      }
      try {
        return Effect.succeed(JSON.parse(answer.text) as unknown)
      } catch {
        return Effect.fail(notJson(request, `answered HTTP ${answer.status} with a body that is not JSON (${JSON.stringify(answer.text.slice(0, 80))})`))
      }
    })
  )
}

/** POSTs a streaming request and folds its events; a stream that reported an error is an invalid answer. */
export const postStream = <R extends { readonly error?: string | undefined }>(request: Request, folder: StreamFolder<R>): Effect.Effect<R, AiError.AiError> =>
  Effect.flatMap(post(request, folder.onEvent), () => {
    const r = folder.result()
    return r.error === undefined ? Effect.succeed(r) : Effect.fail(invalidAnswer(request, r.error))
  })
