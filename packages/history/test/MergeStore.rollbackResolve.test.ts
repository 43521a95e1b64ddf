/**
 * `resolveRollbackConflict` on both layers: the resolution and the count of the rollback's
 * conflicts still open are decided in one transaction, so the one closing the last names the
 * transaction that applies the rollback and the others do not; another rollback's or
 * workspace's open conflicts are not counted; a resolved, unknown or join conflict is refused and
 * nothing is written.
 */
import { MergeStore } from "@forkjoin/history/MergeStore"
import { layerSqlite } from "@forkjoin/history/MergeStoreSqlite"
import { ConflictRecord } from "@forkjoin/schema/Conflict"
import { ConflictId, TransactionId } from "@forkjoin/schema/Ids"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import { at, conflict, discard, freshEnvironment, mergeRun, outcome } from "./MergeStore.contract.ts"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-merge-rollback-resolve-"))
let n = 0
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

const TX = TransactionId.make("patch:0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9")
const OTHER = TransactionId.make("patch:1f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9")
const CLOSING = TransactionId.make(`rollback:${TX}`)

const held = (tx: TransactionId, p: string): ConflictRecord =>
  Schema.decodeUnknownSync(ConflictRecord)({
    schemaVersion: 1,
    conflictId: `rollback:${tx}:${p}`,
    path: p,
    reason: "binary",
    hunks: [],
    text: "binary content changed on both sides",
    status: "open",
    createdAt: at(5),
    kind: "rollback",
    transactionId: tx,
    threadId: "lead"
  })

const suite = (name: string, makeLayer: () => Layer.Layer<MergeStore, unknown>) =>
  describe(`MergeStore.resolveRollbackConflict (${name})`, () => {
    const run = <A, E>(body: Effect.Effect<A, E, MergeStore>) => body.pipe(Effect.provide(makeLayer()))

    it.effect("counts the rollback's conflicts left open; the last one names the closing transaction", () =>
      run(Effect.gen(function*() {
        const store = yield* MergeStore
        const env = freshEnvironment()
        yield* store.holdRollback(env, TX, [held(TX, "a"), held(TX, "b"), held(TX, "c")])
        // Open conflicts of another rollback, or of another workspace, do not count.
        yield* store.holdRollback(env, OTHER, [held(OTHER, "a")])
        yield* store.holdRollback(freshEnvironment(), OTHER, [held(OTHER, "z")])
        const first = yield* store.resolveRollbackConflict(held(TX, "a").conflictId, discard(6), CLOSING)
        assert.strictEqual(first.open, 2)
        assert.deepStrictEqual(first.conflict.resolution, discard(6))
        assert.strictEqual((yield* store.resolveRollbackConflict(held(TX, "c").conflictId, { kind: "apply", resolvedAt: at(7) }, CLOSING)).open, 1)
        const last = yield* store.resolveRollbackConflict(held(TX, "b").conflictId, { kind: "apply", resolvedAt: at(8) }, CLOSING)
        assert.strictEqual(last.open, 0)
        assert.deepStrictEqual(last.conflict.resolution, { kind: "apply", transactionId: CLOSING, resolvedAt: at(8) })
        assert.deepStrictEqual(yield* store.getConflict(last.conflict.conflictId), Option.some(last.conflict))
        assert.deepStrictEqual((yield* store.listConflicts({ environmentId: env, status: "open" })).map((c) => c.conflictId), [held(OTHER, "a").conflictId])
      })))

    it.effect("refuses a resolved, an unknown and a join's conflict, writing nothing", () =>
      run(Effect.gen(function*() {
        const store = yield* MergeStore
        const env = freshEnvironment()
        yield* store.holdRollback(env, TX, [held(TX, "a"), held(TX, "b")])
        yield* store.resolveRollbackConflict(held(TX, "a").conflictId, discard(6), CLOSING)
        const again = yield* Effect.flip(store.resolveRollbackConflict(held(TX, "a").conflictId, { kind: "apply", resolvedAt: at(7) }, CLOSING))
        assert.strictEqual(again.reason, "Constraint")
        assert.deepStrictEqual(Option.getOrUndefined(yield* store.getConflict(held(TX, "a").conflictId))?.resolution, discard(6))
        const unknown = yield* Effect.flip(store.resolveRollbackConflict(ConflictId.make(`rollback:${TX}:zzz`), discard(6), CLOSING))
        assert.strictEqual(unknown.reason, "NotFound")
        const join = mergeRun({ environmentId: env, children: ["a"] })
        yield* store.createRun(join)
        const joinConflict = conflict(join.runId, "a", "x")
        yield* store.recordOutcome(join.runId, outcome("a", { status: "conflicted_unresolved" }), [joinConflict], at(2))
        const notRollback = yield* Effect.flip(store.resolveRollbackConflict(joinConflict.conflictId, discard(6), CLOSING))
        assert.strictEqual(notRollback.reason, "Constraint")
        assert.deepStrictEqual(yield* store.getConflict(joinConflict.conflictId), Option.some(joinConflict))
      })))
  })

suite("memory", () => MergeStore.layerMemory)
suite("sqlite file", () => layerSqlite(path.join(dir, `db-${++n}`, "history.db")))
