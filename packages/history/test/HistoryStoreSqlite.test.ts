/**
 * What only a SQLite file can show: the connection policy, reopening, schema versions,
 * corrupt rows, lock contention in one process, and four processes committing at once.
 */
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { layerSqlite, sqliteOptions } from "@forkjoin/history/HistoryStoreSqlite"
import * as SnapshotStore from "@forkjoin/history/SnapshotStore"
import { Sqlite } from "@forkjoin/history/Sqlite"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { bytes, freshEnvironment, planned, raw, sha256 } from "./fixtures.ts"
import { collapsed, holdUntilContended } from "./lockContention.ts"
import { startWorker, type Worker } from "./workerProcess.ts"
import { bundle } from "../../../test/support/bundle.ts"
import { text } from "./snapshotBytes.ts"

const MILLIS = Date.parse("2026-11-29T12:00:00.000Z")
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-history-sqlite-"))
let n = 0
const freshFile = () => path.join(dir, `db-${++n}`, "history.db")
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

const withStore = <A, E>(file: string, body: Effect.Effect<A, E, HistoryStore>) =>
  body.pipe(Effect.provide(layerSqlite(file)))

describe("HistoryStoreSqlite", () => {
  it.effect("applies the connection policy: WAL, synchronous=FULL, busy_timeout, foreign_keys", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const pragmas = yield* Effect.gen(function*() {
        const sql = yield* Sqlite
        return yield* sql.run("test", (c) => ({
          journal: c.get<{ journal_mode: string }>("PRAGMA journal_mode")?.journal_mode,
          synchronous: c.get<{ synchronous: number }>("PRAGMA synchronous")?.synchronous,
          busy: c.get<{ timeout: number }>("PRAGMA busy_timeout")?.timeout,
          foreignKeys: c.get<{ foreign_keys: number }>("PRAGMA foreign_keys")?.foreign_keys
        }))
      }).pipe(Effect.provide(Sqlite.layer(file, { busyTimeoutMs: 1234 })))
      // busy_timeout is only the synchronous slice (20 ms); the rest of the 1234 ms is waited
      // asynchronously (see the event-loop test below).
      assert.deepStrictEqual(pragmas, { journal: "wal", synchronous: 2, busy: 20, foreignKeys: 1 })
    }))

  it.effect("a non-durable transaction commits at synchronous=NORMAL and restores FULL", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const seen = yield* Effect.gen(function*() {
        const sql = yield* Sqlite
        const inside = yield* sql.transaction("test", (c) => c.get<{ synchronous: number }>("PRAGMA synchronous")?.synchronous, {
          durable: false
        })
        const durable = yield* sql.transaction("test", (c) => c.get<{ synchronous: number }>("PRAGMA synchronous")?.synchronous)
        const after = yield* sql.run("test", (c) => c.get<{ synchronous: number }>("PRAGMA synchronous")?.synchronous)
        const failing = yield* Effect.exit(sql.transaction("test", () => {
          throw new Error("boom")
        }, { durable: false }))
        const afterFailure = yield* sql.run("test", (c) => c.get<{ synchronous: number }>("PRAGMA synchronous")?.synchronous)
        return { inside, durable, after, failed: failing._tag === "Failure", afterFailure }
      }).pipe(Effect.provide(Sqlite.layer(file)))
      assert.deepStrictEqual(seen, { inside: 1, durable: 2, after: 2, failed: true, afterFailure: 2 })
    }))

  it.effect("stores each blob once", () =>
    Effect.gen(function*() {
      const file = freshFile()
      yield* withStore(
        file,
        Effect.gen(function*() {
          const store = yield* HistoryStore
          yield* store.putBlobs([bytes("x"), bytes("x"), bytes("y")])
          yield* store.putBlobs([bytes("x")])
          const p = planned({ environmentId: freshEnvironment(), files: [{ path: "a", before: "x", after: "y" }] })
          yield* store.openIntent(p.intent, p.blobs)
        })
      )
      assert.deepStrictEqual(raw(file, (db) => db.prepare("SELECT COUNT(*) AS n FROM snapshots").get()), { n: 2 })
      assert.deepStrictEqual(raw(file, (db) => db.prepare("SELECT COUNT(*) AS n FROM blobs").get()), { n: 0 })
    }))

  it.effect("large blobs are prepared before the write lock: the same rows as storing them one by one, each edit a patch of its base", () =>
    Effect.gen(function*() {
      const decoder = new TextDecoder()
      const pre = decoder.decode(text(21, 700_000))
      const post = `${pre.slice(0, 350_000)}one changed line\n${pre.slice(350_020)}`
      const added = decoder.decode(text(22, 400_000))
      const p = planned({ environmentId: freshEnvironment(), files: [{ path: "a.ts", before: pre, after: post }, { path: "b.ts", after: added }] })
      const file = freshFile()
      yield* withStore(file, Effect.flatMap(HistoryStore, (store) => store.openIntent(p.intent, p.blobs)))
      const one = freshFile()
      yield* Effect.gen(function*() {
        const sql = yield* Sqlite
        yield* sql.transaction("test", (c) => {
          SnapshotStore.put(c, bytes(pre), sha256(bytes(pre)))
          SnapshotStore.put(c, bytes(post), sha256(bytes(post)), { base: sha256(bytes(pre)), baseBytes: bytes(pre) })
          SnapshotStore.put(c, bytes(added), sha256(bytes(added)))
        })
      }).pipe(Effect.provide(Sqlite.layer(one, sqliteOptions())))
      const rows = (f: string) =>
        raw(f, (db) => ({
          chunks: db.prepare("SELECT c.id, hex(c.hash) AS hash, c.size, c.codec, c.base, c.pack, hex(b.data) AS body FROM chunks c LEFT JOIN chunk_bodies b ON b.id = c.id ORDER BY c.id").all(),
          snapshots: db.prepare("SELECT id, hash, size, base, depth, hex(manifest) AS manifest FROM snapshots ORDER BY id").all()
        }))
      const stored = rows(file)
      assert.deepStrictEqual(stored, rows(one))
      assert.isTrue(stored.chunks.some((c) => (c as { codec: number }).codec === 3), "the edit is a patch of its base")
      yield* withStore(
        file,
        Effect.gen(function*() {
          const store = yield* HistoryStore
          for (const content of [pre, post, added]) {
            const got = yield* store.getBlob(sha256(bytes(content)))
            assert.isTrue(Option.isSome(got) && decoder.decode(got.value) === content)
          }
        })
      )
    }))

  it.effect("reopening a file keeps blobs, intents and records; migrations are idempotent", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const env = freshEnvironment()
      const committed = planned({ environmentId: env })
      const open = planned({ environmentId: env, files: [{ path: "b.txt", after: "b\n" }] })
      const first = yield* withStore(
        file,
        Effect.gen(function*() {
          const store = yield* HistoryStore
          yield* store.openIntent(committed.intent, committed.blobs)
          const record = yield* store.commitIntent(committed.intent.intentId, committed.draft, MILLIS)
          yield* store.openIntent(open.intent, open.blobs)
          return record
        })
      )
      for (let round = 0; round < 2; round++) {
        yield* withStore(
          file,
          Effect.gen(function*() {
            const store = yield* HistoryStore
            assert.deepStrictEqual(yield* store.recordsAfter(env, 0, 10), [first])
            assert.deepStrictEqual(yield* store.openIntents(env), [open.intent])
            const blob = yield* store.getBlob(sha256(bytes("b\n")))
            assert.isTrue(Option.isSome(blob))
          })
        )
      }
      const second = yield* withStore(
        file,
        Effect.flatMap(HistoryStore, (store) => store.commitIntent(open.intent.intentId, open.draft, MILLIS))
      )
      assert.strictEqual(second.commitOrdinal, 2)
      assert.strictEqual(raw(file, (db) => db.pragma("user_version", { simple: true })), 5)
    }))

  it.effect("migration 2 backfills threads-era columns and the per-path change index from version-1 rows", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const env = freshEnvironment()
      const p = planned({ environmentId: env, files: [{ path: "a/b.txt", before: "x\n", after: "y\n" }] })
      yield* Effect.gen(function*() {
        const sql = yield* Sqlite
        yield* sql.run("test", (c) =>
          c.run(
            "INSERT INTO records (record_id, intent_id, environment_id, commit_ordinal, thread_id, turn_id, transaction_id, " +
              "committed_at, outcome, bytes_written, files_written, record_json) VALUES (?, NULL, ?, 1, 'thread-1', 'turn-1', ?, " +
              "'2026-11-29T12:00:00.000Z', 'applied', 2, 1, ?)",
            p.draft.recordId,
            env,
            p.draft.transactionId,
            JSON.stringify({ schemaVersion: 1, ...p.draft, commitOrdinal: 1, committedAt: "2026-11-29T12:00:00.000Z" })
          ))
      }).pipe(Effect.provide(Sqlite.layer(file, { migrations: sqliteOptions().migrations!.slice(0, 1) })))
      assert.strictEqual(raw(file, (db) => db.pragma("user_version", { simple: true })), 1)
      yield* withStore(file, Effect.void)
      const row = raw(file, (db) => db.prepare("SELECT exactness, provenance, verifies FROM records").get())
      assert.deepStrictEqual(row, { exactness: "exact", provenance: "native_engine", verifies: null })
      const changes = raw(file, (db) => db.prepare("SELECT environment_id, path, commit_ordinal, thread_id, move_from FROM record_changes").all())
      assert.deepStrictEqual(changes, [{ environment_id: env, path: "a/b.txt", commit_ordinal: 1, thread_id: "thread-1", move_from: null }])
    }))

  it.effect("refuses a database with a newer schema version, clearly", () =>
    Effect.gen(function*() {
      const file = freshFile()
      yield* withStore(file, Effect.void)
      raw(file, (db) => db.pragma("user_version = 7"))
      const error = yield* Effect.flip(withStore(file, Effect.void))
      assert.strictEqual(error.reason, "Schema")
      assert.include(error.message, "schema version 7")
      assert.include(error.message, "newer than this forkjoin supports (5)")
      // Refusing must not touch the database.
      assert.strictEqual(raw(file, (db) => db.pragma("user_version", { simple: true })), 7)
    }))

  it.effect("a corrupt record row fails with Corrupt or Schema, never a bad record", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const env = freshEnvironment()
      const p = planned({ environmentId: env })
      yield* withStore(
        file,
        Effect.flatMap(HistoryStore, (store) =>
          Effect.andThen(store.openIntent(p.intent, p.blobs), store.commitIntent(p.intent.intentId, p.draft, MILLIS)))
      )
      const read = withStore(file, Effect.flatMap(HistoryStore, (store) => store.recordsAfter(env, 0, 10)))

      raw(file, (db) => db.prepare("UPDATE records SET record_json = '{not json'").run())
      assert.strictEqual((yield* Effect.flip(read)).reason, "Corrupt")

      raw(file, (db) => db.prepare("UPDATE records SET record_json = '{\"schemaVersion\":1}'").run())
      assert.strictEqual((yield* Effect.flip(read)).reason, "Schema")

      // Valid JSON of another record (ordinal 9) in this row: the columns disagree.
      const moved = JSON.stringify({ ...p.draft, schemaVersion: 1, commitOrdinal: 9, committedAt: "2026-11-29T12:00:00.000Z" })
      raw(file, (db) => db.prepare("UPDATE records SET record_json = ?").run(moved))
      assert.strictEqual((yield* Effect.flip(read)).reason, "Corrupt")

      // A chunk whose bytes changed: reported as Corrupt, naming the snapshot, never handed out.
      raw(file, (db) => {
        db.prepare("UPDATE chunks SET codec = 0").run()
        db.prepare("UPDATE chunk_bodies SET data = ?").run(Buffer.from("tampered"))
      })
      const blob = yield* Effect.flip(
        withStore(file, Effect.flatMap(HistoryStore, (store) => store.getBlob(sha256(bytes("new\n")))))
      )
      assert.strictEqual(blob.reason, "Corrupt")
      assert.include(blob.message, sha256(bytes("new\n")))
    }))

  it.effect("a write lock held past busy_timeout fails with Busy, and the intent stays usable", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const env = freshEnvironment()
      const p = planned({ environmentId: env })
      yield* Effect.gen(function*() {
        const store = yield* HistoryStore
        yield* store.openIntent(p.intent, p.blobs)
        const holder = new Database(file)
        holder.exec("BEGIN IMMEDIATE")
        const error = yield* Effect.flip(store.commitIntent(p.intent.intentId, p.draft, MILLIS))
        holder.exec("ROLLBACK")
        holder.close()
        assert.strictEqual(error.reason, "Busy")
        const record = yield* store.commitIntent(p.intent.intentId, p.draft, MILLIS)
        assert.strictEqual(record.commitOrdinal, 1)
      }).pipe(Effect.provide(layerSqlite(file, { busyTimeoutMs: 50 })))
    }))

  it.effect("waiting for another writer does not block the event loop", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const p = planned({ environmentId: freshEnvironment() })
      yield* Effect.gen(function*() {
        const store = yield* HistoryStore
        yield* store.openIntent(p.intent, p.blobs)
        // The holder is in this process and lets go from the event loop once the commit has
        // found the lock busy: a synchronous 5 s busy wait would starve it and fail with Busy.
        const lock = holdUntilContended(file)
        const record = yield* store.commitIntent(p.intent.intentId, p.draft, MILLIS).pipe(
          Effect.ensuring(Effect.sync(lock.dispose))
        )
        assert.strictEqual(record.commitOrdinal, 1)
        // It waited (busy first), and the release ran on the event loop before the commit ended.
        assert.deepStrictEqual(collapsed(lock.seen), ["busy", "released"])
      }).pipe(Effect.provide(layerSqlite(file, { busyTimeoutMs: 5000 })))
    }))

  it.effect("a file that is not a database is reported, not crashed on", () =>
    Effect.gen(function*() {
      const file = freshFile()
      fs.mkdirSync(path.dirname(file), { recursive: true })
      fs.writeFileSync(file, "this is not a sqlite database, just text that is long enough to have a header")
      const error = yield* Effect.flip(withStore(file, Effect.void))
      assert.strictEqual(error.reason, "Corrupt")
    }))

  describe("four processes committing into one file", () => {
    // Node 20 cannot run TypeScript: the worker is bundled at test time.
    let worker = ""
    beforeAll(() => {
      worker = bundle("packages/history/test/fixtures/commitWorker.ts")
    })
    afterAll(() => fs.rmSync(worker, { force: true }))

    const start = (file: string, env: string, count: number, id: number): Worker =>
      startWorker(worker, [file, env, String(count), String(id)])

    it("gives 400 concurrent commits the ordinals 1..400 exactly, with no errors", async () => {
      // A fresh file: the four processes also race to create and migrate it.
      const file = freshFile()
      const env = freshEnvironment("shared")
      const children = [0, 1, 2, 3].map((id) => start(file, env, 100, id))
      await Promise.all(children.map((c) => c.ready))
      children.forEach((c) => c.go())
      const results = await Promise.all(children.map((c) => c.done))

      const perChild = results.map((r, i) => {
        assert.strictEqual(r.code, 0, `worker ${i} exited ${r.code}: ${r.stderr}`)
        const line = r.stdout.split("\n").find((l) => l.startsWith("{"))
        assert.isDefined(line, `worker ${i} printed no result: ${r.stdout} ${r.stderr}`)
        return JSON.parse(line!) as { ordinals: Array<number>; errors: Array<string> }
      })
      for (const [i, r] of perChild.entries()) {
        assert.deepStrictEqual(r.errors, [], `worker ${i} errors`)
        assert.strictEqual(r.ordinals.length, 100)
        // Each process sees its own commits in increasing order.
        assert.deepStrictEqual(r.ordinals, [...r.ordinals].sort((a, b) => a - b))
      }
      const all = perChild.flatMap((r) => r.ordinals).sort((a, b) => a - b)
      assert.deepStrictEqual(all, Array.from({ length: 400 }, (_, i) => i + 1))
      // The processes really interleaved (otherwise this test proves little).
      const interleaved = perChild.some((r) => r.ordinals[r.ordinals.length - 1]! - r.ordinals[0]! > 100)
      assert.isTrue(interleaved, "the four workers did not overlap")

      const stored = await Effect.runPromise(
        withStore(file, Effect.flatMap(HistoryStore, (store) => store.recordsAfter(env, 0, 1000)))
      )
      assert.deepStrictEqual(stored.map((r) => r.commitOrdinal), all)
      assert.strictEqual(new Set(stored.map((r) => r.recordId)).size, 400)
      const openLeft = await Effect.runPromise(
        withStore(file, Effect.flatMap(HistoryStore, (store) => store.openIntents(env)))
      )
      assert.deepStrictEqual(openLeft, [])
    })
  })
})
