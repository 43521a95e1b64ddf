/**
 * `--cluster` values: the two storages forkjoin knows, everything else refused with one stable
 * code and a message naming both forms, and a password never shown (attacked in every form a
 * user sees: the display, the error's url and its message).
 */
import * as ClusterUrl from "@forkjoin/cluster/ClusterUrl"
import { assert, describe, it } from "@effect/vitest"
import * as Result from "effect/Result"

const ok = (input: string) => {
  const r = ClusterUrl.parse(input)
  if (Result.isFailure(r)) throw new Error(`expected ${input} to parse: ${r.failure.message}`)
  return r.success
}
const refused = (input: string) => {
  const r = ClusterUrl.parse(input)
  if (Result.isSuccess(r)) throw new Error(`expected ${input} to be refused`)
  return r.failure
}

describe("ClusterUrl", () => {
  it("reads postgres:// and postgresql:// as PostgreSQL, the URL kept, the password redacted for display", () => {
    const pg = ok("postgres://forkjoin:s3cret@db.internal:5432/cluster")
    assert.deepStrictEqual(pg, {
      _tag: "Postgres",
      url: "postgres://forkjoin:s3cret@db.internal:5432/cluster",
      display: "postgres://forkjoin:***@db.internal:5432/cluster"
    })
    assert.strictEqual(ok("postgresql://u@127.0.0.1/db")._tag, "Postgres")
    assert.strictEqual(ok("POSTGRES://u@h/db")._tag, "Postgres")
    assert.notInclude(ok("postgres://u@h/db?password=hunter2").display, "hunter2")
  })

  it("reads sqlite:PATH as a SQLite file, relative or absolute", () => {
    assert.deepStrictEqual(ok("sqlite:/var/lib/fj/cluster.db"), { _tag: "Sqlite", path: "/var/lib/fj/cluster.db", display: "sqlite:/var/lib/fj/cluster.db" })
    assert.deepStrictEqual(ok("sqlite:cluster.db"), { _tag: "Sqlite", path: "cluster.db", display: "sqlite:cluster.db" })
  })

  it("refuses anything else with one stable code and a message that names both forms", () => {
    for (const input of ["", "   ", "mysql://u@h/db", "http://h:1", "cluster.db", "sqlite:", "sqlite::memory:", "sqlite://host/x", "postgres://", "postgres://:5432/db"]) {
      const error = refused(input)
      assert.strictEqual(error.code, "cluster_url_invalid", input)
      assert.include(error.message, "postgres://USER@HOST:PORT/DATABASE", input)
      assert.include(error.message, "sqlite:PATH", input)
    }
  })

  it("never shows a password, not even of a refused URL", () => {
    for (const input of ["mysql://root:topsecret@h/db", "postgres://u:topsecret@/db", "redis://:topsecret@h", "postgres://u@h/db?password=topsecret&sslmode=require"]) {
      const r = ClusterUrl.parse(input)
      const shown = Result.isFailure(r) ? [r.failure.url, r.failure.message] : [r.success.display]
      for (const text of shown) assert.notInclude(text, "topsecret", input)
    }
  })
})
