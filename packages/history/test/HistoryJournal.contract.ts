/**
 * The `HistoryJournal` contract: intents open with their blobs, commit with ordinals, close
 * without records, and refuse what could never become a record.
 * Every store layer must pass it; each test gets a fresh store from `makeLayer` and its own
 * environment ids.
 */
import { RecordDraft } from "@forkjoin/schema"
import { assert } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { bytes, draft, freshEnvironment, planned, sha256 } from "./fixtures.ts"
import { apply, failureOf, MILLIS, services, type StoreLayer, suite } from "./storeContract.ts"

/** Runs the `HistoryJournal` contract against fresh stores built by `makeLayer`. */
export const contract = (name: string, makeLayer: () => StoreLayer): void =>
  suite(`HistoryJournal contract (${name})`, makeLayer, (test) => {
    test("openIntent stores the intent and its blobs; openIntents lists open ones oldest first, per environment", () =>
      Effect.gen(function*() {
        const { content, journal } = yield* services
        const env = freshEnvironment()
        const other = freshEnvironment()
        const later = planned({ environmentId: env }, { createdAt: "2026-11-29T12:00:02.000Z" })
        const earlier = planned({ environmentId: env, files: [{ path: "b.txt", after: "b\n" }] }, {
          createdAt: "2026-11-29T12:00:01.000Z"
        })
        const elsewhere = planned({ environmentId: other })
        yield* journal.openIntent(later.intent, later.blobs)
        yield* journal.openIntent(earlier.intent, earlier.blobs)
        yield* journal.openIntent(elsewhere.intent, elsewhere.blobs)
        const open = yield* journal.openIntents(env)
        assert.deepStrictEqual(open, [earlier.intent, later.intent])
        assert.deepStrictEqual((yield* journal.openIntents(other)).map((i) => i.intentId), [elsewhere.intent.intentId])
        for (const blob of later.blobs) assert.isTrue(Option.isSome(yield* content.getBlob(sha256(blob))))
      }))

    test("openIntent refuses a duplicate intent id", () =>
      Effect.gen(function*() {
        const { journal } = yield* services
        const p = planned({ environmentId: freshEnvironment() })
        yield* journal.openIntent(p.intent, p.blobs)
        const failure = yield* failureOf(journal.openIntent(p.intent, p.blobs))
        assert.strictEqual(failure.reason, "Constraint")
      }))

    test("openIntent refuses an intent whose pre/post content is not stored, and stores nothing", () =>
      Effect.gen(function*() {
        const { content, journal } = yield* services
        const env = freshEnvironment()
        const p = planned({ environmentId: env, files: [{ path: "a.txt", before: "a\n", after: "b\n" }] })
        const failure = yield* failureOf(journal.openIntent(p.intent, [bytes("b\n")]))
        assert.strictEqual(failure.reason, "NotFound")
        assert.include(failure.message, sha256(bytes("a\n")))
        assert.deepStrictEqual(yield* journal.openIntents(env), [])
        // The given blob was inserted in the same (rolled back) transaction.
        assert.isTrue(Option.isNone(yield* content.getBlob(sha256(bytes("b\n")))))
        // Blobs stored earlier count.
        yield* content.putBlobs([bytes("a\n")])
        yield* journal.openIntent(p.intent, [bytes("b\n")])
        assert.strictEqual((yield* journal.openIntents(env)).length, 1)
      }))

    test("openIntent refuses a draft that could never become a record, and stores nothing", () =>
      Effect.gen(function*() {
        const { journal } = yield* services
        const env = freshEnvironment()
        const p = planned({ environmentId: env })
        // Valid as a draft, invalid as a record: a gap must have provenance `unknown`.
        const doomed = { ...p.intent, draft: { ...p.draft, outcome: "gap" as const } }
        const failure = yield* failureOf(journal.openIntent(doomed, p.blobs))
        assert.strictEqual(failure.reason, "Schema")
        assert.include(failure.message, "can never be committed")
        const mismatched = { ...p.intent, draft: draft({ environmentId: freshEnvironment() }) }
        assert.strictEqual((yield* failureOf(journal.openIntent(mismatched, p.blobs))).reason, "Schema")
        assert.deepStrictEqual(yield* journal.openIntents(env), [])
      }))

    test("commitIntent assigns ordinals 1, 2, 3 per environment, closes the intent, and the record decodes", () =>
      Effect.gen(function*() {
        const { journal, records } = yield* services
        const envA = freshEnvironment("a")
        const envB = freshEnvironment("b")
        const ordinals: Array<[string, number]> = []
        for (const env of [envA, envB, envA, envA, envB]) {
          const record = yield* apply(planned({ environmentId: env }))
          ordinals.push([env === envA ? "a" : "b", record.commitOrdinal])
        }
        assert.deepStrictEqual(ordinals, [["a", 1], ["b", 1], ["a", 2], ["a", 3], ["b", 2]])
        assert.deepStrictEqual(yield* journal.openIntents(envA), [])
        assert.deepStrictEqual(yield* journal.openIntents(envB), [])

        const p = planned({ environmentId: envA })
        yield* journal.openIntent(p.intent, p.blobs)
        const record = yield* journal.commitIntent(p.intent.intentId, p.draft, MILLIS)
        assert.strictEqual(record.schemaVersion, 1)
        assert.strictEqual(record.commitOrdinal, 4)
        assert.strictEqual(record.committedAt, "2026-11-29T12:34:56.789Z")
        assert.deepStrictEqual({ ...record, commitOrdinal: undefined, committedAt: undefined, schemaVersion: undefined }, {
          ...p.draft,
          commitOrdinal: undefined,
          committedAt: undefined,
          schemaVersion: undefined
        })
        const stored = yield* records.recordsAfter(envA, 3, 10)
        assert.deepStrictEqual(stored, [record])
        assert.deepStrictEqual(Schema.decodeUnknownSync(RecordDraft)(stored[0]), p.draft)
      }))

    test("commitIntent refuses an unknown, a closed, or a mismatched intent", () =>
      Effect.gen(function*() {
        const { journal, records } = yield* services
        const env = freshEnvironment()
        const p = planned({ environmentId: env })
        assert.strictEqual((yield* failureOf(journal.commitIntent("no-such-intent", p.draft, MILLIS))).reason, "NotFound")
        yield* apply(p)
        assert.strictEqual((yield* failureOf(journal.commitIntent(p.intent.intentId, p.draft, MILLIS))).reason, "Constraint")

        const q = planned({ environmentId: env })
        yield* journal.openIntent(q.intent, q.blobs)
        const foreign = draft({ environmentId: freshEnvironment(), transactionId: q.draft.transactionId })
        assert.strictEqual((yield* failureOf(journal.commitIntent(q.intent.intentId, foreign, MILLIS))).reason, "Constraint")
        assert.strictEqual((yield* journal.openIntents(env)).length, 1)
        assert.strictEqual((yield* records.recordsAfter(env, 0, 100)).length, 1)
      }))

    test("closeIntent closes as aborted or uncertain without a record", () =>
      Effect.gen(function*() {
        const { journal, records } = yield* services
        const env = freshEnvironment()
        const aborted = planned({ environmentId: env })
        const uncertain = planned({ environmentId: env })
        const kept = planned({ environmentId: env })
        for (const p of [aborted, uncertain, kept]) yield* journal.openIntent(p.intent, p.blobs)
        yield* journal.closeIntent(aborted.intent.intentId, "aborted", "rename failed")
        yield* journal.closeIntent(uncertain.intent.intentId, "uncertain", "repair: a.txt matches neither")
        assert.deepStrictEqual((yield* journal.openIntents(env)).map((i) => i.intentId), [kept.intent.intentId])
        assert.deepStrictEqual(yield* records.recordsAfter(env, 0, 100), [])
        // A closed intent stays closed.
        assert.strictEqual((yield* failureOf(journal.closeIntent(aborted.intent.intentId, "uncertain", "again"))).reason, "Constraint")
        assert.strictEqual(
          (yield* failureOf(journal.commitIntent(aborted.intent.intentId, aborted.draft, MILLIS))).reason,
          "Constraint"
        )
        assert.strictEqual((yield* failureOf(journal.closeIntent("no-such-intent", "aborted", "x"))).reason, "NotFound")
      }))

    test("a draft that violates the record schema is rejected and its intent stays open", () =>
      Effect.gen(function*() {
        const { journal, records } = yield* services
        const env = freshEnvironment()
        const p = planned({ environmentId: env })
        yield* journal.openIntent(p.intent, p.blobs)
        // A gap must have provenance `unknown`: valid as a draft, invalid as a record.
        const invalid: RecordDraft = { ...p.draft, outcome: "gap" }
        const failure = yield* failureOf(journal.commitIntent(p.intent.intentId, invalid, MILLIS))
        assert.strictEqual(failure.reason, "Schema")
        assert.include(failure.message, "gap record has provenance unknown")
        assert.strictEqual((yield* failureOf(journal.commitIntent(p.intent.intentId, p.draft, Number.NaN))).reason, "Schema")
        assert.deepStrictEqual((yield* journal.openIntents(env)).map((i) => i.intentId), [p.intent.intentId])
        assert.deepStrictEqual(yield* records.recordsAfter(env, 0, 100), [])
        assert.strictEqual((yield* failureOf(records.appendRecord(invalid, MILLIS))).reason, "Schema")
        // The failed attempts consumed no ordinal.
        const record = yield* journal.commitIntent(p.intent.intentId, p.draft, MILLIS)
        assert.strictEqual(record.commitOrdinal, 1)
      }))
  })
