/**
 * The `effect/sql` client over the `Sqlite` service, as a contract: statements and their
 * parameters, rows and values, transactions (commit, rollback, savepoints) that no other fiber
 * interleaves with, SQLite's errors classified with their cause, a lock held by another real
 * process waited out to the busy timeout, and the migrator's refusal of a newer file.
 */
import * as SqlClient from "@forkjoin/sqlite/SqlClient"
import { SqliteError } from "@forkjoin/sqlite"
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Latch from "effect/Latch"
import * as Stream from "effect/Stream"
import { SqlClient as Sql, type SqlClient as SqlService } from "effect/sql/SqlClient"
import { SqlError } from "effect/sql/SqlError"
import { spawn } from "node:child_process"
import { once } from "node:events"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const tempFile = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "fj-sqlclient-")), "db.sqlite")

const withClient = <A, E>(body: (sql: SqlService) => Effect.Effect<A, E>, file = ":memory:", busyTimeoutMs?: number) =>
  Effect.gen(function*() {
    const sql = yield* Sql
    yield* sql`CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, n INTEGER, b BLOB)`
    return yield* body(sql)
  }).pipe(Effect.provide(SqlClient.layer(file, busyTimeoutMs === undefined ? undefined : { busyTimeoutMs })))

describe("SqlClient", () => {
  it.effect("runs statements with bound parameters and returns rows, values and RETURNING rows", () =>
    withClient((sql) =>
      Effect.gen(function*() {
        assert.strictEqual(sql.onDialectOrElse({ sqlite: () => "sqlite", orElse: () => "other" }), "sqlite")
        yield* sql`INSERT INTO t ${sql.insert({ k: "a", n: 1, b: new Uint8Array([1, 2]) })}`
        const returned = yield* sql<{ k: string; n: number }>`INSERT INTO t (k, n) VALUES (${"b"}, ${true}) RETURNING k, n`
        assert.deepStrictEqual(returned, [{ k: "b", n: 1 }])
        yield* sql`INSERT INTO t (k, n) VALUES (${"c"}, ${null})`
        const rows = yield* sql<{ k: string; n: number | null }>`SELECT k, n FROM t WHERE k IN ${sql.in(["a", "c"])} ORDER BY k`
        assert.deepStrictEqual(rows, [{ k: "a", n: 1 }, { k: "c", n: null }])
        assert.deepStrictEqual(yield* sql`SELECT n, k FROM t WHERE k = ${"a"}`.values, [[1, "a"]])
        const blob = yield* sql<{ b: Uint8Array }>`SELECT b FROM t WHERE k = 'a'`
        assert.deepStrictEqual([...blob[0]!.b], [1, 2])
        const streamed = yield* Stream.runCollect(sql<{ k: string }>`SELECT k FROM t ORDER BY k`.stream)
        assert.deepStrictEqual(Array.from(streamed, (r) => r.k), ["a", "b", "c"])
        assert.deepStrictEqual(yield* sql`UPDATE t SET n = 5`.raw, { changes: 3 })
      })))

  it.effect("a transaction commits as a whole, rolls back as a whole, and a failed savepoint undoes only its part", () =>
    withClient((sql) =>
      Effect.gen(function*() {
        yield* sql.withTransaction(Effect.andThen(sql`INSERT INTO t (k) VALUES ('kept1')`, sql`INSERT INTO t (k) VALUES ('kept2')`))
        const failed = yield* Effect.flip(sql.withTransaction(
          Effect.andThen(sql`INSERT INTO t (k) VALUES ('gone')`, Effect.fail("stop" as const))
        ))
        assert.strictEqual(failed, "stop")
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO t (k) VALUES ('outer')`
          yield* Effect.flip(sql.withTransaction(Effect.andThen(sql`INSERT INTO t (k) VALUES ('inner')`, Effect.fail("inner" as const))))
        }))
        const rows = yield* sql<{ k: string }>`SELECT k FROM t ORDER BY k`
        assert.deepStrictEqual(rows.map((r) => r.k), ["kept1", "kept2", "outer"])
      })))

  it.effect("another fiber's statement never runs inside a transaction it is not part of", () =>
    withClient((sql) =>
      Effect.gen(function*() {
        const inside = yield* Latch.make()
        const outsideStarted = yield* Latch.make()
        const tx = yield* Effect.forkChild(sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO t (k) VALUES ('in-tx')`
          yield* inside.open
          yield* outsideStarted.await
          return yield* Effect.fail("rollback" as const)
        })))
        yield* inside.await
        // Forked while the transaction holds the connection: it must wait for the rollback.
        const outside = yield* Effect.forkChild(Effect.andThen(outsideStarted.open, sql`INSERT INTO t (k) VALUES ('outside')`))
        assert.strictEqual(yield* Effect.flip(Fiber.join(tx)), "rollback")
        yield* Fiber.join(outside)
        const rows = yield* sql<{ k: string }>`SELECT k FROM t ORDER BY k`
        assert.deepStrictEqual(rows.map((r) => r.k), ["outside"])
      })))

  it.effect("SQLite's errors are SqlError by their result code, SQLite's error kept as the cause", () =>
    withClient((sql) =>
      Effect.gen(function*() {
        yield* sql`INSERT INTO t (k) VALUES ('a')`
        const unique = yield* Effect.flip(sql`INSERT INTO t (k) VALUES ('a')`)
        assert.instanceOf(unique, SqlError)
        assert.strictEqual(unique.reason._tag, "ConstraintError")
        assert.instanceOf(unique.reason.cause, Database.SqliteError)
        const syntax = yield* Effect.flip(sql`SELEC nothing`)
        assert.instanceOf(syntax, SqlError)
        assert.instanceOf(syntax.reason.cause, Database.SqliteError)
        const unbindable = yield* Effect.flip(sql`INSERT INTO t (k) VALUES (${{ an: "object" }})`)
        assert.instanceOf(unbindable, SqlError)
        assert.include(unbindable.message, "cannot be bound")
      })))

  it.effect("a write lock held by another process is waited out to the busy timeout, then LockTimeoutError", () => {
    const file = tempFile()
    new Database(file).exec("PRAGMA journal_mode = WAL; CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER, b BLOB)").close()
    return Effect.gen(function*() {
      const holder = spawn(process.execPath, [
        "-e",
        `const D = require(${JSON.stringify(require.resolve("better-sqlite3"))}); const d = new D(${JSON.stringify(file)});
         d.exec("BEGIN IMMEDIATE"); d.exec("INSERT INTO t (k) VALUES ('holder')"); process.stdout.write("held\\n");
         process.stdin.on("end", () => { d.exec("COMMIT"); process.exit(0) }); process.stdin.resume()`
      ], { stdio: ["pipe", "pipe", "inherit"] })
      yield* Effect.promise(() => once(holder.stdout!, "data"))
      const result = yield* withClient((sql) => Effect.flip(sql`INSERT INTO t (k) VALUES ('mine')`), file, 200).pipe(
        Effect.ensuring(Effect.promise(async () => {
          holder.stdin!.end()
          await once(holder, "exit")
        }))
      )
      assert.instanceOf(result, SqlError)
      assert.strictEqual(result.reason._tag, "LockTimeoutError")
      const rows = yield* withClient((sql) => sql<{ k: string }>`SELECT k FROM t`, file)
      assert.deepStrictEqual(rows.map((r) => r.k), ["holder"])
    })
  })

  it.effect("opening goes through the migrator: a file with a component newer than the code is refused", () => {
    const file = tempFile()
    const db = new Database(file)
    db.exec("CREATE TABLE schema_components (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    db.prepare("INSERT INTO schema_components VALUES ('probe', 9)").run()
    db.close()
    const probe = { name: "probe", label: "probe schema", migrations: [{ version: 1, name: "none", up: () => {} }] }
    return Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.provide(Effect.void, SqlClient.layer(file, { components: [probe] })))
      assert.instanceOf(error, SqliteError)
      assert.strictEqual(error.reason, "Schema")
      assert.include(error.message, "probe schema version 9")
    })
  })
})
