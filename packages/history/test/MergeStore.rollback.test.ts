/**
 * The conflicts a held rollback keeps in the merge store, on both layers: held, listed and
 * resolved beside a join's, replaced when the rollback is asked for again, refused when they
 * are not that rollback's or clash with another id; the record schema's rule for their ids; and,
 * in SQLite, the merge migration that lets a conflict belong to no run (rows of the previous
 * layout kept) and the conflicts surviving a reopen.
 */
import { MergeStore } from "@forkjoin/history/MergeStore"
import { layerSqlite } from "@forkjoin/history/MergeStoreSqlite"
import { ConflictRecord, rollbackConflictIdOf } from "@forkjoin/schema/Conflict"
import { type EnvironmentId, RelativePath, TransactionId } from "@forkjoin/schema/Ids"
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import { at, conflict, freshEnvironment, mergeRun, outcome } from "./MergeStore.contract.ts"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-merge-rollback-"))
let n = 0
const freshFile = () => path.join(dir, `db-${++n}`, "history.db")
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

const TX = TransactionId.make("patch:0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9")
const OTHER = TransactionId.make("patch:1f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9")

const snapshot = (c: string) => ({
  hash: `sha256:${c.repeat(64)}`,
  bytes: 12,
  encoding: "utf8",
  lineEnding: "lf",
  finalNewline: true,
  mode: 0o644
})

/** An open rollback conflict of `tx` at `p`, through the schema as a stored record would be. */
const held = (tx: TransactionId, p: string, fields: Record<string, unknown> = {}): ConflictRecord =>
  Schema.decodeUnknownSync(ConflictRecord)({
    schemaVersion: 1,
    conflictId: `rollback:${tx}:${p}`,
    path: p,
    reason: "overlapping_edits",
    base: snapshot("1"),
    ours: snapshot("2"),
    theirs: snapshot("3"),
    hunks: [{ baseStart: 2, base: ["two\n"], ours: ["TWO\n"], theirs: ["2\n"] }],
    text: "<<<<<<< workspace\nTWO\n||||||| rolled back\ntwo\n=======\n2\n>>>>>>> before\n",
    status: "open",
    createdAt: at(5),
    kind: "rollback",
    transactionId: tx,
    threadId: "lead",
    ...fields
  })

const suite = (name: string, makeLayer: () => Layer.Layer<MergeStore, unknown>) =>
  describe(`MergeStore rollback conflicts (${name})`, () => {
    const run = <A, E>(body: Effect.Effect<A, E, MergeStore>) => body.pipe(Effect.provide(makeLayer()))

    it.effect("holds, lists beside a join's, resolves, and replaces them when the rollback is asked again", () =>
      run(Effect.gen(function*() {
        const store = yield* MergeStore
        const env: EnvironmentId = freshEnvironment()
        const join = mergeRun({ environmentId: env, children: ["a"] })
        yield* store.createRun(join)
        const joinConflict = conflict(join.runId, "a", "src/x.ts")
        yield* store.recordOutcome(join.runId, outcome("a", { status: "conflicted_unresolved" }), [joinConflict], at(2))
        const first = [held(TX, "f.txt"), held(TX, "g.txt")]
        yield* store.holdRollback(env, TX, first)
        yield* store.holdRollback(env, OTHER, [held(OTHER, "f.txt")])
        assert.deepStrictEqual(yield* store.getConflict(first[0]!.conflictId), Option.some(first[0]!))
        assert.deepStrictEqual((yield* store.listConflicts({ environmentId: env })).map((c) => c.conflictId), [
          joinConflict.conflictId,
          `rollback:${TX}:f.txt`,
          `rollback:${TX}:g.txt`,
          `rollback:${OTHER}:f.txt`
        ])
        assert.deepStrictEqual(yield* store.listConflicts({ environmentId: env, rollbackOf: TX }), first)
        assert.deepStrictEqual(yield* store.listConflicts({ environmentId: env, runId: join.runId }), [joinConflict])
        const resolved = yield* store.resolveConflict(first[0]!.conflictId, { kind: "discard", resolvedAt: at(9) })
        assert.strictEqual(resolved.status, "resolved")
        assert.deepStrictEqual(
          (yield* store.listConflicts({ environmentId: env, rollbackOf: TX, status: "open" })).map((c) => c.path),
          ["g.txt"]
        )
        // Asked again: the held set is replaced whole, resolved ones included; others' stay.
        yield* store.holdRollback(env, TX, [held(TX, "h.txt")])
        assert.deepStrictEqual((yield* store.listConflicts({ environmentId: env, rollbackOf: TX })).map((c) => c.path), ["h.txt"])
        yield* store.holdRollback(env, TX, [])
        assert.deepStrictEqual(yield* store.listConflicts({ environmentId: env, rollbackOf: TX }), [])
        assert.deepStrictEqual((yield* store.listConflicts({ environmentId: env })).length, 2)
      })))

    it.effect("refuses a conflict that is not this rollback's, and an id already held by another; nothing is written", () =>
      run(Effect.gen(function*() {
        const store = yield* MergeStore
        const env = freshEnvironment()
        const other = freshEnvironment()
        yield* store.holdRollback(other, TX, [held(TX, "f.txt")])
        const foreign = yield* Effect.flip(store.holdRollback(env, TX, [held(TX, "a.txt"), held(OTHER, "b.txt")]))
        assert.strictEqual(foreign.reason, "Constraint")
        const join = mergeRun({ environmentId: env, children: ["a"] })
        yield* store.createRun(join)
        const asJoin = yield* Effect.flip(store.holdRollback(env, TX, [held(TX, "a.txt"), conflict(join.runId, "a", "x")]))
        assert.strictEqual(asJoin.reason, "Constraint")
        // The same id held in another workspace's database rows is not this workspace's to replace.
        const clash = yield* Effect.flip(store.holdRollback(env, TX, [held(TX, "f.txt")]))
        assert.strictEqual(clash.reason, "Constraint")
        assert.deepStrictEqual(yield* store.listConflicts({ environmentId: env }), [])
        assert.strictEqual((yield* store.listConflicts({ environmentId: other, rollbackOf: TX })).length, 1)
      })))
  })

