/**
 * What the service does with failures: SQLite's errors become `SqliteError` by their result
 * code (the transaction rolled back), a body's own `SqliteError` passes as it is, any other
 * throw is a bug (a defect); `makeWith` speaks the caller's error instead.
 */
import { SqliteError } from "@forkjoin/sqlite"
import * as Sqlite from "@forkjoin/sqlite/Sqlite"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"

const withTable = <A, E>(body: (db: Sqlite.Database<SqliteError>) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.gen(function*() {
    const db = yield* Sqlite.make(":memory:")
    yield* db.run("setup", (c) => c.exec("CREATE TABLE t (k TEXT PRIMARY KEY)"))
    return yield* body(db)
  }))

class Mine extends Schema.TaggedError<Mine>()("Mine", { reason: Schema.String }) {}

describe("Sqlite", () => {
  it.effect("a constraint violation is SqliteError Constraint, and its transaction rolls back", () =>
    withTable((db) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(db.transaction("insert twice", (c) => {
          c.run("INSERT INTO t VALUES ('a')")
          c.run("INSERT INTO t VALUES ('b')")
          c.run("INSERT INTO t VALUES ('a')")
        }))
        assert.instanceOf(error, SqliteError)
        assert.strictEqual(error.reason, "Constraint")
        assert.strictEqual(error.operation, "insert twice")
        assert.include(error.detail, "SQLITE_CONSTRAINT")
        assert.deepStrictEqual(yield* db.run("count", (c) => c.all("SELECT k FROM t")), [])
      })))

  it.effect("a body's own SqliteError passes as it is; any other throw dies", () =>
    withTable((db) =>
      Effect.gen(function*() {
        const own = new SqliteError({ operation: "mine", reason: "Schema", detail: "refused" })
        assert.strictEqual(yield* Effect.flip(db.transaction("t", () => {
          throw own
        })), own)
        const exit = yield* Effect.exit(db.run("t", () => {
          throw new Error("a bug")
        }))
        assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause))
      })))

  it.effect("makeWith speaks the caller's error: SQLite's errors mapped, the caller's own passed through", () =>
    Effect.scoped(Effect.gen(function*() {
      const db = yield* Sqlite.makeWith(":memory:", undefined, {
        fromSqliteError: (e) => new Mine({ reason: e.reason }),
        isError: (thrown): thrown is Mine => thrown instanceof Mine
      })
      const mapped = yield* Effect.flip(db.run("bad", (c) => c.exec("SELECT * FROM nowhere")))
      assert.deepStrictEqual(mapped, new Mine({ reason: "Io" }))
      const own = new Mine({ reason: "own" })
      assert.strictEqual(yield* Effect.flip(db.run("own", () => {
        throw own
      })), own)
    })))
})
