/**
 * The errors the gateway (`forkjoin serve`) answers with, each a tagged error with its HTTP
 * status (`httpApiStatus`): the bodies its clients decode (`@forkjoin/engine/Remote`) and its
 * handlers fail with. Plain schemas, apart from the HTTP contract (`GatewayApi.ts`) that lists
 * them, so a client decodes them without loading `effect/http-api`.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * 401: no bearer token, or one that is malformed, unknown, expired or revoked (`reason`).
 *
 * @category errors
 * @since 0.1.0
 */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  reason: Schema.Literals(["Missing", "Malformed", "Unknown", "Expired", "Revoked"]),
  message: Schema.String
}, { httpApiStatus: 401 }) {}

/**
 * 404: nothing by that id, or something the caller's thread may not see (the two are not told apart).
 *
 * @category errors
 * @since 0.1.0
 */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  message: Schema.String
}, { httpApiStatus: 404 }) {}

/**
 * 400: a request the views or the gateway refuse as asked (a path outside the workspace, a
 * cursor of another query, a bad page option, a malformed provider event).
 *
 * @category errors
 * @since 0.1.0
 */
export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", {
  reason: Schema.String,
  message: Schema.String
}, { httpApiStatus: 400 }) {}

/**
 * 422: the engine or the orchestrator refused the operation; nothing was written. `code` is the
 * stable engine or orchestrator code (`context_mismatch`, `conflict_stale`, `rollback_drift`...).
 *
 * @category errors
 * @since 0.1.0
 */
export class Rejected extends Schema.TaggedError<Rejected>()("Rejected", {
  code: Schema.String,
  stage: Schema.optionalKey(Schema.Number),
  paths: Schema.Array(Schema.String),
  message: Schema.String
}, { httpApiStatus: 422 }) {}

/**
 * 503: the history database failed (busy, unreadable); the request may be retried.
 *
 * @category errors
 * @since 0.1.0
 */
export class Unavailable extends Schema.TaggedError<Unavailable>()("Unavailable", {
  message: Schema.String
}, { httpApiStatus: 503 }) {}

/**
 * What a client reads of a refusal that is an RFC 9457 problem rather than one of the errors
 * above (`RequestInvalid`, an unexpected 500): its `detail`.
 *
 * @category errors
 * @since 0.1.0
 */
export const Problem = Schema.Struct({ detail: Schema.String })
