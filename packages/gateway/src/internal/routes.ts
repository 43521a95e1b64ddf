/**
 * The gateway's routes outside the `HttpApi`: the history page (`GET /`), a file through a view
 * grant (`GET /view/{grant}`, the grant is the credential) and the one-time login code exchange
 * (`POST /auth/exchange`); and the body of the live event stream (`GET /v1/events`, an
 * endpoint of the API since it is documented there).
 */
import { Engine } from "@forkjoin/engine/Engine"
import { HistoryIdentityStore, HistoryRecords } from "@forkjoin/history/HistoryStore"
import { MergeStore } from "@forkjoin/history/MergeStore"
import { HistoryViews } from "@forkjoin/history/Views"
import { sha256 } from "@forkjoin/patch/Bytes"
import { ThreadId } from "@forkjoin/schema/Ids"
import * as ByteSize from "effect/ByteSize"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { MaxBodySize } from "effect/http/HttpServerRequest"
import * as Tokens from "../Tokens.ts"
import { type Grants, isBinary, MAX_VIEW_BYTES, renderFile } from "../ViewGrants.ts"
import { sees } from "./access.ts"
import { refusalResponse, UNAUTHENTICATED_BODY_LIMIT, unauthenticatedBodyRefusal } from "./boundary.ts"
import { PAGE_HTML } from "./page.ts"
import { scopedRecord } from "./scoped.ts"

const json = (status: number, body: unknown) => HttpServerResponse.jsonUnsafe(body, { status })

/** One-time login codes (`serve --open-url`): code → thread, each used once. */
export interface LoginCodes {
  readonly take: (code: string, now: number) => string | undefined
}

const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store"
}

const page = HttpRouter.add(
  "GET",
  "/",
  Effect.succeed(
    HttpServerResponse.text(PAGE_HTML, {
      contentType: "text/html; charset=utf-8",
      headers: {
        ...SECURITY_HEADERS,
        "content-security-policy": "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; frame-ancestors 'none'"
      }
    })
  )
)

const view = (grants: Grants) =>
  HttpRouter.add("GET", "/view/:grant", (request) =>
    Effect.gen(function*() {
      const params = yield* HttpRouter.params
      const now = yield* Clock.currentTimeMillis
      const redeemed = grants.redeem(params["grant"] ?? "", now)
      if (Result.isFailure(redeemed)) {
        const status = redeemed.failure.reason === "Expired" || redeemed.failure.reason === "Replayed" ? 410 : 403
        return json(status, { _tag: "GrantRefused", reason: redeemed.failure.reason, message: redeemed.failure.detail })
      }
      const claims = redeemed.success
      const engine = yield* Engine
      const read = yield* Effect.result(engine.read([claims.path]))
      if (Result.isFailure(read)) {
        return json(403, { _tag: "GrantRefused", reason: "PathRefused", message: read.failure.message })
      }
      const state = read.success.get(claims.path)
      if (state === undefined || state._tag !== "File") {
        return json(404, { _tag: "NotFound", message: `${claims.path} is no longer a file in the workspace` })
      }
      if (state.bytes.length > MAX_VIEW_BYTES) {
        return json(413, { _tag: "TooLarge", message: `${claims.path} is ${state.bytes.length} bytes; views serve at most ${MAX_VIEW_BYTES}` })
      }
      if (isBinary(state.bytes)) return json(415, { _tag: "Binary", message: `${claims.path} is binary; views serve text only` })
      const etag = `"${sha256(state.bytes).slice("sha256:".length)}"`
      const headers = { ...SECURITY_HEADERS, etag, "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'" }
      if (request.headers["if-none-match"] === etag) return HttpServerResponse.empty({ status: 304, headers })
      const text = new TextDecoder().decode(state.bytes)
      const url = new URL(request.url, "http://x")
      return url.searchParams.get("format") === "text"
        ? HttpServerResponse.text(text, { contentType: "text/plain; charset=utf-8", headers })
        : HttpServerResponse.text(renderFile(claims, text), { contentType: "text/html; charset=utf-8", headers })
    }))

