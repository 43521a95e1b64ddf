/**
 * Runs the MergeStore contract against every layer (memory, SQLite file), then what only the
 * SQLite layer can show: reopening, the merge migration on a history database made by the
 * current release, corrupt rows, query plans, a writer holding the lock from a second
 * connection, and three processes recording outcomes of one run at once.
 */
import { HistoryStore, type StoreError } from "@forkjoin/history/HistoryStore"
import * as HistoryStoreSqlite from "@forkjoin/history/HistoryStoreSqlite"
import { MergeStore } from "@forkjoin/history/MergeStore"
import { layerSqlite, layerWithHistory } from "@forkjoin/history/MergeStoreSqlite"
import { Sqlite } from "@forkjoin/history/Sqlite"
import { type MergeRunId, ThreadId } from "@forkjoin/schema/Ids"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as esbuild from "esbuild"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { at, conflict, contract, discard, freshEnvironment, freshRunId, mergeRun, outcome } from "./MergeStore.contract.ts"
import { nativeAddons } from "../../../test/support/bundle.ts"
import { draft, raw } from "./fixtures.ts"
import { collapsed, holdUntilContended } from "./lockContention.ts"
import { startWorker } from "./workerProcess.ts"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-merge-store-"))
let n = 0
const freshFile = () => path.join(dir, `db-${++n}`, "history.db")
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

contract("memory", () => MergeStore.layerMemory)
// A fresh file per test, in a directory that does not exist yet (the layer creates it).
contract("sqlite file", () => layerSqlite(freshFile()))

const withStore = <A, E>(file: string, body: Effect.Effect<A, E, MergeStore>) => body.pipe(Effect.provide(layerSqlite(file)))

const failureOf = <A>(effect: Effect.Effect<A, StoreError>) =>
  Effect.flip(effect).pipe(Effect.map((e) => ({ reason: e.reason, message: e.message })))

