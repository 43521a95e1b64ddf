/**
 * The `HistoryRecords` contract: intent-less records share the ordinal sequence; records page by
 * ordinal and by transaction; usage sums applied records.
 * Every store layer must pass it; each test gets a fresh store from `makeLayer` and its own
 * environment ids.
 */
import { type PatchHistoryRecord, TurnId } from "@forkjoin/schema"
import { assert } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { draft, freshEnvironment, planned, turn, txn } from "./fixtures.ts"
import { apply, failureOf, MILLIS, services, type StoreLayer, suite } from "./storeContract.ts"

/** Runs the `HistoryRecords` contract against fresh stores built by `makeLayer`. */
export const contract = (name: string, makeLayer: () => StoreLayer): void =>
  suite(`HistoryRecords contract (${name})`, makeLayer, (test) => {
    test("appendRecord records without an intent and shares the environment's sequence", () =>
      Effect.gen(function*() {
        const { records } = yield* services
        const env = freshEnvironment()
        const first = yield* apply(planned({ environmentId: env }))
        const gap = yield* records.appendRecord(draft({ environmentId: env, outcome: "gap" }), MILLIS + 1)
        const third = yield* apply(planned({ environmentId: env }))
        assert.deepStrictEqual([first.commitOrdinal, gap.commitOrdinal, third.commitOrdinal], [1, 2, 3])
        assert.strictEqual(gap.outcome, "gap")
        assert.strictEqual(gap.committedAt, "2026-11-29T12:34:56.790Z")
        assert.deepStrictEqual(yield* records.recordsAfter(env, 1, 1), [gap])
        const again = yield* failureOf(records.appendRecord(gap, MILLIS))
        assert.strictEqual(again.reason, "Constraint")
      }))

    test("recordsByTransaction returns a transaction's records in commit order", () =>
      Effect.gen(function*() {
        const { records } = yield* services
        const env = freshEnvironment()
        const target = txn("subagent_merge:child-1")
        const a = yield* records.appendRecord(draft({ environmentId: env, transactionId: target }), MILLIS)
        yield* apply(planned({ environmentId: env }))
        const b = yield* apply(planned({ environmentId: env, transactionId: target }))
        yield* apply(planned({ environmentId: freshEnvironment(), transactionId: target }))
        const got = yield* records.recordsByTransaction(env, target)
        assert.deepStrictEqual(got, [a, b])
        assert.deepStrictEqual(yield* records.recordsByTransaction(env, txn("subagent_merge:nobody")), [])
      }))

    test("recordsAfter pages by ordinal with a limit", () =>
      Effect.gen(function*() {
        const { records } = yield* services
        const env = freshEnvironment()
        const applied: Array<PatchHistoryRecord> = []
        for (let i = 0; i < 5; i++) applied.push(yield* apply(planned({ environmentId: env }), MILLIS + i))
        yield* apply(planned({ environmentId: freshEnvironment() }))
        assert.deepStrictEqual(yield* records.recordsAfter(env, 0, 100), applied)
        assert.deepStrictEqual(yield* records.recordsAfter(env, 0, 2), applied.slice(0, 2))
        assert.deepStrictEqual(yield* records.recordsAfter(env, 2, 2), applied.slice(2, 4))
        assert.deepStrictEqual(yield* records.recordsAfter(env, 4, 2), applied.slice(4))
        assert.deepStrictEqual(yield* records.recordsAfter(env, 5, 2), [])
        assert.deepStrictEqual(yield* records.recordsAfter(env, 0, 0), [])
        assert.deepStrictEqual(yield* records.recordsAfter(freshEnvironment(), 0, 10), [])
      }))

    test("usage sums bytes and files written by applied records, per turn and per environment", () =>
      Effect.gen(function*() {
        const { records } = yield* services
        const env = freshEnvironment()
        // turn-1: 4 + 6 bytes over 2 files, then a delete (1 file, 0 bytes).
        yield* apply(planned({
          environmentId: env,
          turnId: "turn-1",
          files: [{ path: "a.txt", before: "a\n", after: "abc\n" }, { path: "b.txt", after: "bbbbb\n" }]
        }))
        yield* apply(planned({ environmentId: env, turnId: "turn-1", files: [{ path: "c.txt", before: "c\n" }] }))
        // turn-2: 3 bytes; and a gap in turn-2 that must not count.
        yield* apply(planned({ environmentId: env, turnId: "turn-2", files: [{ path: "d.txt", after: "dd\n" }] }))
        yield* records.appendRecord(
          draft({ environmentId: env, turnId: "turn-2", outcome: "gap", files: [{ path: "e.txt", after: "eeeeeeee\n" }] }),
          MILLIS
        )
        // Another environment's turn-1 must not count either.
        yield* apply(planned({ environmentId: freshEnvironment(), turnId: "turn-1" }))
        assert.deepStrictEqual(yield* records.usage(env, turn("turn-1")), { bytes: 10, files: 3 })
        assert.deepStrictEqual(yield* records.usage(env, turn("turn-2")), { bytes: 3, files: 1 })
        assert.deepStrictEqual(yield* records.usage(env, undefined), { bytes: 13, files: 4 })
        assert.deepStrictEqual(yield* records.usage(env, TurnId.make("turn-none")), { bytes: 0, files: 0 })
        assert.deepStrictEqual(yield* records.usage(freshEnvironment(), undefined), { bytes: 0, files: 0 })
      }))
  })
