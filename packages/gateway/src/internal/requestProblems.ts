/**
 * The rendering of requests that do not decode: `RequestInvalid` (400, code `request_invalid`,
 * each bad field with its message), shared by the router's `RequestProblems` middleware and the
 * fast apply path, so both answer a malformed id alike. A response that fails to encode is
 * reported and answered with a bare 500 problem, as `effect`'s own problem details do.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as ErrorReporter from "effect/ErrorReporter"
import * as SchemaIssue from "effect/SchemaIssue"
import * as HttpServerRespondable from "effect/http/HttpServerRespondable"
import { HttpApiError, HttpApiMiddleware } from "effect/http-api"
import { RequestInvalid, RequestProblems } from "../GatewayApi.ts"

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** The refusal of a request whose `slot` (`params`, `query`, `payload`, `headers`) failed with `issue`. */
export const requestInvalid = (slot: string, issue: SchemaIssue.Issue): RequestInvalid =>
  new RequestInvalid({
    code: "request_invalid",
    detail: "Request validation failed",
    errors: formatIssues(issue).issues.map((i) => ({
      path: [slot, ...(i.path ?? []).map((s) => {
        const key = typeof s === "object" ? s.key : s
        return typeof key === "number" ? key : String(key)
      })],
      message: i.message
    }))
  })

/** The `RequestProblems` middleware. */
export const layer = HttpApiMiddleware.layerSchemaErrorTransform(RequestProblems, (error) =>
  error.kind === "Body" || error.kind === "ResponseHeaders"
    ? Effect.andThen(ErrorReporter.report(Cause.fail(error)), HttpServerRespondable.toResponse(new HttpApiError.InternalServerErrorProblem()))
    : Effect.fail(requestInvalid(error.kind.toLowerCase(), error.cause.issue)))
