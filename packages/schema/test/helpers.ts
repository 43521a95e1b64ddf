import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/** Decodes `input` and returns the formatted failure message; throws if decoding succeeded. */
export const decodeFailure = <S extends Schema.ConstraintDecoder<unknown>>(schema: S, input: unknown): string => {
  const result = Schema.decodeUnknownResult(schema)(input, { errors: "all" })
  if (Result.isSuccess(result)) throw new Error(`expected ${JSON.stringify(input)} to be rejected`)
  return result.failure.message
}

/** True when `input` decodes. */
export const accepts = <S extends Schema.ConstraintDecoder<unknown>>(schema: S, input: unknown): boolean =>
  Result.isSuccess(Schema.decodeUnknownResult(schema)(input))
