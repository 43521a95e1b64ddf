/**
 * The gateway's HTTP contract (SPEC §11) as an `effect/http-api` `HttpApi`: every route under
 * `/v1/`, each request and response body a Schema of this package (records, pages, runs,
 * conflicts, and the envelopes in `Gateway.ts`), the bearer-token security scheme, and the
 * errors with their status codes (`GatewayErrors.ts`). `OpenApi.fromApi(GatewayApi)` is
 * `/openapi.json`. It lives below both sides: the server (`@forkjoin/gateway`) implements it and
 * the client (`@forkjoin/engine/Remote`) decodes its answers with it.
 *
 * It owns the contract only. It does not own the handlers (`@forkjoin/gateway`), the routes
 * outside the API (`/`, `/view/{grant}`, `/auth/exchange`) nor any behaviour.
 *
 * @since 0.1.0
 */
import { ConflictRecord } from "./Conflict.ts"
import {
  ApplyRequest,
  IngestRequest,
  IngestResponse,
  ResolveRequest,
  ResolveResponse,
  RunDetail,
  ViewGrantRequest,
  ViewGrantResponse
} from "./Gateway.ts"
import { BadRequest, NotFound, Rejected, Unauthorized, Unavailable } from "./GatewayErrors.ts"
import { DiffPage, FilePage, TimelinePage, TurnPage } from "./HistoryViews.ts"
import { ConflictId, Id, MergeRunIdInput, RecordId, ThreadId, ThreadIdInput, TransactionId, TurnIdInput } from "./Ids.ts"
import { MergeRun } from "./MergeRun.ts"
import { PatchHistoryRecord } from "./PatchHistoryRecord.ts"
import { AgentShow, AgentsList } from "./WorkspaceIndex.ts"
import * as Context from "effect/Context"
import { HttpApi, HttpApiEndpoint, HttpApiError, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity } from "effect/http-api"
import { ProblemDetails } from "effect/http"
import * as Schema from "effect/Schema"

// -------------------------------------------------------------------------------------
// errors
// -------------------------------------------------------------------------------------

export { BadRequest, NotFound, Rejected, Unauthorized, Unavailable } from "./GatewayErrors.ts"

/**
 * 400: a request that does not decode (a malformed id in a path, a query or a body, an unknown
 * field, a body that is not JSON): an RFC 9457 problem with the stable code `request_invalid`
 * (as the CLI and the engine name a refused id) and `errors`, each field with what is wrong.
 *
 * @category errors
 * @since 0.1.0
 */
export class RequestInvalid extends HttpApiError.Problem<RequestInvalid>()("RequestInvalid", {
  type: ProblemDetails.blankType,
  status: 400,
  title: "Bad Request"
}, {
  code: Schema.Literal("request_invalid"),
  errors: Schema.Array(HttpApiError.ProblemIssue)
}) {}

/**
 * Renders request decoding failures as `RequestInvalid` and response encoding failures as a
 * bare 500 problem (the layer is `internal/requestProblems.ts`).
 *
 * @category services
 * @since 0.1.0
 */
export class RequestProblems extends HttpApiMiddleware.Service<RequestProblems>()("forkjoin/gateway/RequestProblems", {
  error: [RequestInvalid, HttpApiError.InternalServerErrorProblem]
}) {}

// -------------------------------------------------------------------------------------
// security
// -------------------------------------------------------------------------------------

/**
 * The authenticated caller of a `/v1/` request: the thread its token is bound to.
 *
 * @category services
 * @since 0.1.0
 */
export class Caller extends Context.Service<Caller, { readonly thread: ThreadId }>()("forkjoin/gateway/Caller") {}

/**
 * `Authorization: Bearer <token>` on every `/v1/` endpoint; provides the `Caller`.
 *
 * @category services
 * @since 0.1.0
 */
export class Authorization extends HttpApiMiddleware.Service<Authorization, { provides: Caller }>()(
  "forkjoin/gateway/Authorization",
  { error: Unauthorized, security: { bearer: HttpApiSecurity.bearer } }
) {}

// -------------------------------------------------------------------------------------
// request and response bodies
// -------------------------------------------------------------------------------------

const Count = (max: number) => Schema.optionalKey(Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: max })))
const Flag = Schema.optionalKey(Schema.Literals(["true", "false"]))

const isRecordId = Schema.is(RecordId)
const isTransactionId = Schema.is(TransactionId)

// What a diff names: a record id (`#N` is one too) or a transaction id; anything else is malformed.
const DiffTarget = Schema.String.check(
  Schema.makeFilter((s: string) =>
    isRecordId(s) || isTransactionId(s) ? undefined : `the target ${JSON.stringify(s)} is refused: give a record id, a transaction id or #N`, {
    expected: "a record id, a transaction id or #N"
  })
)

const paging = {
  cursor: Schema.optionalKey(Schema.String),
  limit: Count(1000),
  maxBytes: Count(16 * 1024 * 1024)
}

/**
 * One event of `GET /v1/events` (server-sent events, `text/event-stream`): `hello` first (the
 * caller's thread), then `record` for each committed record the
 * caller sees and `run` when a visible run's status or update time changes. Each `data` is the
 * JSON of the payload; a `: keep-alive` comment comes every 15 s of quiet.
 *
 * @category models
 * @since 0.1.0
 */