describe("MergeStoreSqlite", () => {
  it.effect("reopening the file keeps runs, outcomes, conflicts and resolutions; the migration runs once", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const env = freshEnvironment()
      const run = mergeRun({ environmentId: env, children: ["a", "b"] })
      const done = mergeRun({ environmentId: env, createdAt: at(-60), status: "applied" })
      const held = [conflict(run.runId, "a", "src/x.ts"), conflict(run.runId, "a", "src/y.ts", { createdAt: at(2) })]
      const written = yield* withStore(
        file,
        Effect.gen(function*() {
          const store = yield* MergeStore
          yield* store.createRun(done)
          yield* store.createRun(run)
          yield* store.recordOutcome(run.runId, outcome("a", { status: "conflicted_unresolved", conflictPaths: held.map((c) => c.path) }), held, at(5))
          const resolved = yield* store.resolveConflict(held[0]!.conflictId, discard(6))
          const after = yield* store.recordOutcome(run.runId, outcome("b"), [], at(7))
          return { resolved, after }
        })
      )
      for (let round = 0; round < 2; round++) {
        yield* withStore(
          file,
          Effect.gen(function*() {
            const store = yield* MergeStore
            // An interrupted join: still `running`, found by `forkjoin status`, resumable.
            assert.deepStrictEqual(yield* store.listRuns({ environmentId: env, status: "running" }), [written.after])
            assert.deepStrictEqual(yield* store.listRuns({ environmentId: env }), [written.after, done])
            assert.deepStrictEqual(yield* store.getRun(run.runId), Option.some(written.after))
            assert.deepStrictEqual(yield* store.listConflicts({ environmentId: env, runId: run.runId }), [written.resolved, held[1]!])
            assert.deepStrictEqual(yield* store.listConflicts({ environmentId: env, status: "open" }), [held[1]!])
          })
        )
      }
      assert.deepStrictEqual(raw(file, (db) => db.prepare("SELECT component, version FROM schema_components ORDER BY component").all()), [
        { component: "history", version: 5 },
        { component: "merge", version: 2 }
      ])
    }))

  it.effect("migrates a history database made by the current release without touching its tables", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const env = freshEnvironment()
      const records = yield* Effect.gen(function*() {
        const history = yield* HistoryStore
        yield* history.registerThread(ThreadId.make("caller"))
        return yield* history.appendRecords([draft({ environmentId: env }), draft({ environmentId: env })], Date.UTC(2026, 10, 1))
      }).pipe(Effect.provide(HistoryStoreSqlite.layerSqlite(file)))
      const historyState = () =>
        raw(file, (db) => ({
          userVersion: db.pragma("user_version", { simple: true }),
          schema: db.prepare(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE tbl_name NOT LIKE 'merge%' AND tbl_name <> 'schema_components' ORDER BY name"
          ).all(),
          records: db.prepare("SELECT * FROM records ORDER BY rowid").all(),
          threads: db.prepare("SELECT * FROM threads ORDER BY rowid").all(),
          changes: db.prepare("SELECT * FROM record_changes").all()
        }))
      const before = historyState()
      assert.strictEqual(before.userVersion, 5)
      assert.isFalse(raw(file, (db) => db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'merge_runs'").get() !== undefined))

      const run = mergeRun({ environmentId: env, children: ["a"] })
      yield* withStore(file, Effect.flatMap(MergeStore, (store) => store.createRun(run)))
      assert.deepStrictEqual(historyState(), before)
      assert.deepStrictEqual(
        raw(file, (db) => db.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'merge%' ORDER BY name").all()),
        [
          { name: "merge_conflicts" },
          { name: "merge_conflicts_by_environment" },
          { name: "merge_conflicts_by_run" },
          { name: "merge_runs" },
          { name: "merge_runs_by_environment" },
          { name: "merge_runs_by_status" }
        ]
      )

      // The history store of this release still opens the file and keeps appending.
      const after = yield* Effect.gen(function*() {
        const history = yield* HistoryStore
        yield* history.appendRecord(draft({ environmentId: env }), Date.UTC(2026, 10, 2))
        return yield* history.recordsAfter(env, 0, 10)
      }).pipe(Effect.provide(HistoryStoreSqlite.layerSqlite(file)))
      assert.deepStrictEqual(after.slice(0, 2), records)
      assert.deepStrictEqual(after.map((r) => r.commitOrdinal), [1, 2, 3])
      assert.deepStrictEqual(yield* withStore(file, Effect.flatMap(MergeStore, (store) => store.getRun(run.runId))), Option.some(run))
    }))

  it.effect("refuses merge tables newer than it knows, clearly, and leaves them alone", () =>
    Effect.gen(function*() {
      const file = freshFile()
      yield* withStore(file, Effect.void)
      raw(file, (db) => db.prepare("UPDATE schema_components SET version = 7 WHERE component = 'merge'").run())
      const error = yield* Effect.flip(withStore(file, Effect.void))
      assert.strictEqual(error.reason, "Schema")
      assert.include(error.message, "merge schema version 7, newer than this forkjoin supports (2)")
      assert.strictEqual(raw(file, (db) => db.prepare("SELECT version FROM schema_components WHERE component = 'merge'").pluck().get()), 7)
    }))

  it.effect("one connection serves both stores (layerWithHistory)", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const env = freshEnvironment()
      const run = mergeRun({ environmentId: env, children: ["a"] })
      const seen = yield* Effect.gen(function*() {
        const history = yield* HistoryStore
        const store = yield* MergeStore
        const sql = yield* Sqlite
        yield* history.appendRecord(draft({ environmentId: env }), Date.UTC(2026, 10, 1))
        yield* store.createRun(run)
        return yield* sql.run("test", (c) => ({
          runs: c.get<{ n: number }>("SELECT COUNT(*) AS n FROM merge_runs")?.n,
          records: c.get<{ n: number }>("SELECT COUNT(*) AS n FROM records")?.n,
          userVersion: c.get<{ user_version: number }>("PRAGMA user_version")?.user_version
        }))
      }).pipe(Effect.provide(layerWithHistory(file)))
      assert.deepStrictEqual(seen, { runs: 1, records: 1, userVersion: 5 })
    }))

  it.effect("a corrupt row fails with Corrupt, never a bad record, and is not overwritten", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const env = freshEnvironment()
      const run = mergeRun({ environmentId: env, children: ["a"] })
      const other = mergeRun({ environmentId: env, children: ["a"] })
      const held = conflict(run.runId, "a", "src/x.ts")
      const otherHeld = conflict(other.runId, "a", "src/x.ts")
      yield* withStore(
        file,
        Effect.gen(function*() {
          const store = yield* MergeStore
          yield* store.createRun(run)
          yield* store.createRun(other)
          yield* store.recordOutcome(run.runId, outcome("a", { status: "conflicted_unresolved" }), [held], at(5))
          yield* store.recordOutcome(other.runId, outcome("a", { status: "conflicted_unresolved" }), [otherHeld], at(5))
        })
      )
      raw(file, (db) => {
        db.prepare("UPDATE merge_runs SET run_json = ? WHERE run_id = ?").run(JSON.stringify({ runId: run.runId }), run.runId)
        // A well-formed record under another key: decodes, but is not this row's.
        db.prepare("UPDATE merge_conflicts SET conflict_json = (SELECT conflict_json FROM merge_conflicts WHERE conflict_id = ?) WHERE conflict_id = ?")
          .run(otherHeld.conflictId, held.conflictId)
      })
      const reasons = yield* withStore(
        file,
        Effect.gen(function*() {
          const store = yield* MergeStore
          return [
            yield* failureOf(store.getRun(run.runId)),
            yield* failureOf(store.listRuns({ environmentId: env })),
            yield* failureOf(store.recordOutcome(run.runId, outcome("a"), [], at(9))),
            yield* failureOf(store.setRunStatus(run.runId, "failed", at(9))),
            yield* failureOf(store.getConflict(held.conflictId)),
            yield* failureOf(store.listConflicts({ environmentId: env })),
            yield* failureOf(store.resolveConflict(held.conflictId, discard(9)))
          ]
        })
      )
      for (const r of reasons) assert.strictEqual(r.reason, "Corrupt", r.message)
      assert.include(reasons[0]!.message, `merge run ${run.runId} does not decode`)
      assert.include(reasons[4]!.message, `holds the record of ${otherHeld.conflictId}`)
      assert.strictEqual(
        raw(file, (db) => db.prepare("SELECT run_json FROM merge_runs WHERE run_id = ?").pluck().get(run.runId)),
        JSON.stringify({ runId: run.runId })
      )
    }))

  it.effect("listing a run's open conflicts and an environment's runs by status are index searches, no sort", () =>
    Effect.gen(function*() {
      const file = freshFile()
      yield* withStore(file, Effect.void)
      // The store's queries, as written in MergeStoreSqlite.ts.
      const plans = raw(file, (db) =>
        [
          "SELECT conflict_id, conflict_json FROM merge_conflicts WHERE run_id = ? AND status = ? AND +environment_id = ? ORDER BY created_at, conflict_id",
          "SELECT conflict_id, conflict_json FROM merge_conflicts WHERE environment_id = ? AND status = ? ORDER BY created_at, conflict_id",
          "SELECT run_id, run_json FROM merge_runs WHERE environment_id = ? AND status = ? ORDER BY created_at DESC, run_id DESC",
          "SELECT run_id, run_json FROM merge_runs WHERE environment_id = ? ORDER BY created_at DESC, run_id DESC"
        ].map((q) =>
          db.prepare(`EXPLAIN QUERY PLAN ${q}`).all(...Array.from(q.matchAll(/\?/g), () => "x")).map((r) => (r as { detail: string }).detail).join(" | ")
        )
      )
      assert.deepStrictEqual(plans, [
        "SEARCH merge_conflicts USING INDEX merge_conflicts_by_run (run_id=? AND status=?)",
        "SEARCH merge_conflicts USING INDEX merge_conflicts_by_environment (environment_id=? AND status=?)",
        "SEARCH merge_runs USING INDEX merge_runs_by_status (environment_id=? AND status=?)",
        "SEARCH merge_runs USING INDEX merge_runs_by_environment (environment_id=?)"
      ])
    }))

  it.effect("a write lock held past the busy timeout fails with Busy, writes nothing, and the call can be retried", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const run = mergeRun({ environmentId: freshEnvironment(), children: ["a"] })
      const held = conflict(run.runId, "a", "src/x.ts")
      yield* Effect.gen(function*() {
        const store = yield* MergeStore
        yield* store.createRun(run)
        const holder = new Database(file)
        holder.exec("BEGIN IMMEDIATE")
        const error = yield* Effect.flip(store.recordOutcome(run.runId, outcome("a", { status: "conflicted_unresolved" }), [held], at(5)))
        const statusError = yield* Effect.flip(store.setRunStatus(run.runId, "blocked", at(5)))
        holder.exec("ROLLBACK")
        holder.close()
        assert.strictEqual(error.reason, "Busy")
        assert.strictEqual(statusError.reason, "Busy")
        assert.include(error.message, "held the database write lock")
        assert.deepStrictEqual(yield* store.getRun(run.runId), Option.some(run))
        assert.isTrue(Option.isNone(yield* store.getConflict(held.conflictId)))
        const after = yield* store.recordOutcome(run.runId, outcome("a", { status: "conflicted_unresolved" }), [held], at(5))
        assert.strictEqual(after.outcomes[0]!.status, "conflicted_unresolved")
        assert.deepStrictEqual(yield* store.getConflict(held.conflictId), Option.some(held))
      }).pipe(Effect.provide(layerSqlite(file, { busyTimeoutMs: 50 })))
    }))

  it.effect("waiting for another connection's write lock does not block the event loop", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const run = mergeRun({ environmentId: freshEnvironment(), children: ["a"] })
      yield* Effect.gen(function*() {
        const store = yield* MergeStore
        yield* store.createRun(run)
        // The holder is in this process and lets go from the event loop once the write has
        // found the lock busy: a synchronous wait would starve it and fail with Busy.
        const lock = holdUntilContended(file)
        const after = yield* store.recordOutcome(run.runId, outcome("a"), [], at(5)).pipe(
          Effect.ensuring(Effect.sync(lock.dispose))
        )
        assert.strictEqual(after.outcomes[0]!.status, "applied")
        // It waited (busy first), and the release ran on the event loop before the write ended.
        assert.deepStrictEqual(collapsed(lock.seen), ["busy", "released"])
      }).pipe(Effect.provide(layerSqlite(file, { busyTimeoutMs: 5000 })))
    }))

  describe("three processes recording outcomes of one run", () => {
    const root = fileURLToPath(new URL("../../..", import.meta.url))
    const worker = path.join(root, "node_modules", ".cache", "forkjoin-history-test", `mergeWorker-${process.pid}.mjs`)

    // Node 20 cannot run TypeScript: the worker is bundled with esbuild at test time.
    const WORKER_SOURCE = `
      import { layerSqlite } from "@forkjoin/history/MergeStoreSqlite"
      import { MergeStore } from "@forkjoin/history/MergeStore"
      import { ConflictRecord } from "@forkjoin/schema/Conflict"
      import { MergeRunId, TaskId } from "@forkjoin/schema/Ids"
      import { UtcTimestamp } from "@forkjoin/schema/UtcTimestamp"
      import * as Effect from "effect/Effect"
      import * as Schema from "effect/Schema"
      import { waitForGo } from "./fixtures/waitForGo.ts"

      const [file, runText, childrenText] = process.argv.slice(2)
      const runId = MergeRunId.make(runText)
      const children = childrenText.split(",")
      const program = Effect.gen(function*() {
        const store = yield* MergeStore
        process.stdout.write("ready\\n")
        yield* waitForGo
        const errors = []
        for (const child of children) {
          const path = "src/" + child + ".ts"
          const conflict = Schema.decodeUnknownSync(ConflictRecord)({
            schemaVersion: 1, conflictId: runId + "/" + child + ":" + path, runId, childId: child, path,
            reason: "binary", hunks: [], text: "binary content changed on both sides", status: "open",
            createdAt: new Date().toISOString()
          })
          const outcome = { childId: TaskId.make(child), status: "conflicted_unresolved", conflictPaths: [conflict.path] }
          const result = yield* Effect.result(store.recordOutcome(runId, outcome, [conflict], UtcTimestamp.make(new Date().toISOString())))
          if (result._tag === "Failure") errors.push(result.failure.message)
        }
        process.stdout.write(JSON.stringify({ errors }) + "\\n")
      })
      Effect.runPromise(program.pipe(Effect.provide(layerSqlite(file)))).catch((e) => {
        process.stderr.write("worker failed: " + (e instanceof Error ? e.message : String(e)) + "\\n")
        process.exit(1)
      })
    `

    beforeAll(async () => {
      await esbuild.build({
        stdin: {
          contents: WORKER_SOURCE,
          loader: "ts",
          resolveDir: fileURLToPath(new URL(".", import.meta.url)),
          sourcefile: "mergeWorker.ts"
        },
        outfile: worker,
        bundle: true,
        platform: "node",
        format: "esm",
        target: "node20",
        external: nativeAddons,
        logLevel: "error"
      })
    })
    afterAll(() => fs.rmSync(worker, { force: true }))

    const start = (file: string, runId: MergeRunId, children: ReadonlyArray<string>) => startWorker(worker, [file, runId, children.join(",")])

    it("every one of 120 outcomes and conflicts survives; none is lost to a concurrent read-modify-write", async () => {
      // A fresh file: the three processes also race to create and migrate it.
      const file = freshFile()
      const env = freshEnvironment()
      const runId = freshRunId()
      const shares = [0, 1, 2].map((w) => Array.from({ length: 40 }, (_, i) => `w${w}-c${i}`))
      // Interleaved in task order, so every process rewrites outcomes next to the others'.
      const children = Array.from({ length: 40 }, (_, i) => shares.map((s) => s[i]!)).flat()
      const workers = shares.map((share) => start(file, runId, share))
      await Promise.all(workers.map((w) => w.ready))
      const run = mergeRun({ environmentId: env, runId, children })
      await Effect.runPromise(withStore(file, Effect.flatMap(MergeStore, (store) => store.createRun(run))))
      workers.forEach((w) => w.go())
      const results = await Promise.all(workers.map((w) => w.done))
      for (const [i, r] of results.entries()) {
        assert.strictEqual(r.code, 0, `worker ${i} exited ${r.code}: ${r.stderr}`)
        const line = r.stdout.split("\n").find((l) => l.startsWith("{"))
        assert.isDefined(line, `worker ${i} printed no result: ${r.stdout} ${r.stderr}`)
        assert.deepStrictEqual((JSON.parse(line!) as { errors: Array<string> }).errors, [], `worker ${i} errors`)
      }
      const stored = await Effect.runPromise(
        withStore(
          file,
          Effect.gen(function*() {
            const store = yield* MergeStore
            return {
              run: yield* store.getRun(runId),
              conflicts: yield* store.listConflicts({ environmentId: env, runId, status: "open" })
            }
          })
        )
      )
      assert.isTrue(Option.isSome(stored.run))
      const outcomes = Option.getOrThrow(stored.run).outcomes
      assert.deepStrictEqual(outcomes.map((o) => o.childId), children)
      assert.deepStrictEqual(
        outcomes.filter((o) => o.status !== "conflicted_unresolved").map((o) => o.childId),
        [],
        "outcomes lost"
      )
      assert.deepStrictEqual(outcomes.map((o) => o.conflictPaths?.join(",")), children.map((c) => `src/${c}.ts`))
      assert.deepStrictEqual(new Set(stored.conflicts.map((c) => c.childId)), new Set<string | undefined>(children))
    })
  })
})
