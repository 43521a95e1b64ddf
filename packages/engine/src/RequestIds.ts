/**
 * Turns the ids a caller passes as plain strings (the promise API, JSON bodies) into the
 * branded ids the engine records. A thread or turn id outside the id rule (`ThreadIdInput`), an
 * invocation id that is empty, padded or holds a control character, or a transaction id not of
 * its form is refused as `request_invalid` at stage 1, before anything runs.
 *
 * @since 0.1.0
 */
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import { InvocationId, ThreadIdInput, TransactionId, TurnIdInput } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/**
 * The ids of one request as a caller may spell them: threads and turns by the id rule.
 *
 * @category models
 * @since 0.1.0
 */
export const RequestIds = Schema.Struct({
  threadId: ThreadIdInput,
  turnId: TurnIdInput,
  invocationId: Schema.optionalKey(InvocationId),
  transactionId: Schema.optionalKey(TransactionId)
})

/**
 * @category models
 * @since 0.1.0
 */
export type RequestIds = typeof RequestIds.Type

const decode = Schema.decodeUnknownEffect(RequestIds)

/**
 * Validates `raw` as `RequestIds`; a malformed id fails with `request_invalid` (stage 1),
 * the schema's reason as the message and the decoding failure as the cause.
 *
 * @category constructors
 * @since 0.1.0
 */
export const decodeRequestIds = (raw: {
  readonly threadId: string
  readonly turnId: string
  readonly invocationId?: string | undefined
  readonly transactionId?: string | undefined
}): Effect.Effect<RequestIds, EngineError> =>
  decode(Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined))).pipe(
    Effect.mapError((error) =>
      new EngineError({
        code: "request_invalid",
        stage: Stage.normalize,
        paths: [],
        message: `The request's ids are invalid: ${error.message}. Fix that id and send the request again.`,
        cause: error
      })
    )
  )
