/**
 * The `HistoryStore` contract: every layer must pass this suite. Each test gets a fresh store
 * from `makeLayer` and its own environment ids.
 */
import { HistoryStore, type StoreError } from "@forkjoin/history/HistoryStore"
import { type PatchHistoryRecord, RecordDraft, type Sha256Hash, TurnId } from "@forkjoin/schema"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { bytes, draft, freshEnvironment, planned, sha256, turn, txn } from "./fixtures.ts"

const MILLIS = Date.parse("2026-11-29T12:34:56.789Z")

/** Runs the contract suite against fresh stores built by `makeLayer`. */
export const contract = (name: string, makeLayer: () => Layer.Layer<HistoryStore, unknown>): void => {
  describe(`HistoryStore contract (${name})`, () => {
    const test = (title: string, body: () => Effect.Effect<void, unknown, HistoryStore | Scope.Scope>) =>
      it.effect(title, () => body().pipe(Effect.provide(makeLayer())))

    const failureOf = <A>(effect: Effect.Effect<A, StoreError>) =>
      Effect.flip(effect).pipe(Effect.map((e) => ({ reason: e.reason, message: e.message })))

    /** Opens and commits one planned change; returns its record. */
    const apply = (p: ReturnType<typeof planned>, millis = MILLIS) =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
        yield* store.openIntent(p.intent, p.blobs)
        return yield* store.commitIntent(p.intent.intentId, p.draft, millis)
      })

    test("blobs are stored once per sha256 and round-trip", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
        const a = bytes("alpha\n")
        const b = new Uint8Array([0, 255, 1, 254, 0])
        const empty = new Uint8Array(0)
        const hashes = yield* store.putBlobs([a, b, a, empty])
        assert.deepStrictEqual(hashes, [sha256(a), sha256(b), sha256(a), sha256(empty)])
        assert.deepStrictEqual(yield* store.putBlobs([a]), [sha256(a)])
        assert.deepStrictEqual(yield* store.putBlobs([]), [])
        for (const blob of [a, b, empty]) {
          const got = yield* store.getBlob(sha256(blob))
          assert.isTrue(Option.isSome(got))
          if (Option.isSome(got)) assert.deepStrictEqual(Array.from(got.value), Array.from(blob))
        }
        const missing = yield* store.getBlob(sha256(bytes("never stored")) as Sha256Hash)
        assert.isTrue(Option.isNone(missing))
      }))

    test("openIntent stores the intent and its blobs; openIntents lists open ones oldest first, per environment", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
        const env = freshEnvironment()
        const other = freshEnvironment()
        const later = planned({ environmentId: env }, { createdAt: "2026-11-29T12:00:02.000Z" })
        const earlier = planned({ environmentId: env, files: [{ path: "b.txt", after: "b\n" }] }, {
          createdAt: "2026-11-29T12:00:01.000Z"
        })
        const elsewhere = planned({ environmentId: other })
        yield* store.openIntent(later.intent, later.blobs)
        yield* store.openIntent(earlier.intent, earlier.blobs)
        yield* store.openIntent(elsewhere.intent, elsewhere.blobs)
        const open = yield* store.openIntents(env)
        assert.deepStrictEqual(open, [earlier.intent, later.intent])
        assert.deepStrictEqual((yield* store.openIntents(other)).map((i) => i.intentId), [elsewhere.intent.intentId])
        for (const blob of later.blobs) assert.isTrue(Option.isSome(yield* store.getBlob(sha256(blob))))
      }))

    test("openIntent refuses a duplicate intent id", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
        const p = planned({ environmentId: freshEnvironment() })
        yield* store.openIntent(p.intent, p.blobs)
        const failure = yield* failureOf(store.openIntent(p.intent, p.blobs))
        assert.strictEqual(failure.reason, "Constraint")
      }))

    test("openIntent refuses an intent whose pre/post content is not stored, and stores nothing", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
        const env = freshEnvironment()
        const p = planned({ environmentId: env, files: [{ path: "a.txt", before: "a\n", after: "b\n" }] })
        const failure = yield* failureOf(store.openIntent(p.intent, [bytes("b\n")]))
        assert.strictEqual(failure.reason, "NotFound")
        assert.include(failure.message, sha256(bytes("a\n")))
        assert.deepStrictEqual(yield* store.openIntents(env), [])
        // The given blob was inserted in the same (rolled back) transaction.
        assert.isTrue(Option.isNone(yield* store.getBlob(sha256(bytes("b\n")))))
        // Blobs stored earlier count.
        yield* store.putBlobs([bytes("a\n")])
        yield* store.openIntent(p.intent, [bytes("b\n")])
        assert.strictEqual((yield* store.openIntents(env)).length, 1)
      }))

    test("openIntent refuses a draft that could never become a record, and stores nothing", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
        const env = freshEnvironment()
        const p = planned({ environmentId: env })
        // Valid as a draft, invalid as a record: a gap must have provenance `unknown`.
        const doomed = { ...p.intent, draft: { ...p.draft, outcome: "gap" as const } }
        const failure = yield* failureOf(store.openIntent(doomed, p.blobs))
        assert.strictEqual(failure.reason, "Schema")
        assert.include(failure.message, "can never be committed")
        const mismatched = { ...p.intent, draft: draft({ environmentId: freshEnvironment() }) }
        assert.strictEqual((yield* failureOf(store.openIntent(mismatched, p.blobs))).reason, "Schema")
        assert.deepStrictEqual(yield* store.openIntents(env), [])
      }))

    test("commitIntent assigns ordinals 1, 2, 3 per environment, closes the intent, and the record decodes", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
        const envA = freshEnvironment("a")
        const envB = freshEnvironment("b")
        const ordinals: Array<[string, number]> = []
        for (const env of [envA, envB, envA, envA, envB]) {
          const record = yield* apply(planned({ environmentId: env }))
          ordinals.push([env === envA ? "a" : "b", record.commitOrdinal])
        }
        assert.deepStrictEqual(ordinals, [["a", 1], ["b", 1], ["a", 2], ["a", 3], ["b", 2]])
        assert.deepStrictEqual(yield* store.openIntents(envA), [])
        assert.deepStrictEqual(yield* store.openIntents(envB), [])

        const p = planned({ environmentId: envA })
        yield* store.openIntent(p.intent, p.blobs)
        const record = yield* store.commitIntent(p.intent.intentId, p.draft, MILLIS)
        assert.strictEqual(record.schemaVersion, 1)
        assert.strictEqual(record.commitOrdinal, 4)
        assert.strictEqual(record.committedAt, "2026-11-29T12:34:56.789Z")
        assert.deepStrictEqual({ ...record, commitOrdinal: undefined, committedAt: undefined, schemaVersion: undefined }, {
          ...p.draft,
          commitOrdinal: undefined,
          committedAt: undefined,
          schemaVersion: undefined
        })
        const stored = yield* store.recordsAfter(envA, 3, 10)
        assert.deepStrictEqual(stored, [record])
        assert.deepStrictEqual(Schema.decodeUnknownSync(RecordDraft)(stored[0]), p.draft)
      }))

    test("commitIntent refuses an unknown, a closed, or a mismatched intent", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
        const env = freshEnvironment()
        const p = planned({ environmentId: env })
        assert.strictEqual((yield* failureOf(store.commitIntent("no-such-intent", p.draft, MILLIS))).reason, "NotFound")
        yield* apply(p)
        assert.strictEqual((yield* failureOf(store.commitIntent(p.intent.intentId, p.draft, MILLIS))).reason, "Constraint")

        const q = planned({ environmentId: env })
        yield* store.openIntent(q.intent, q.blobs)
        const foreign = draft({ environmentId: freshEnvironment(), transactionId: q.draft.transactionId })
        assert.strictEqual((yield* failureOf(store.commitIntent(q.intent.intentId, foreign, MILLIS))).reason, "Constraint")
        assert.strictEqual((yield* store.openIntents(env)).length, 1)
        assert.strictEqual((yield* store.recordsAfter(env, 0, 100)).length, 1)
      }))

    test("closeIntent closes as aborted or uncertain without a record", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
        const env = freshEnvironment()
        const aborted = planned({ environmentId: env })
        const uncertain = planned({ environmentId: env })
        const kept = planned({ environmentId: env })
        for (const p of [aborted, uncertain, kept]) yield* store.openIntent(p.intent, p.blobs)
        yield* store.closeIntent(aborted.intent.intentId, "aborted", "rename failed")
        yield* store.closeIntent(uncertain.intent.intentId, "uncertain", "repair: a.txt matches neither")
        assert.deepStrictEqual((yield* store.openIntents(env)).map((i) => i.intentId), [kept.intent.intentId])
        assert.deepStrictEqual(yield* store.recordsAfter(env, 0, 100), [])
        // A closed intent stays closed.
        assert.strictEqual((yield* failureOf(store.closeIntent(aborted.intent.intentId, "uncertain", "again"))).reason, "Constraint")
        assert.strictEqual(
          (yield* failureOf(store.commitIntent(aborted.intent.intentId, aborted.draft, MILLIS))).reason,
          "Constraint"
        )
        assert.strictEqual((yield* failureOf(store.closeIntent("no-such-intent", "aborted", "x"))).reason, "NotFound")
      }))

    test("a draft that violates the record schema is rejected and its intent stays open", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
        const env = freshEnvironment()
        const p = planned({ environmentId: env })
        yield* store.openIntent(p.intent, p.blobs)
        // A gap must have provenance `unknown`: valid as a draft, invalid as a record.
        const invalid: RecordDraft = { ...p.draft, outcome: "gap" }
        const failure = yield* failureOf(store.commitIntent(p.intent.intentId, invalid, MILLIS))
        assert.strictEqual(failure.reason, "Schema")
        assert.include(failure.message, "gap record has provenance unknown")
        assert.strictEqual((yield* failureOf(store.commitIntent(p.intent.intentId, p.draft, Number.NaN))).reason, "Schema")
        assert.deepStrictEqual((yield* store.openIntents(env)).map((i) => i.intentId), [p.intent.intentId])
        assert.deepStrictEqual(yield* store.recordsAfter(env, 0, 100), [])
        assert.strictEqual((yield* failureOf(store.appendRecord(invalid, MILLIS))).reason, "Schema")
        // The failed attempts consumed no ordinal.
        const record = yield* store.commitIntent(p.intent.intentId, p.draft, MILLIS)
        assert.strictEqual(record.commitOrdinal, 1)
      }))

    test("appendRecord records without an intent and shares the environment's sequence", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
        const env = freshEnvironment()
        const first = yield* apply(planned({ environmentId: env }))
        const gap = yield* store.appendRecord(draft({ environmentId: env, outcome: "gap" }), MILLIS + 1)
        const third = yield* apply(planned({ environmentId: env }))
        assert.deepStrictEqual([first.commitOrdinal, gap.commitOrdinal, third.commitOrdinal], [1, 2, 3])
        assert.strictEqual(gap.outcome, "gap")
        assert.strictEqual(gap.committedAt, "2026-11-29T12:34:56.790Z")
        assert.deepStrictEqual(yield* store.recordsAfter(env, 1, 1), [gap])
        const again = yield* failureOf(store.appendRecord(gap, MILLIS))
        assert.strictEqual(again.reason, "Constraint")
      }))

    test("recordsByTransaction returns a transaction's records in commit order", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
        const env = freshEnvironment()
        const target = txn("subagent_merge:child-1")
        const a = yield* store.appendRecord(draft({ environmentId: env, transactionId: target }), MILLIS)
        yield* apply(planned({ environmentId: env }))
        const b = yield* apply(planned({ environmentId: env, transactionId: target }))
        yield* apply(planned({ environmentId: freshEnvironment(), transactionId: target }))
        const got = yield* store.recordsByTransaction(env, target)
        assert.deepStrictEqual(got, [a, b])
        assert.deepStrictEqual(yield* store.recordsByTransaction(env, txn("subagent_merge:nobody")), [])
      }))

    test("recordsAfter pages by ordinal with a limit", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
        const env = freshEnvironment()
        const records: Array<PatchHistoryRecord> = []
        for (let i = 0; i < 5; i++) records.push(yield* apply(planned({ environmentId: env }), MILLIS + i))
        yield* apply(planned({ environmentId: freshEnvironment() }))
        assert.deepStrictEqual(yield* store.recordsAfter(env, 0, 100), records)
        assert.deepStrictEqual(yield* store.recordsAfter(env, 0, 2), records.slice(0, 2))
        assert.deepStrictEqual(yield* store.recordsAfter(env, 2, 2), records.slice(2, 4))
        assert.deepStrictEqual(yield* store.recordsAfter(env, 4, 2), records.slice(4))
        assert.deepStrictEqual(yield* store.recordsAfter(env, 5, 2), [])
        assert.deepStrictEqual(yield* store.recordsAfter(env, 0, 0), [])
        assert.deepStrictEqual(yield* store.recordsAfter(freshEnvironment(), 0, 10), [])
      }))

    test("usage sums bytes and files written by applied records, per turn and per environment", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
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
        yield* store.appendRecord(
          draft({ environmentId: env, turnId: "turn-2", outcome: "gap", files: [{ path: "e.txt", after: "eeeeeeee\n" }] }),
          MILLIS
        )
        // Another environment's turn-1 must not count either.
        yield* apply(planned({ environmentId: freshEnvironment(), turnId: "turn-1" }))
        assert.deepStrictEqual(yield* store.usage(env, turn("turn-1")), { bytes: 10, files: 3 })
        assert.deepStrictEqual(yield* store.usage(env, turn("turn-2")), { bytes: 3, files: 1 })
        assert.deepStrictEqual(yield* store.usage(env, undefined), { bytes: 13, files: 4 })
        assert.deepStrictEqual(yield* store.usage(env, TurnId.make("turn-none")), { bytes: 0, files: 0 })
        assert.deepStrictEqual(yield* store.usage(freshEnvironment(), undefined), { bytes: 0, files: 0 })
      }))

    /** Seeded lines of text, `n` of them. */
    const lines = (seed: number, n: number) =>
      Array.from({ length: n }, (_, i) => `line ${i} of ${seed}: ${(Math.imul(i + 1, 2654435761) ^ seed) >>> 0}\n`).join("")

    test("large blobs round-trip byte-exact; a post stored as an edit of its pre reads back exactly", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
        const before = lines(1, 12_000)
        const after = before.replace("line 6000 of 1", "line six thousand, edited")
        const binary = new Uint8Array(300_000).map((_, i) => (Math.imul(i, 2654435761) >>> 24) ^ (i & 0xff))
        const p = planned({ environmentId: freshEnvironment(), files: [{ path: "big.txt", before, after }] })
        yield* store.openIntent(p.intent, p.blobs)
        yield* store.commitIntent(p.intent.intentId, p.draft, MILLIS)
        yield* store.putBlobs([binary])
        for (const blob of [bytes(before), bytes(after), binary]) {
          const got = yield* store.getBlob(sha256(blob))
          assert.isTrue(Option.isSome(got) && Buffer.from(got.value).equals(Buffer.from(blob)))
        }
      }))

    test("pruneSnapshots drops what only old records use; keeps the latest content, open intents and `keep`", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
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
        yield* store.openIntent(open.intent, open.blobs)
        const recordsBefore = yield* store.recordsAfter(env, 0, 100)

        const report = yield* store.pruneSnapshots({ committedBefore: old + 500, keep: [sha256(bytes(kept))] })
        assert.strictEqual(report.snapshotsPruned, 2)
        // v1's chunks go; v2's stay (v3's chunk deltas are built on them).
        assert.isAtLeast(report.chunksRemoved, 1)
        assert.isAbove(report.bytesFreed, 0)
        assert.isAbove(report.databaseBytesBefore, 0)
        for (const gone of [v1, v2]) {
          const failure = yield* failureOf(store.getBlob(sha256(bytes(gone))))
          assert.strictEqual(failure.reason, "Pruned")
          assert.include(failure.message, sha256(bytes(gone)))
        }
        for (const stays of [v3, kept, intentPre, "b\n", "again\n"]) {
          const got = yield* store.getBlob(sha256(bytes(stays)))
          assert.isTrue(Option.isSome(got) && Buffer.from(got.value).equals(Buffer.from(bytes(stays))), stays.slice(0, 20))
        }
        // Records, hashes and sizes are untouched; pruning again finds nothing more.
        assert.deepStrictEqual(yield* store.recordsAfter(env, 0, 100), recordsBefore)
        assert.strictEqual(recordsBefore.at(-1)!.recordId, recent.recordId)
        assert.strictEqual((yield* store.pruneSnapshots({ committedBefore: old + 500, keep: [sha256(bytes(kept))] })).snapshotsPruned, 0)
        // Storing a pruned content again brings it back.
        yield* store.putBlobs([bytes(v1)])
        const back = yield* store.getBlob(sha256(bytes(v1)))
        assert.isTrue(Option.isSome(back) && Buffer.from(back.value).equals(Buffer.from(bytes(v1))))
      }))
  })
}
