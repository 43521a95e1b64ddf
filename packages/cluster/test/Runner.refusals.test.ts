/**
 * A runner that must not start says why before anything starts, and exits 2: storage that
 * cannot be reached (a PostgreSQL port nobody listens on, a SQLite path that cannot be created)
 * named with its password redacted, a SQLite file written by a newer forkjoin, and a listen
 * address off the loopback interface (runner traffic is not authenticated).
 */
import * as ClusterStorage from "@forkjoin/cluster/ClusterStorage"
import * as ClusterUrl from "@forkjoin/cluster/ClusterUrl"
import { assert, beforeAll, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"
import { freePort } from "../../../test/support/ports.ts"
import { buildRunner, startRunner, tempDir } from "./support/runners.ts"

let script = ""
beforeAll(async () => {
  script = await buildRunner(tempDir())
}, 60_000)

const refusedWith = async (cluster: string, dir: string, host?: string) => {
  const runner = await startRunner(script, { cluster, port: await freePort(), ...(host === undefined ? {} : { host }) }, dir)
  const exit = await new Promise<number | null>((resolve) => runner.child.exitCode !== null ? resolve(runner.child.exitCode) : runner.child.once("exit", resolve))
  if (!("error" in runner.said)) throw new Error(`expected a refusal, the runner said ${JSON.stringify(runner.said)}`)
  return { ...runner.said.error, exit }
}

describe("runner refusals", () => {
  it("a PostgreSQL server that refuses connections: storage_unreachable naming the URL, password redacted, exit 2", async () => {
    const dir = tempDir()
    const port = await freePort()
    const error = await refusedWith(`postgres://forkjoin:hunter2@127.0.0.1:${port}/cluster`, dir)
    assert.strictEqual(error.code, "storage_unreachable")
    assert.strictEqual(error.exit, 2)
    assert.include(error.message, `postgres://forkjoin:***@127.0.0.1:${port}/cluster`)
    assert.notInclude(error.message, "hunter2")
  }, 60_000)

  it("a SQLite path that cannot be created: storage_unreachable naming the file, exit 2", async () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "a-file"), "")
    const error = await refusedWith(`sqlite:${path.join(dir, "a-file", "cluster.db")}`, dir)
    assert.strictEqual(error.code, "storage_unreachable")
    assert.strictEqual(error.exit, 2)
    assert.include(error.message, path.join(dir, "a-file", "cluster.db"))
  }, 60_000)

  it("a listen address off loopback is refused before the storage is touched", async () => {
    const dir = tempDir()
    const file = path.join(dir, "cluster.db")
    const error = await refusedWith(`sqlite:${file}`, dir, "0.0.0.0")
    assert.strictEqual(error.code, "runner_bind_unauthenticated")
    assert.strictEqual(error.exit, 2)
    assert.isFalse(fs.existsSync(file))
  }, 60_000)


  it.effect("a SQLite file whose cluster schema is newer than this forkjoin: storage_incompatible, the file untouched", () => {
    const dir = tempDir()
    const file = path.join(dir, "cluster.db")
    const db = new Database(file)
    db.exec("CREATE TABLE schema_components (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    db.prepare("INSERT INTO schema_components VALUES ('cluster', 99)").run()
    db.close()
    const url = Result.getOrThrow(ClusterUrl.parse(`sqlite:${file}`))
    return Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(ClusterStorage.layerSqlClient(url, dir)).pipe(Effect.scoped))
      assert.strictEqual(error.code, "storage_incompatible")
      assert.include(error.message, "newer forkjoin")
      const tables = new Database(file).prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all()
      assert.deepStrictEqual(tables, [{ name: "schema_components" }])
    })
  })
})
