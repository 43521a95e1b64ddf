/**
 * The client side of a running gateway (`forkjoin serve`): one HTTP request per apply or view,
 * so an orchestrator making thousands of small applies pays no process start and no database
 * open per call. Used by the library facade (`openWorkspace(dir, { server })`, which runs these
 * Effects at its Promise edge) and by `forkjoin apply --server URL`.
 *
 * It owns the requests and the mapping of the gateway's answers back to records or errors. The
 * wire contract is `@forkjoin/schema/GatewayApi`: every answer is decoded with the schemas it
 * lists (the record, the view pages, the errors of `@forkjoin/schema/GatewayErrors`, imported
 * without `effect/http-api`, which a library user would otherwise load for nothing). Requests go
 * through `@forkjoin/http` (node:http with a keep-alive agent, see adrs/20261130-gateway.md,
 * "Fast apply path").
 *
 * @since 0.1.0
 */
import { HttpTransport } from "@forkjoin/http"
import { EngineError } from "@forkjoin/schema/EngineError"
import type { ApplyRequest } from "@forkjoin/schema/Gateway"
import { BadRequest, NotFound, Problem, Rejected, Unauthorized, Unavailable } from "@forkjoin/schema/GatewayErrors"
import { DiffPage, FilePage, TimelinePage, TurnPage } from "@forkjoin/schema/HistoryViews"
import { PatchHistoryRecord } from "@forkjoin/schema/PatchHistoryRecord"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/**
 * A gateway and the bearer token to use with it (`forkjoin token create`).
 *
 * @category models
 * @since 0.1.0
 */
export interface Server {
  readonly url: string
  readonly token: string
}

// Optional keys may also be given as `undefined` (then they are not sent).
type UndefinedAllowed<T> = { readonly [K in keyof T]: {} extends Pick<T, K> ? T[K] | undefined : T[K] }

/**
 * One apply through a gateway: the body of `POST /v1/apply` (the thread defaults to the token's).
 *
 * @category models
 * @since 0.1.0
 */
export type RemoteApply = UndefinedAllowed<(typeof ApplyRequest)["Encoded"]>

/**
 * Why the gateway did not answer with what was asked: its answer (`status`, `code` — the
 * error's tag, e.g. `Unauthorized`, `NotFound` — and `message`), or status 0, `unreachable`.
 *
 * @category errors
 * @since 0.1.0
 */
export class RemoteError extends Schema.TaggedError<RemoteError>()("RemoteError", {
  status: Schema.Number,
  code: Schema.String,
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

// What a refusal's body decodes as: one of the contract's errors, or an RFC 9457 problem.
const decodeRefusal = Schema.decodeUnknownOption(
  Schema.fromJsonString(Schema.Union([Unauthorized, NotFound, BadRequest, Rejected, Unavailable, Problem]))
)
const decodeEngineError = Schema.decodeUnknownOption(EngineError)

/** The error a non-200 answer stands for: the engine's own refusal of an apply, else a `RemoteError`. */
const refusalOf = (status: number, text: string): EngineError | RemoteError => {
  const body = Option.getOrUndefined(decodeRefusal(text))
  if (body === undefined) return new RemoteError({ status, code: `http_${status}`, message: `the gateway answered ${status}` })
  if (!("_tag" in body)) return new RemoteError({ status, code: `http_${status}`, message: body.detail })
  if (status === 422 && body._tag === "Rejected" && body.stage !== undefined) {
    const refusal = decodeEngineError({ _tag: "EngineError", code: body.code, stage: body.stage, paths: body.paths, message: body.message })
    if (refusal._tag === "Some") return refusal.value
  }
  return new RemoteError({ status, code: body._tag, message: body.message })
}

/**
 * `route` under `/v1/` on `server`, its 200 answer decoded by `decode` (from JSON text); fails
 * with the engine's `EngineError` when the engine refused (same `code`, `stage`, `paths` as a
 * local apply) and with a `RemoteError` for anything else.
 */
const call = <A>(server: Server, route: string, body: string | undefined, decode: (text: string) => Effect.Effect<A, Schema.SchemaError>) =>
  HttpTransport.send({
    url: `${server.url.replace(/\/+$/, "")}/v1/${route}`,
    method: body === undefined ? "GET" : "POST",
    headers: body === undefined
      ? { authorization: `Bearer ${server.token}` }
      : { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
    body
  }).pipe(
    Effect.mapError((e) =>
      new RemoteError({ status: 0, code: "unreachable", message: `cannot reach the gateway at ${server.url}; is 'forkjoin serve' running?`, cause: e.cause ?? e })
    ),
    Effect.flatMap((answer): Effect.Effect<A, EngineError | RemoteError> =>
      answer.status === 200
        ? Effect.mapError(
          decode(answer.text),
          (cause) => new RemoteError({ status: 200, code: "answer_invalid", message: `the gateway at ${server.url} answered with a body that does not decode: ${cause.message}`, cause })
        )
        : Effect.fail(refusalOf(answer.status, answer.text))
    )
  )

const fromJson = <S extends Schema.Codec<unknown, unknown>>(schema: S) => Schema.decodeUnknownEffect(Schema.fromJsonString(schema))
const decodeRecord = fromJson(PatchHistoryRecord)
const decodePage = { timeline: fromJson(TimelinePage), diff: fromJson(DiffPage), files: fromJson(FilePage), turns: fromJson(TurnPage) }

/**
 * Applies a patch through the gateway: the record; fails with `EngineError` when the engine
 * refused it and with `RemoteError` otherwise.
 *
 * @category constructors
 * @since 0.1.0
 */
export const applyRemote = (server: Server, request: RemoteApply): Effect.Effect<PatchHistoryRecord, EngineError | RemoteError> =>
  call(server, "apply", JSON.stringify(request), decodeRecord)

/**
 * The history views a gateway serves, by route (`turns/{turn}` names its turn).
 *
 * @category models
 * @since 0.1.0
 */
export type ViewRoute = "timeline" | "diff" | "files" | `turns/${string}`

/**
 * The page a view route answers with.
 *
 * @category models
 * @since 0.1.0
 */
export type PageOf<R extends ViewRoute> = R extends "timeline" ? TimelinePage
  : R extends "diff" ? DiffPage
  : R extends "files" ? FilePage
  : TurnPage

/**
 * A history view of the gateway with its query (`undefined` values are left out): the page,
 * decoded; fails with `RemoteError` (or, as an apply, with the engine's refusal).
 *
 * @category constructors
 * @since 0.1.0
 */
export const viewRemote = <R extends ViewRoute>(
  server: Server,
  route: R,
  query: Record<string, string | number | boolean | undefined>
): Effect.Effect<PageOf<R>, EngineError | RemoteError> => {
  const params = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v))
  const decode = route.startsWith("turns/") ? decodePage.turns : decodePage[route as Exclude<ViewRoute, `turns/${string}`>]
  // The decoder is the route's, so its page is `PageOf<R>` (a conditional type TypeScript cannot narrow here).
  return call<PageOf<ViewRoute>>(server, `${route}?${params}`, undefined, decode) as Effect.Effect<PageOf<R>, EngineError | RemoteError>
}
