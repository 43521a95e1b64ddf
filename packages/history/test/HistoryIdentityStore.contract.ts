/**
 * The `HistoryIdentityStore` contract: reading the identity mints nothing, the history id is
 * minted once per database, and each reset is recorded against it, per environment.
 * Every store layer must pass it; each test gets a fresh store from `makeLayer` and its own
 * environment ids.
 */
import { assert } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { freshEnvironment, planned } from "./fixtures.ts"
import { apply, MILLIS, services, type StoreLayer, suite } from "./storeContract.ts"

/** Runs the `HistoryIdentityStore` contract against fresh stores built by `makeLayer`. */
export const contract = (name: string, makeLayer: () => StoreLayer): void =>
  suite(`HistoryIdentityStore contract (${name})`, makeLayer, (test) => {
    test("identity reads only: no history id until one is established, the environment's last ordinal and open intents", () =>
      Effect.gen(function*() {
        const { identity, journal } = yield* services
        const env = freshEnvironment("identity")
        const before = yield* identity.identity(env)
        assert.deepStrictEqual([before.historyId, before.lastOrdinal, before.openIntents], [undefined, 0, 0])
        yield* apply(planned({ environmentId: env }))
        yield* apply(planned({ environmentId: env }))
        const open = planned({ environmentId: env })
        yield* journal.openIntent(open.intent, open.blobs)
        const after = yield* identity.identity(env)
        assert.deepStrictEqual([after.historyId, after.lastOrdinal, after.openIntents], [undefined, 2, 1])
        assert.strictEqual(after.location, before.location)
        const other = yield* identity.identity(freshEnvironment())
        assert.deepStrictEqual([other.lastOrdinal, other.openIntents], [0, 0])
      }))

    test("establishIdentity mints the database's history id once; later calls and identity return the same one", () =>
      Effect.gen(function*() {
        const { identity } = yield* services
        const env = freshEnvironment()
        const first = yield* identity.establishIdentity(env, MILLIS)
        assert.match(first.historyId ?? "", /^hist-[0-9a-f]{32}$/)
        const again = yield* identity.establishIdentity(freshEnvironment(), MILLIS + 1)
        assert.strictEqual(again.historyId, first.historyId)
        assert.strictEqual((yield* identity.identity(env)).historyId, first.historyId)
        assert.deepStrictEqual(yield* identity.historyResets(env), [])
      }))

    test("resetIdentity establishes the id and records the reset; historyResets lists an environment's, oldest first", () =>
      Effect.gen(function*() {
        const { identity } = yield* services
        const env = freshEnvironment()
        const reset = yield* identity.resetIdentity(env, MILLIS, { historyId: "hist-old", lastOrdinal: 7, reason: "different" })
        const historyId = (yield* identity.identity(env)).historyId
        assert.deepStrictEqual(reset, {
          environmentId: env,
          resetAt: "2026-11-29T12:34:56.789Z",
          historyId: historyId ?? "",
          previousHistoryId: "hist-old",
          previousLastOrdinal: 7,
          reason: "different"
        })
        const second = yield* identity.resetIdentity(env, MILLIS + 1, { historyId: "hist-older", lastOrdinal: 0, reason: "missing" })
        assert.strictEqual(second.historyId, reset.historyId)
        assert.deepStrictEqual(yield* identity.historyResets(env), [reset, second])
        assert.deepStrictEqual(yield* identity.historyResets(freshEnvironment()), [])
      }))
  })
