/** Ids passed as plain strings are validated once, at the request boundary (stage 1). */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { decodeRequestIds } from "../src/RequestIds.ts"

describe("decodeRequestIds", () => {
  it.effect("brands well-formed ids and keeps absent optional ones absent", () =>
    Effect.gen(function*() {
      const ids = yield* decodeRequestIds({ threadId: "t", turnId: "u", invocationId: undefined })
      assert.deepStrictEqual<object>(ids, { threadId: "t", turnId: "u" })
      const all = yield* decodeRequestIds({ threadId: "t", turnId: "u", invocationId: "i", transactionId: "patch:0b7f1c9e-4a52-4d8e-9a3c-2f1e5d6c7b8a" })
      assert.deepStrictEqual<object>(all, { threadId: "t", turnId: "u", invocationId: "i", transactionId: "patch:0b7f1c9e-4a52-4d8e-9a3c-2f1e5d6c7b8a" })
    }))

  it.effect.each([
    [{ threadId: "", turnId: "u" }, /the id "" is refused \(it is empty\)/],
    [{ threadId: "t", turnId: "a\u0000" }, /the id "a\\u0000" is refused \(it contains/],
    [{ threadId: "../x", turnId: "u" }, /the id "\.\.\/x" is refused \(it has a "\.\." segment\): ids are 1-256 characters/],
    [{ threadId: "t", turnId: "u", invocationId: " i" }, /InvocationId must not start or end with whitespace/],
    [{ threadId: "x".repeat(257), turnId: "u" }, /it has 257 characters/],
    [{ threadId: "t", turnId: "u", transactionId: "patch:1" }, /TransactionId .*"patch:1"/]
  ] as const)("refuses %j as request_invalid at stage 1, keeping the cause", ([raw, reason]) =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(decodeRequestIds(raw))
      assert.strictEqual(error.code, "request_invalid")
      assert.strictEqual(error.stage, 1)
      assert.deepStrictEqual(error.paths, [])
      assert.match(error.message, reason)
      assert.match(error.message, /Fix that id and send the request again/)
      assert.isDefined(error.cause)
    }))
})
