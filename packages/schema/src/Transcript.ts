/**
 * A model-driven session's conversation as kept in its artifacts (`transcript.json`,
 * schemaVersion 1): the messages with their tool calls and results, the tokens used, and why
 * the session stopped when it did not end with `finish`. API keys never appear in it: it is
 * redacted before it is written (`@forkjoin/drivers/Redaction`).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * Why a model-driven session stopped without a clean `finish`: `provider_response_too_large`
 * (an answer past the provider's `maxResponseBytes`) and `provider_protocol_error` (an answer
 * that breaks the protocol, such as negative token counts) are provider failures by their own
 * name; `provider_failed` is every other one.
 *
 * @category models
 * @since 0.1.0
 */
export const StopReason = Schema.Literals([
  "step_limit",
  "budget_exhausted",
  "provider_failed",
  "provider_response_too_large",
  "provider_protocol_error",
  "no_tool_call"
])

/**
 * @category models
 * @since 0.1.0
 */
export type StopReason = typeof StopReason.Type

/**
 * One message: its text, the tools it called, and the results returned.
 *
 * @category models
 * @since 0.1.0
 */
export const TranscriptEntry = Schema.Struct({
  role: Schema.Literals(["system", "user", "assistant", "tool"]),
  text: Schema.optionalKey(Schema.String),
  toolCalls: Schema.optionalKey(Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, params: Schema.Unknown }))),
  toolResults: Schema.optionalKey(Schema.Array(Schema.Struct({
    id: Schema.String,
    name: Schema.String,
    isFailure: Schema.Boolean,
    result: Schema.Unknown
  })))
})

/**
 * @category models
 * @since 0.1.0
 */
export type TranscriptEntry = typeof TranscriptEntry.Type

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * Tokens a session used and how many model calls it made (whole numbers, at least 0).
 *
 * @category models
 * @since 0.1.0
 */
export const TokenUsage = Schema.Struct({ inputTokens: Count, outputTokens: Count, modelCalls: Count })

/**
 * @category models
 * @since 0.1.0
 */
export type TokenUsage = typeof TokenUsage.Type

/**
 * The `transcript.json` of a model-driven session.
 *
 * @category models
 * @since 0.1.0
 */
export const Transcript = Schema.Struct({
  schemaVersion: Schema.Literal(1),
  usage: TokenUsage,
  stop: Schema.optionalKey(Schema.Struct({ reason: StopReason, message: Schema.String })),
  messages: Schema.Array(TranscriptEntry)
})

/**
 * @category models
 * @since 0.1.0
 */
export type Transcript = typeof Transcript.Type
