/**
 * Databases written by earlier builds open and migrate in place through the one migrator, and
 * every old record reads back. Both fixtures were written by the real builds with the CLI in a
 * fresh workspace, then copied with `VACUUM INTO`:
 * - `fixtures/history-d4ed8fb.db`: commit d4ed8fb, the first that wrote `history.db`
 *   (`PRAGMA user_version` 1, no `schema_components`): `forkjoin apply` three times, adding
 *   src/a.ts and notes.md (thread cli), editing src/a.ts, deleting notes.md (thread other);
 * - `fixtures/history-cbf7055.db`: commit cbf7055, the build before `@forkjoin/sqlite`
 *   (`user_version` 5, `schema_components` rows merge 2 and gateway 1): the same first two
 *   applies, a `forkjoin run` of three children whose join merged two and held one conflict
 *   (src/a.ts), and `forkjoin token create --thread cli`.
 */
import { HistoryStore, type StoreError } from "@forkjoin/history/HistoryStore"
import { MergeStore } from "@forkjoin/history/MergeStore"
import { layerWithHistory } from "@forkjoin/history/MergeStoreSqlite"
import { sha256 } from "@forkjoin/patch/Bytes"
import { EnvironmentId, MergeRunId } from "@forkjoin/schema/Ids"
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { raw, snapshotsOf } from "./fixtures.ts"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-existing-databases-"))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))
let copies = 0

/** A fresh copy of the fixture `name` (in `fixtures/`), as a workspace's `history.db`. */
const copyOf = (name: string): string => {
  const file = path.join(dir, `copy-${++copies}`, "history.db")
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.copyFileSync(fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url)), file)
  return file
}

const userVersion = (file: string): unknown => raw(file, (db) => db.pragma("user_version", { simple: true }))
const components = (file: string): unknown =>
  raw(file, (db) => {
    const present = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'schema_components'").get() !== undefined
    return present ? db.prepare("SELECT component, version FROM schema_components ORDER BY component").all() : []
  })
const recordRows = (file: string) =>
  raw(file, (db) =>
    db.prepare("SELECT environment_id, record_id, commit_ordinal, thread_id FROM records ORDER BY commit_ordinal").all() as Array<{
      environment_id: string
      record_id: string
      commit_ordinal: number
      thread_id: string
    }>)

/** Everything the stores read back from `file`: its records, each snapshot's bytes, its runs and conflicts. */
const readBack = (file: string, environmentId: EnvironmentId): Effect.Effect<{
  readonly records: ReadonlyArray<{ readonly recordId: string; readonly commitOrdinal: number; readonly threadId: string }>
  readonly snapshots: ReadonlyMap<string, Uint8Array>
  readonly runs: ReadonlyArray<MergeRunId>
  readonly conflicts: ReadonlyArray<{ readonly conflictId: string; readonly status: string }>
}, StoreError> =>
  Effect.gen(function*() {
    const store = yield* HistoryStore
    const merges = yield* MergeStore
    const records = yield* store.recordsAfter(environmentId, 0, 100)
    const snapshots = new Map<string, Uint8Array>()
    for (const hash of snapshotsOf(records)) snapshots.set(hash, Option.getOrThrow(yield* store.getBlob(hash)))
    const runs = (yield* merges.listRuns({ environmentId })).map((run) => run.runId)
    const conflicts = (yield* merges.listConflicts({ environmentId })).map((c) => ({ conflictId: c.conflictId, status: c.status }))
    return {
      records: records.map((r) => ({ recordId: r.recordId, commitOrdinal: r.commitOrdinal, threadId: r.threadId })),
      snapshots,
      runs,
      conflicts
    }
  }).pipe(Effect.provide(layerWithHistory(file)))

const asRecords = (rows: ReturnType<typeof recordRows>) =>
  rows.map((r) => ({ recordId: r.record_id, commitOrdinal: r.commit_ordinal, threadId: r.thread_id }))

