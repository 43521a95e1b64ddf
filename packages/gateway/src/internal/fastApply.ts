/**
 * The fast path of `POST /v1/apply`: a plain node:http handler in front of the effect router
 * that answers the common apply without the router, the middleware chain and the body stream
 * (measured: they cost more than the 0.3× of the library's own apply the gateway may add; see
 * adrs/20261130-gateway.md, "Fast apply path").
 *
 * It owns only the transport of that one route. The contract stays `GatewayApi` (the OpenAPI
 * document describes this route from there): the body is decoded with the endpoint's own
 * `ApplyRequest` schema and parse options, the caller is `Tokens.authenticate`'s, the thread rule
 * and the engine call are the router handler's `applyAs`, and answers are the same bodies and
 * status codes (`PatchHistoryRecord`, the API's errors, the RFC 9457 problem of a bad request).
 * Whatever it does not take for certain before reading the body — another method or URL, a
 * chunked or oversized body, another content type, an `Expect`, an authorization that is not a
 * well-formed valid bearer token — goes to the router untouched, which answers as it always did.
 */
import { ApplyRequest } from "@forkjoin/schema/Gateway"
import type { ThreadId } from "@forkjoin/schema/Ids"
import { PatchHistoryRecord } from "@forkjoin/schema/PatchHistoryRecord"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as References from "effect/References"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as SchemaAST from "effect/SchemaAST"
import * as SchemaIssue from "effect/SchemaIssue"
import { HttpApi } from "effect/http-api"
import * as HttpServerRespondable from "effect/http/HttpServerRespondable"
import type { IncomingMessage, ServerResponse } from "node:http"
import { BadRequest, GatewayApi, NotFound, Rejected, Unavailable, V1 } from "../GatewayApi.ts"
import * as Tokens from "../Tokens.ts"
import { TokenStore } from "../TokenStore.ts"
import { applyAs } from "./handlers.ts"
import type { Services } from "./access.ts"
import { type Redact, redactJsonText } from "./boundary.ts"
import { requestInvalid } from "./requestProblems.ts"

/** Hands a request to the effect router (the server's ordinary `request` listeners). */
export type Next = (request: IncomingMessage, response: ServerResponse) => void

/**
 * A front handler: `true` when it took the request (and will answer it, possibly by handing it
 * to `next` before reading its body), `false` to let the router have it.
 */
export type Front = (request: IncomingMessage, response: ServerResponse, next: Next) => boolean

// The endpoint's own parse options (unknown fields refused), as the router decodes with them.
const endpoint = V1.endpoints["apply"]!
const annotations = Context.merge(Context.merge(GatewayApi.annotations, V1.annotations), endpoint.annotations)
const slot = <I>(key: Context.Key<I, SchemaAST.ParseOptions>): SchemaAST.ParseOptions | undefined =>
  Context.getOrUndefined(annotations, key) ?? Context.getOrUndefined(annotations, HttpApi.ParseOptions)
const decodeRequest = Schema.decodeUnknownResult(ApplyRequest, slot(HttpApi.PayloadParseOptions))
const encodeRecord = Schema.encodeUnknownSync(PatchHistoryRecord, slot(HttpApi.SuccessParseOptions))
const ApiErrors = [NotFound, BadRequest, Rejected, Unavailable] as const
const encodeError = Schema.encodeUnknownSync(Schema.Union(ApiErrors), slot(HttpApi.ErrorParseOptions))
// The status each error class declares (`httpApiStatus`), as the router reads it.
const statusOf = (e: NotFound | BadRequest | Rejected | Unavailable): number => {
  const status = ApiErrors.find((c) => e instanceof c)?.ast.annotations?.["httpApiStatus"]
  return typeof status === "number" ? status : 500
}
const textDecoder = new TextDecoder()

const send = (response: ServerResponse, status: number, contentType: string | undefined, body: string | Uint8Array) => {
  const bytes = typeof body === "string" ? Buffer.from(body) : body
  response.writeHead(status, contentType === undefined ? { "content-length": bytes.length } : { "content-type": contentType, "content-length": bytes.length })
  response.end(bytes)
}

/** The 400 problem the router's `RequestProblems` middleware renders, built by the same function. */
const sendProblem = (response: ServerResponse, issue: SchemaIssue.Issue) => {
  const rendered = Effect.runSync(HttpServerRespondable.toResponse(requestInvalid("payload", issue)))
  const body = rendered.body
  if (body._tag !== "Uint8Array") return send(response, 500, undefined, "")
  send(response, rendered.status, body.contentType, body.body)
}

const bearerOf = (header: string | undefined): string | undefined => {
  // Only the plain form; any other spelling is the router's to parse (and refuse or accept).
  if (header === undefined || !header.startsWith("Bearer ")) return undefined
  const token = header.slice("Bearer ".length)
  return token.length === 0 || token.includes(" ") ? undefined : token
}

const isJson = (contentType: string | undefined) =>
  contentType === undefined || contentType === "application/json" || contentType.toLowerCase() === "application/json; charset=utf-8"

/**
 * The fast `POST /v1/apply` over the gateway's `services`, for bodies of at most `maxBody` bytes;
 * its error bodies go through `redact`, as the router's do.
 */
export const makeFastApply = (services: Context.Context<Services>, maxBody: number, redact: Redact): Front => {
  // As on the router: no spans (nothing exports them; they cost a third of a small request).
  const run = Effect.runPromiseExitWith(Context.add(services, References.TracerEnabled, false))
  const authenticate = (token: string) => Effect.provideService(Tokens.authenticate(token), TokenStore, Context.get(services, TokenStore))

  const answer = async (response: ServerResponse, caller: ThreadId, text: string): Promise<void> => {
    let json: unknown
    if (text === "") json = undefined
    else {
      try {
        json = JSON.parse(text)
      } catch {
        return sendProblem(response, new SchemaIssue.InvalidValue({ message: "Expected a valid JSON body" }))
      }
    }
    const decoded = decodeRequest(json)
    if (Result.isFailure(decoded)) return sendProblem(response, decoded.failure.issue)
    // Not interrupted when the client goes away: a started apply finishes and is recorded.
    const exit = await run(applyAs(caller, decoded.success))
    if (Exit.isSuccess(exit)) return send(response, 200, "application/json", JSON.stringify(encodeRecord(exit.value)))
    const failure = Cause.findErrorOption(exit.cause)
    // A defect is the router's bare 500 too.
    if (failure._tag === "Some") {
      return send(response, statusOf(failure.value), "application/json", redactJsonText(redact, JSON.stringify(encodeError(failure.value))))
    }
    send(response, 500, undefined, "")
  }

  return (request, response, next) => {
    if (request.method !== "POST" || request.url !== "/v1/apply") return false
    const headers = request.headers
    const length = headers["content-length"] === undefined ? NaN : Number(headers["content-length"])
    if (!(length <= maxBody) || headers["transfer-encoding"] !== undefined || headers["expect"] !== undefined || !isJson(headers["content-type"])) return false
    const token = bearerOf(headers["authorization"])
    if (token === undefined) return false
    run(authenticate(token)).then((auth) => {
      // A refused token (or a store failure): the router checks it again and answers as always.
      if (Exit.isFailure(auth)) return next(request, response)
      const chunks: Array<Buffer> = []
      // A client that breaks off its upload gets no answer: close the exchange, nothing applied.
      request.on("error", () => response.destroy())
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        answer(response, auth.value, textDecoder.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks))).catch(() => {
          if (!response.headersSent) send(response, 500, undefined, "")
        })
      })
    }, () => next(request, response))
    return true
  }
}
