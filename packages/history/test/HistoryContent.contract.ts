/**
 * The `HistoryContent` contract: blobs round-trip once per sha256, large and edited ones byte-exact,
 * and retention drops only what old records alone use.
 * Every store layer must pass it; each test gets a fresh store from `makeLayer` and its own
 * environment ids.
 */
import type { Sha256Hash } from "@forkjoin/schema"
import { assert } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { bytes, freshEnvironment, planned, sha256 } from "./fixtures.ts"
import { apply, failureOf, lines, MILLIS, services, type StoreLayer, suite } from "./storeContract.ts"

/** Runs the `HistoryContent` contract against fresh stores built by `makeLayer`. */
export const contract = (name: string, makeLayer: () => StoreLayer): void =>
  suite(`HistoryContent contract (${name})`, makeLayer, (test) => {
    test("blobs are stored once per sha256 and round-trip", () =>
      Effect.gen(function*() {
        const { content } = yield* services
        const a = bytes("alpha\n")
        const b = new Uint8Array([0, 255, 1, 254, 0])
        const empty = new Uint8Array(0)
        const hashes = yield* content.putBlobs([a, b, a, empty])
        assert.deepStrictEqual(hashes, [sha256(a), sha256(b), sha256(a), sha256(empty)])
        assert.deepStrictEqual(yield* content.putBlobs([a]), [sha256(a)])
        assert.deepStrictEqual(yield* content.putBlobs([]), [])
        for (const blob of [a, b, empty]) {
          const got = yield* content.getBlob(sha256(blob))
          assert.isTrue(Option.isSome(got))
          if (Option.isSome(got)) assert.deepStrictEqual(Array.from(got.value), Array.from(blob))
        }
        const missing = yield* content.getBlob(sha256(bytes("never stored")) as Sha256Hash)
        assert.isTrue(Option.isNone(missing))
      }))

    test("large blobs round-trip byte-exact; a post stored as an edit of its pre reads back exactly", () =>
      Effect.gen(function*() {
        const { content, journal } = yield* services
        const before = lines(1, 12_000)
        const after = before.replace("line 6000 of 1", "line six thousand, edited")
        const binary = new Uint8Array(300_000).map((_, i) => (Math.imul(i, 2654435761) >>> 24) ^ (i & 0xff))
        const p = planned({ environmentId: freshEnvironment(), files: [{ path: "big.txt", before, after }] })
        yield* journal.openIntent(p.intent, p.blobs)
        yield* journal.commitIntent(p.intent.intentId, p.draft, MILLIS)
        yield* content.putBlobs([binary])
        for (const blob of [bytes(before), bytes(after), binary]) {
          const got = yield* content.getBlob(sha256(blob))
          assert.isTrue(Option.isSome(got) && Buffer.from(got.value).equals(Buffer.from(blob)))
        }
      }))

    test("pruneSnapshots drops what only old records use; keeps the latest content, open intents and `keep`", () =>
      Effect.gen(function*() {
        const { content, journal, records } = yield* services
        const env = freshEnvironment()
        const [v1, v2] = [lines(1, 2_000), lines(2, 2_000)]
        const v3 = v2.replace("line 1000 of 2", "line 1000, edited")
        const kept = lines(3, 50)
        const intentPre = lines(4, 50)
        const old = MILLIS
        // Old records: a.txt added, rewritten, edited; k.txt added (kept by request); i.txt added then deleted.
        yield* apply(planned({ environmentId: env, files: [{ path: "a.txt", after: v1 }] }), old)
        yield* apply(planned({ environmentId: env, files: [{ path: "a.txt", before: v1, after: v2 }] }), old + 1)
        yield* apply(planned({ environmentId: env, files: [{ path: "a.txt", before: v2, after: v3 }] }), old + 2)
        yield* apply(planned({ environmentId: env, files: [{ path: "k.txt", after: kept }, { path: "i.txt", after: intentPre }] }), old + 3)
        yield* apply(planned({ environmentId: env, files: [{ path: "k.txt", before: kept }, { path: "i.txt", before: intentPre }] }), old + 4)
        // A newer record, and an open intent whose pre is i.txt's old content.
        const recent = yield* apply(planned({ environmentId: env, files: [{ path: "b.txt", after: "b\n" }] }), old + 1_000)
        const open = planned({ environmentId: env, files: [{ path: "i.txt", before: intentPre, after: "again\n" }] })
        yield* journal.openIntent(open.intent, open.blobs)
        const recordsBefore = yield* records.recordsAfter(env, 0, 100)

        const report = yield* content.pruneSnapshots({ committedBefore: old + 500, keep: [sha256(bytes(kept))] })
        assert.strictEqual(report.snapshotsPruned, 2)
        // v1's chunks go; v2's stay (v3's chunk deltas are built on them).
        assert.isAtLeast(report.chunksRemoved, 1)
        assert.isAbove(report.bytesFreed, 0)
        assert.isAbove(report.databaseBytesBefore, 0)
        for (const gone of [v1, v2]) {
          const failure = yield* failureOf(content.getBlob(sha256(bytes(gone))))
          assert.strictEqual(failure.reason, "Pruned")
          assert.include(failure.message, sha256(bytes(gone)))
        }
        for (const stays of [v3, kept, intentPre, "b\n", "again\n"]) {
          const got = yield* content.getBlob(sha256(bytes(stays)))
          assert.isTrue(Option.isSome(got) && Buffer.from(got.value).equals(Buffer.from(bytes(stays))), stays.slice(0, 20))
        }
        // Records, hashes and sizes are untouched; pruning again finds nothing more.
        assert.deepStrictEqual(yield* records.recordsAfter(env, 0, 100), recordsBefore)
        assert.strictEqual(recordsBefore.at(-1)!.recordId, recent.recordId)
        assert.strictEqual((yield* content.pruneSnapshots({ committedBefore: old + 500, keep: [sha256(bytes(kept))] })).snapshotsPruned, 0)
        // Storing a pruned content again brings it back.
        yield* content.putBlobs([bytes(v1)])
        const back = yield* content.getBlob(sha256(bytes(v1)))
        assert.isTrue(Option.isSome(back) && Buffer.from(back.value).equals(Buffer.from(bytes(v1))))
      }))
  })