// The one route that reads a body before any token is checked: JSON with a declared length of
// at most 8 KiB, refused from its headers before a byte is read (`unauthenticatedBodyRefusal`).
const exchange = (codes: LoginCodes) =>
  HttpRouter.add("POST", "/auth/exchange", (request) =>
    Effect.gen(function*() {
      const refused = unauthenticatedBodyRefusal(request.headers)
      if (refused !== undefined) return refusalResponse(refused)
      const body = yield* Effect.result(Effect.provideService(request.json, MaxBodySize, ByteSize.bytes(UNAUTHENTICATED_BODY_LIMIT)))
      const code = Result.isSuccess(body) && typeof body.success === "object" && body.success !== null && "code" in body.success
        ? String(body.success.code)
        : ""
      const thread = codes.take(code, yield* Clock.currentTimeMillis)
      if (thread === undefined) return json(401, { _tag: "Unauthorized", reason: "Unknown", message: "the login code is unknown or was already used" })
      const issued = yield* Effect.result(Tokens.issue(ThreadId.make(thread)))
      if (Result.isFailure(issued)) return json(503, { _tag: "Unavailable", message: issued.failure.message })
      return json(200, issued.success)
    }))

const encoder = new TextEncoder()
const sse = (event: string, data: unknown) => encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)

/**
 * The live stream of `GET /v1/events` for `caller` (authenticated by the API's middleware; the
 * endpoint is `GatewayApi`'s, so the OpenAPI document describes it): records committed by any
 * process (read after the last ordinal seen) and runs whose status or outcomes changed, only
 * those the caller sees. Woken by the engine's event PubSub for this server's own applies, and
 * every `pollMs` for other processes'. `hello` names the caller's thread only: the commit count
 * it starts after is the whole workspace's, other threads' commits included.
 */
export const eventStream = (caller: ThreadId, pollMs: number) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const history = yield* HistoryRecords
    const identity = yield* HistoryIdentityStore
    const store = yield* MergeStore
    const views = yield* HistoryViews
    const env = engine.environmentId
    let last = (yield* Effect.orElseSucceed(identity.identity(env), () => ({ lastOrdinal: 0 }))).lastOrdinal
    const runStamp = new Map<string, string>()
    for (const run of yield* Effect.orElseSucceed(store.listRuns({ environmentId: env }), () => [])) {
      runStamp.set(run.runId, `${run.status}|${run.updatedAt}`)
    }
    let quiet = 0
    const poll = Effect.gen(function*() {
      const out: Array<Uint8Array> = []
      for (;;) {
        const records = yield* history.recordsAfter(env, last, 200)
        for (const record of records) {
          last = Math.max(last, record.commitOrdinal)
          if (yield* sees(caller, record.threadId)) out.push(sse("record", yield* scopedRecord(caller, record)))
        }
        if (records.length < 200) break
      }
      for (const run of yield* store.listRuns({ environmentId: env })) {
        const stamp = `${run.status}|${run.updatedAt}`
        if (runStamp.get(run.runId) === stamp) continue
        runStamp.set(run.runId, stamp)
        if (yield* sees(caller, run.threadId)) out.push(sse("run", run))
      }
      // A comment line now and then keeps proxies and idle timers from closing the stream.
      quiet = out.length === 0 ? quiet + 1 : 0
      if (quiet * pollMs >= 15_000) {
        quiet = 0
        out.push(encoder.encode(": keep-alive\n\n"))
      }
      return out
    }).pipe(
      Effect.orElseSucceed(() => [] as Array<Uint8Array>),
      Effect.provideService(HistoryViews, views),
      Effect.provideService(HistoryRecords, history),
      Effect.provideService(Engine, engine)
    )
    const wake = Stream.merge(Stream.tick(`${pollMs} millis`), Stream.map(Stream.fromPubSub(engine.events), () => undefined))
    const body = Stream.concat(
      Stream.make(sse("hello", { thread: caller })),
      wake.pipe(Stream.mapEffect(() => poll), Stream.flattenIterable)
    )
    return HttpServerResponse.stream(body, {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-store", "x-accel-buffering": "no" }
    })
  })

/** The routes outside the API, over the gateway's services. */
export const extraRoutes = (options: {
  readonly grants: Grants
  readonly codes: LoginCodes
}) =>
  Layer.mergeAll(page, view(options.grants), exchange(options.codes))