describe("a database of the first build that wrote history.db (d4ed8fb)", () => {
  const ENV = EnvironmentId.make("env-0ce520d1c41be5621ef7")

  it.effect("migrates in place: every record and snapshot reads back, the versions move into schema_components", () =>
    Effect.gen(function*() {
      const file = copyOf("history-d4ed8fb.db")
      assert.strictEqual(userVersion(file), 1)
      assert.deepStrictEqual(components(file), [])
      const rows = recordRows(file)
      assert.strictEqual(rows.length, 3)
      const blobs = raw(file, (db) => new Map((db.prepare("SELECT hash, bytes FROM blobs").all() as Array<{ hash: string; bytes: Buffer }>).map((r) => [r.hash, r.bytes])))

      const back = yield* readBack(file, ENV)
      assert.deepStrictEqual(back.records, asRecords(rows))
      assert.sameMembers([...back.snapshots.keys()], [...blobs.keys()])
      for (const [hash, bytes] of back.snapshots) {
        assert.strictEqual(sha256(bytes), hash)
        assert.isTrue(Buffer.from(bytes).equals(blobs.get(hash)!), hash)
      }
      assert.deepStrictEqual(back.runs, [])
      assert.deepStrictEqual(components(file), [{ component: "history", version: 5 }, { component: "merge", version: 2 }])
      // Kept for the builds that read only user_version: they refuse what they do not know.
      assert.strictEqual(userVersion(file), 5)
      assert.deepStrictEqual(recordRows(file), rows)

      // Opening again migrates nothing and reads the same.
      const schema = raw(file, (db) => db.prepare("SELECT name, sql FROM sqlite_master ORDER BY name").all())
      const again = yield* readBack(file, ENV)
      assert.deepStrictEqual(again, back)
      assert.deepStrictEqual(raw(file, (db) => db.prepare("SELECT name, sql FROM sqlite_master ORDER BY name").all()), schema)
    }))
})

describe("a database of the build before @forkjoin/sqlite (cbf7055)", () => {
  const ENV = EnvironmentId.make("env-6acea5e45d628dfc1ea0")
  const RUN = MergeRunId.make("run-467bd92a-102c-4a6f-8024-dc7f3053fc91")

  it.effect("adopts user_version as the history tables' version, changes no table, reads every record, run and conflict", () =>
    Effect.gen(function*() {
      const file = copyOf("history-cbf7055.db")
      assert.strictEqual(userVersion(file), 5)
      assert.deepStrictEqual(components(file), [{ component: "gateway", version: 1 }, { component: "merge", version: 2 }])
      const rows = recordRows(file)
      assert.strictEqual(rows.length, 4)
      const schema = raw(file, (db) => db.prepare("SELECT name, sql FROM sqlite_master WHERE name <> 'schema_components' ORDER BY name").all())

      const back = yield* readBack(file, ENV)
      assert.deepStrictEqual(back.records, asRecords(rows))
      assert.isAbove(back.snapshots.size, 0)
      for (const [hash, bytes] of back.snapshots) assert.strictEqual(sha256(bytes), hash)
      assert.deepStrictEqual(back.runs, [RUN])
      assert.deepStrictEqual(back.conflicts, [{ conflictId: `${RUN}/clash:src/a.ts`, status: "open" }])
      assert.deepStrictEqual(components(file), [
        { component: "gateway", version: 1 },
        { component: "history", version: 5 },
        { component: "merge", version: 2 }
      ])
      assert.strictEqual(userVersion(file), 5)
      assert.deepStrictEqual(raw(file, (db) => db.prepare("SELECT name, sql FROM sqlite_master WHERE name <> 'schema_components' ORDER BY name").all()), schema)
    }))

  it.effect("a history version newer than this build is refused, and the file is left as it was", () =>
    Effect.gen(function*() {
      const file = copyOf("history-cbf7055.db")
      yield* readBack(file, ENV)
      raw(file, (db) => db.prepare("UPDATE schema_components SET version = 6 WHERE component = 'history'").run())
      const error = yield* Effect.flip(readBack(file, ENV))
      assert.strictEqual(error.reason, "Schema")
      assert.include(error.message, "has schema version 6, newer than this forkjoin supports (5)")
      assert.strictEqual(userVersion(file), 5)
      assert.deepStrictEqual(raw(file, (db) => db.prepare("SELECT version FROM schema_components WHERE component = 'history'").pluck().get()), 6)
    }))
})
