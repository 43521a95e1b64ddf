/**
 * The one migrator on files: components versioned in `schema_components`, a component that was
 * versioned by `PRAGMA user_version` adopted in place, newer versions refused untouched, one
 * transaction per step.
 */
import { Migrator, SqliteError } from "@forkjoin/sqlite"
import * as Sqlite from "@forkjoin/sqlite/Sqlite"
import { afterAll, assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-migrator-"))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))
let files = 0
const freshFile = (): string => path.join(dir, `db-${++files}.db`)

const query = (file: string, sql: string): unknown => {
  const db = new Database(file)
  try {
    return sql.startsWith("PRAGMA") ? db.pragma(sql.slice("PRAGMA ".length), { simple: true }) : db.prepare(sql).all()
  } finally {
    db.close()
  }
}

const COMPONENTS = "SELECT component, version FROM schema_components ORDER BY component"

/** A component of `n` migrations, each creating table `<name>_<version>`; `ran` lists the steps run. */
const componentOf = (name: string, n: number, options: { readonly userVersion?: boolean; readonly failAt?: number } = {}) => {
  const ran: Array<number> = []
  const component = Migrator.component({
    name,
    label: `${name} schema`,
    ...(options.userVersion === undefined ? {} : { userVersion: options.userVersion }),
    migrations: Array.from({ length: n }, (_, i) => ({
      version: i + 1,
      name: `table ${i + 1}`,
      up: (c) => {
        ran.push(i + 1)
        // A step that fails does so after a change of its own: the rollback must undo it.
        c.exec(`CREATE TABLE ${name}_${i + 1} (x INTEGER)`)
        if (options.failAt === i + 1) c.exec(`CREATE TABLE ${name}_${i + 1} (x INTEGER)`)
      }
    }))
  })
  return { component, ran }
}

const open = (file: string, components: ReadonlyArray<Migrator.Component>) =>
  Effect.scoped(Effect.map(Sqlite.make(file, { components }), (db) => db.versions))

describe("Migrator", () => {
  it.effect("versions every component in one table, each brought up when opened or later", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const a = componentOf("a", 2)
      const b = componentOf("b", 3)
      const versions = yield* Effect.scoped(Effect.gen(function*() {
        const db = yield* Sqlite.make(file, { components: [a.component] })
        return { opened: db.versions, later: yield* db.migrate("test", b.component) }
      }))
      assert.deepStrictEqual(versions, { opened: { a: 2 }, later: 3 })
      assert.deepStrictEqual(query(file, COMPONENTS), [{ component: "a", version: 2 }, { component: "b", version: 3 }])
      assert.strictEqual(query(file, "PRAGMA user_version"), 0)
      // Current on the next open: nothing runs again.
      assert.deepStrictEqual(yield* open(file, [a.component, b.component]), { a: 2, b: 3 })
      assert.deepStrictEqual([a.ran, b.ran], [[1, 2], [1, 2, 3]])
    }))

  it.effect("adopts a user_version component in place: only the missing steps run, user_version follows", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const old = componentOf("h", 2, { userVersion: true })
      // A file of a build that versioned the component by user_version only.
      const db = new Database(file)
      db.exec("CREATE TABLE h_1 (x INTEGER); INSERT INTO h_1 VALUES (7); CREATE TABLE h_2 (x INTEGER); PRAGMA user_version = 2")
      db.close()
      const current = componentOf("h", 3, { userVersion: true })
      assert.deepStrictEqual(yield* open(file, [current.component]), { h: 3 })
      assert.deepStrictEqual(current.ran, [3])
      assert.deepStrictEqual(query(file, COMPONENTS), [{ component: "h", version: 3 }])
      assert.strictEqual(query(file, "PRAGMA user_version"), 3)
      assert.deepStrictEqual(query(file, "SELECT x FROM h_1"), [{ x: 7 }])
      // At its latest already, it only gets its row.
      const other = freshFile()
      yield* open(other, [old.component])
      new Database(other).exec("DELETE FROM schema_components").close()
      const again = componentOf("h", 2, { userVersion: true })
      assert.deepStrictEqual(yield* open(other, [again.component]), { h: 2 })
      assert.deepStrictEqual(again.ran, [])
      assert.deepStrictEqual(query(other, COMPONENTS), [{ component: "h", version: 2 }])
    }))

  it.effect("refuses a version newer than the code, in the row or in user_version, and writes nothing", () =>
    Effect.gen(function*() {
      for (const tamper of ["UPDATE schema_components SET version = 4", "PRAGMA user_version = 4"]) {
        const file = freshFile()
        const h = componentOf("h", 2, { userVersion: true })
        yield* open(file, [h.component])
        new Database(file).exec(tamper).close()
        const before = [query(file, COMPONENTS), query(file, "PRAGMA user_version")]
        const error = yield* Effect.flip(open(file, [h.component]))
        assert.instanceOf(error, SqliteError)
        assert.strictEqual(error.reason, "Schema")
        assert.include(error.message, `${file} has h schema version 4, newer than this forkjoin supports (2)`)
        assert.deepStrictEqual([query(file, COMPONENTS), query(file, "PRAGMA user_version")], before)
      }
    }))

  it.effect("a failing step rolls back alone: the steps before it stay, the next open runs it again", () =>
    Effect.gen(function*() {
      const file = freshFile()
      const failing = componentOf("f", 3, { failAt: 2 })
      const error = yield* Effect.flip(open(file, [failing.component]))
      assert.strictEqual(error.reason, "Io")
      assert.deepStrictEqual(query(file, COMPONENTS), [{ component: "f", version: 1 }])
      assert.deepStrictEqual(query(file, "SELECT name FROM sqlite_master WHERE name LIKE 'f_%' ORDER BY name"), [{ name: "f_1" }])
      const fixed = componentOf("f", 3)
      assert.deepStrictEqual(yield* open(file, [fixed.component]), { f: 3 })
      assert.deepStrictEqual(fixed.ran, [2, 3])
    }))

  it("refuses migrations that are not numbered 1..n in order", () => {
    assert.throws(
      () => Migrator.component({ name: "x", label: "x schema", migrations: [{ version: 2, name: "two", up: () => undefined }] }),
      /the x migrations must be numbered 1\.\.n in order; #0 is 2/
    )
  })
})