export const StreamEvent = Schema.Union([
  Schema.Struct({
    event: Schema.Literal("hello"),
    data: Schema.fromJsonString(Schema.Struct({ thread: ThreadId }))
  }),
  Schema.Struct({ event: Schema.Literal("record"), data: Schema.fromJsonString(PatchHistoryRecord) }),
  Schema.Struct({ event: Schema.Literal("run"), data: Schema.fromJsonString(MergeRun) })
])

// -------------------------------------------------------------------------------------
// api
// -------------------------------------------------------------------------------------

const errors = [NotFound, BadRequest, Rejected, Unavailable] as const

/**
 * A workspace's cluster as `forkjoin status` and `GET /v1/cluster` show it: its URL (password
 * hidden), the registered runners that answer and those that do not (`host:port`), or why they
 * could not be listed; no `url` when the workspace has no cluster.
 *
 * @category models
 * @since 0.1.0
 */
export const ClusterRunners = Schema.Struct({
  url: Schema.optionalKey(Schema.String),
  runners: Schema.Array(Schema.String),
  unhealthy: Schema.Array(Schema.String),
  error: Schema.optionalKey(Schema.String)
})

/**
 * @category models
 * @since 0.1.0
 */
export type ClusterRunners = typeof ClusterRunners.Type

/**
 * The `/v1/` endpoints, every one behind `Authorization`.
 *
 * @category models
 * @since 0.1.0
 */
export const V1 = HttpApiGroup.make("v1").add(
  HttpApiEndpoint.get("whoami", "/whoami", { success: Schema.Struct({ thread: ThreadId }) }),
  HttpApiEndpoint.post("apply", "/apply", { payload: ApplyRequest, success: PatchHistoryRecord, error: errors }),
  HttpApiEndpoint.get("timeline", "/timeline", {
    query: { thread: Schema.optionalKey(ThreadIdInput), turn: Schema.optionalKey(TurnIdInput), descendants: Flag, ...paging },
    success: TimelinePage,
    error: errors
  }),
  HttpApiEndpoint.get("turn", "/turns/:turn", { params: { turn: TurnIdInput }, query: paging, success: TurnPage, error: errors }),
  HttpApiEndpoint.get("diff", "/diff", {
    query: { target: DiffTarget, maxLines: Count(100_000), ...paging },
    success: DiffPage,
    error: errors
  }),
  HttpApiEndpoint.get("file", "/files", { query: { path: Schema.String, ...paging }, success: FilePage, error: errors }),
  HttpApiEndpoint.get("runs", "/runs", { success: Schema.Struct({ runs: Schema.Array(MergeRun) }), error: errors }),
  HttpApiEndpoint.get("run", "/runs/:runId", { params: { runId: MergeRunIdInput }, success: RunDetail, error: errors }),
  // The agent sessions whose thread the caller sees, as `forkjoin agents --json` prints them.
  HttpApiEndpoint.get("agents", "/agents", { success: AgentsList, error: errors }),
  HttpApiEndpoint.get("agent", "/agents/:agentId", { params: { agentId: Id }, success: AgentShow, error: errors }),
  // The runners of the workspace's cluster (where each child ran is on its run's outcomes, `ranOn`).
  HttpApiEndpoint.get("cluster", "/cluster", { success: ClusterRunners, error: errors }),
  HttpApiEndpoint.get("conflicts", "/conflicts", {
    query: { runId: Schema.optionalKey(MergeRunIdInput), status: Schema.optionalKey(Schema.Literals(["open", "resolved"])) },
    success: Schema.Struct({ conflicts: Schema.Array(ConflictRecord) }),
    error: errors
  }),
  HttpApiEndpoint.post("resolve", "/conflicts/:conflictId/resolve", {
    params: { conflictId: ConflictId },
    payload: ResolveRequest,
    success: ResolveResponse,
    error: errors
  }),
  // A path changed since is merged (not clean: held as conflicts, 422 rollback_conflicted); ?strict=true refuses instead.
  HttpApiEndpoint.post("rollback", "/transactions/:transactionId/rollback", {
    params: { transactionId: TransactionId },
    query: { strict: Flag },
    success: PatchHistoryRecord,
    error: errors
  }),
  HttpApiEndpoint.post("ingest", "/provider-events", { payload: IngestRequest, success: IngestResponse, error: errors }),
  HttpApiEndpoint.post("viewGrant", "/threads/:thread/view-grants", {
    params: { thread: ThreadIdInput },
    payload: ViewGrantRequest,
    success: ViewGrantResponse,
    error: errors
  }),
  HttpApiEndpoint.get("events", "/events", { success: HttpApiSchema.StreamSse({ events: StreamEvent }), error: errors })
).middleware(Authorization).prefix("/v1")

/**
 * The gateway's API: `V1`, with unknown fields refused and request-validation failures
 * answered as RFC 9457 problems naming each bad field (`RequestInvalid`).
 *
 * @category models
 * @since 0.1.0
 */
export const GatewayApi = HttpApi.make("forkjoin-gateway")
  .add(V1)
  .annotate(HttpApi.ParseOptions, { onExcessProperty: "error" })
  .middleware(RequestProblems)