suite("memory", () => MergeStore.layerMemory)
suite("sqlite file", () => layerSqlite(freshFile()))

describe("a rollback's ConflictRecord", () => {
  it("has the id rollback:<transaction-id>:<path>, names its transaction and thread and no run", () => {
    assert.strictEqual(rollbackConflictIdOf(TX, RelativePath.make("a/b.txt")), `rollback:${TX}:a/b.txt`)
    assert.strictEqual(held(TX, "f.txt").kind, "rollback")
    const refused = (fields: Record<string, unknown>) => assert.throws(() => held(TX, "f.txt", fields))
    refused({ conflictId: `rollback:${OTHER}:f.txt` })
    refused({ conflictId: `run/child:f.txt` })
    refused({ transactionId: undefined })
    refused({ threadId: undefined })
    refused({ runId: "run-1", childId: "a" })
  })

  it("a join's record decodes without a kind (as stored before), and may not carry a rollback's fields", () => {
    const join = conflict(mergeRun({ environmentId: freshEnvironment() }).runId, "a", "x")
    assert.isUndefined(join.kind)
    const encoded = Schema.encodeSync(ConflictRecord)(join)
    assert.deepStrictEqual(Schema.decodeUnknownSync(ConflictRecord)({ ...encoded, kind: "join" }).kind, "join")
    assert.throws(() => Schema.decodeUnknownSync(ConflictRecord)({ ...encoded, transactionId: TX }))
    assert.throws(() => Schema.decodeUnknownSync(ConflictRecord)({ ...encoded, kind: "rollback" }))
  })
})

describe("MergeStoreSqlite: conflicts of no run", () => {
  it.effect("the merge migration keeps a previous layout's conflicts, and held rollbacks survive a reopen", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const env = freshEnvironment()
      const join = mergeRun({ environmentId: env, children: ["a"] })
      const joinConflict = conflict(join.runId, "a", "src/x.ts")
      yield* Effect.gen(function*() {
        const store = yield* MergeStore
        yield* store.createRun(join)
        yield* store.recordOutcome(join.runId, outcome("a", { status: "conflicted_unresolved" }), [joinConflict], at(2))
      }).pipe(Effect.provide(layerSqlite(file)))
      // Back to the first layout, as a database of the previous release has it.
      const db = new Database(file)
      db.exec(`
        CREATE TABLE old_conflicts AS SELECT * FROM merge_conflicts;
        DROP TABLE merge_conflicts;
        CREATE TABLE merge_conflicts (
          conflict_id TEXT PRIMARY KEY, run_id TEXT NOT NULL REFERENCES merge_runs (run_id), environment_id TEXT NOT NULL,
          child_id TEXT NOT NULL, status TEXT NOT NULL, created_at TEXT NOT NULL, conflict_json TEXT NOT NULL
        );
        INSERT INTO merge_conflicts SELECT * FROM old_conflicts;
        DROP TABLE old_conflicts;
        UPDATE schema_components SET version = 1 WHERE component = 'merge';
      `)
      db.close()
      yield* MergeStore.use((store) => store.holdRollback(env, TX, [held(TX, "f.txt")])).pipe(Effect.provide(layerSqlite(file)))
      const reopened = yield* MergeStore.use((store) => store.listConflicts({ environmentId: env })).pipe(Effect.provide(layerSqlite(file)))
      assert.deepStrictEqual(reopened, [joinConflict, held(TX, "f.txt")])
      const check = new Database(file)
      try {
        assert.deepStrictEqual(check.prepare("SELECT version FROM schema_components WHERE component = 'merge'").pluck().get(), 2)
        assert.deepStrictEqual(check.prepare("SELECT run_id, child_id FROM merge_conflicts ORDER BY created_at").all(), [
          { run_id: join.runId, child_id: "a" },
          { run_id: null, child_id: null }
        ])
      } finally {
        check.close()
      }
    }))
})
