/**
 * The `TokenStore` contract, run against every layer (memory, SQLite), with the token logic of
 * `Tokens.ts` on top: issue, authenticate, expiry, revocation, malformed and unknown tokens.
 */
import { assert, it } from "@effect/vitest"
import { sha256 } from "@forkjoin/patch/Bytes"
import { ThreadId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as TestClock from "effect/testing/TestClock"
import { TokenStore } from "../src/TokenStore.ts"
import * as Tokens from "../src/Tokens.ts"

const T = ThreadId.make("thread-a")

export const contract = (name: string, layer: Layer.Layer<TokenStore, unknown>) =>
  it.layer(layer)(`TokenStore (${name})`, (it) => {
    it.effect("an issued token authenticates to its thread; only its hash is stored", () =>
      Effect.gen(function*() {
        const issued = yield* Tokens.issue(T, 60_000)
        assert.match(issued.token, /^fjt_[0-9a-f]{16}_/)
        assert.strictEqual(issued.thread, T)
        assert.strictEqual(yield* Tokens.authenticate(issued.token), T)
        const store = yield* TokenStore
        const row = yield* store.findByHash(sha256(issued.token))
        assert.isTrue(Option.isSome(row))
        if (Option.isSome(row)) {
          assert.strictEqual(row.value.tokenId, issued.tokenId)
          assert.notInclude(JSON.stringify(row.value), issued.token)
        }
      }))

    it.effect("an expired token is refused as Expired", () =>
      Effect.gen(function*() {
        const issued = yield* Tokens.issue(T, 1_000)
        yield* TestClock.adjust("2 seconds")
        const r = yield* Effect.result(Tokens.authenticate(issued.token))
        assert.isTrue(Result.isFailure(r) && r.failure._tag === "TokenRefused" && r.failure.reason === "Expired")
      }))

    it.effect("a revoked token is refused as Revoked; revoking twice is fine; unknown id is NotFound", () =>
      Effect.gen(function*() {
        const issued = yield* Tokens.issue(T, 60_000)
        yield* Tokens.revoke(issued.tokenId)
        const again = yield* Tokens.revoke(issued.tokenId)
        assert.isDefined(again.revokedAt)
        const r = yield* Effect.result(Tokens.authenticate(issued.token))
        assert.isTrue(Result.isFailure(r) && r.failure._tag === "TokenRefused" && r.failure.reason === "Revoked")
        const missing = yield* Effect.result(Tokens.revoke("0000000000000000"))
        assert.isTrue(Result.isFailure(missing) && missing.failure._tag === "TokenStoreError" && missing.failure.reason === "NotFound")
      }))

    it.effect("malformed, unknown and edited tokens are refused", () =>
      Effect.gen(function*() {
        const issued = yield* Tokens.issue(T, 60_000)
        const reasonOf = (token: string) =>
          Effect.map(Effect.flip(Tokens.authenticate(token)), (e) => (e._tag === "TokenRefused" ? e.reason : e._tag))
        assert.strictEqual(yield* reasonOf(""), "Missing")
        assert.strictEqual(yield* reasonOf("hello"), "Malformed")
        const last = issued.token.at(-1) === "A" ? "B" : "A"
        assert.strictEqual(yield* reasonOf(issued.token.slice(0, -1) + last), "Unknown")
      }))

    it.effect("a duplicate id is a Constraint", () =>
      Effect.gen(function*() {
        const store = yield* TokenStore
        const row = { tokenId: "dup0000000000000", tokenHash: sha256("x"), threadId: T, createdAt: 0, expiresAt: 1 }
        yield* store.insert(row)
        const r = yield* Effect.result(store.insert({ ...row, tokenHash: sha256("y") }))
        assert.isTrue(Result.isFailure(r) && r.failure.reason === "Constraint")
      }))
  })
