/**
 * Migration 4 on real databases of the first release. `fixtures/history-v0.1.0.db` was made by
 * the landed build (commit 3dd35d5) with `forkjoin apply` before the snapshot store existed:
 * seven records in two threads (a 13 KB file added then edited three times, a small file
 * edited and moved, a file added then deleted), VACUUMed into the fixture. Checked: every
 * record's snapshots read back byte-exact after the move, the views answer exactly what they
 * answered before it, git export works, a move interrupted between steps (in process, and by
 * SIGKILL of a real child process) continues at the next open, and damaged rows stay put.
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import { exportThread } from "@forkjoin/history/GitExport"
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { layerNoDeps, layerSqlite, sqliteOptions } from "@forkjoin/history/HistoryStoreSqlite"
import * as SnapshotStore from "@forkjoin/history/SnapshotStore"
import { Sqlite } from "@forkjoin/history/Sqlite"
import { HistoryViews } from "@forkjoin/history/Views"
import { EnvironmentId, type Sha256Hash } from "@forkjoin/schema"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import git from "isomorphic-git"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { bundle } from "../../../test/support/bundle.ts"
import { raw, snapshotsOf } from "./fixtures.ts"

const FIXTURE = fileURLToPath(new URL("./fixtures/history-v0.1.0.db", import.meta.url))
const ENV = EnvironmentId.make("env-c769f85ac52e91412703")
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-history-migration-"))
let n = 0
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

/** A fresh copy of the fixture. */
const copyFixture = (): string => {
  const file = path.join(dir, `db-${++n}`, "history.db")
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.copyFileSync(FIXTURE, file)
  return file
}

const count = (file: string, table: string): number =>
  raw(file, (db) => (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n)

/** The legacy `blobs` rows, by hash. */
const legacyBlobs = (file: string): Map<string, Buffer> =>
  raw(file, (db) => new Map((db.prepare("SELECT hash, bytes FROM blobs").all() as Array<{ hash: string; bytes: Buffer }>).map((r) => [r.hash, r.bytes])))

/** What the views answer on `file`: every record's diff, both threads' timelines, and each path's history. */
const viewsOf = (file: string) =>
  Effect.gen(function*() {
    const views = yield* HistoryViews
    const diffs = []
    for (let k = 1; k <= 7; k++) diffs.push(yield* views.diff({ caller: k <= 5 ? "cli" : "other", target: `#${k}` }))
    const timelines = [yield* views.timeline({ caller: "cli" }), yield* views.timeline({ caller: "other" })]
    const files = []
    for (const p of ["big.txt", "src/b.ts", "src/a.ts"]) files.push(yield* views.file({ caller: "cli", path: p }))
    files.push(yield* views.file({ caller: "other", path: "notes.md" }))
    return { diffs, timelines, files }
  }).pipe(Effect.provide(HistoryViews.layerSqlite(file, { environmentId: ENV })))

const recordsOf = Effect.flatMap(HistoryStore, (store) => store.recordsAfter(ENV, 0, 100))

describe("migration 4 of a first-release database", () => {
  it.effect("moves every blob in place: each record's snapshots read back byte-exact, the views answer as before", () =>
    Effect.gen(function*() {
      const file = copyFixture()
      const original = legacyBlobs(file)
      assert.strictEqual(raw(file, (db) => db.pragma("user_version", { simple: true })), 3)
      assert.strictEqual(original.size, 7)
      // The views before the move: a copy opened only by the views reads the old rows in place.
      const unmoved = copyFixture()
      const before = yield* viewsOf(unmoved)
      assert.strictEqual(count(unmoved, "blobs"), 7)
      const bytesBefore = fs.statSync(file).size

      const records = yield* Effect.gen(function*() {
        const store = yield* HistoryStore
        const records = yield* recordsOf
        for (const hash of snapshotsOf(records)) {
          const got = yield* store.getBlob(hash)
          assert.isTrue(Option.isSome(got), hash)
          assert.isTrue(Buffer.from(Option.getOrThrow(got)).equals(original.get(hash)!), hash)
        }
        return records
      }).pipe(Effect.provide(layerSqlite(file)))
      assert.strictEqual(records.length, 7)
      assert.sameMembers(snapshotsOf(records), [...original.keys()])
      assert.strictEqual(raw(file, (db) => db.pragma("user_version", { simple: true })), 5)
      assert.strictEqual(count(file, "blobs"), 0)
      assert.strictEqual(count(file, "snapshots"), 7)
      // The three edits of big.txt and the edited move became patches of the version before's chunk.
      assert.strictEqual(raw(file, (db) => (db.prepare("SELECT COUNT(*) AS n FROM chunks WHERE codec = 3").get() as { n: number }).n), 4)
      // A committed intent keeps no copy of its draft (the record holds it).
      assert.deepStrictEqual(raw(file, (db) => db.prepare("SELECT DISTINCT status, intent_json FROM intents").all()), [
        { status: "committed", intent_json: "" }
      ])
      // The freed pages went back to the filesystem.
      assert.isBelow(fs.statSync(file).size, bytesBefore)

      const after = yield* viewsOf(file)
      assert.deepStrictEqual(after, before)
      assert.include(after.diffs[1]!.items[0]!.diff, "edited 0")
      assert.strictEqual(after.diffs[1]!.items[0]!.source, "blobs")
    }))

  it.effect("git export reads the moved snapshots: the exported file equals the recorded content", () =>
    Effect.gen(function*() {
      const file = copyFixture()
      const original = legacyBlobs(file)
      const gitdir = path.join(dir, `git-${++n}`)
      // One connection: the store (which moves the blobs when it opens) and the export over it.
      const layer = layerNoDeps.pipe(Layer.provideMerge(Sqlite.layer(file, sqliteOptions())))
      const result = yield* Effect.gen(function*() {
        const records = yield* recordsOf
        const exported = yield* exportThread({ environmentId: ENV, threadId: "cli", gitdir })
        return { records, exported }
      }).pipe(Effect.provide(layer))
      assert.strictEqual(result.exported.exported, 5)
      const last = result.records.filter((r) => r.threadId === "cli").at(-1)!
      const big = result.records.filter((r) => r.changes.some((c) => c.path === "big.txt")).at(-1)!
      const blob = yield* Effect.promise(() => git.readBlob({ fs, gitdir, oid: result.exported.head!, filepath: "big.txt" }))
      assert.isTrue(Buffer.from(blob.blob).equals(original.get(big.changes[0]!.after!.hash)!))
      const moved = yield* Effect.promise(() => git.readBlob({ fs, gitdir, oid: result.exported.head!, filepath: "src/b.ts" }))
      assert.isTrue(Buffer.from(moved.blob).equals(original.get(last.changes[0]!.after!.hash)!))
    }))

  it.effect("a move stopped after one step leaves every snapshot readable; the next open finishes it", () =>
    Effect.gen(function*() {
      const file = copyFixture()
      const original = legacyBlobs(file)
      const readAll = Effect.gen(function*() {
        const sql = yield* Sqlite
        for (const [hash, bytes] of original) {
          const found = yield* sql.run("test", (c) => SnapshotStore.read(c, "test", hash as Sha256Hash))
          assert.strictEqual(found._tag, "Stored", hash)
          if (found._tag === "Stored") assert.isTrue(Buffer.from(found.bytes).equals(bytes), hash)
        }
      })
      // The schema step of migration 4 and one move step of three rows, then the process "dies".
      yield* Effect.gen(function*() {
        const sql = yield* Sqlite
        const step = yield* sql.transaction("test", (c) => SnapshotStore.moveLegacyBlobs(c, new Map(), 0, { rows: 3, bytes: 1 << 30 }))
        assert.strictEqual(step.moved, 3)
        assert.isDefined(step.last)
      }).pipe(Effect.provide(Sqlite.layer(file, sqliteOptions())))
      assert.deepStrictEqual([count(file, "blobs"), count(file, "snapshots")], [4, 3])
      // Half moved: old rows and new ones side by side, each snapshot in exactly one place.
      yield* readAll.pipe(Effect.provide(Sqlite.layer(file, sqliteOptions())))
      yield* Effect.flatMap(HistoryStore, () => Effect.void).pipe(Effect.provide(layerSqlite(file)))
      assert.deepStrictEqual([count(file, "blobs"), count(file, "snapshots")], [0, 7])
      yield* readAll.pipe(Effect.provide(Sqlite.layer(file, sqliteOptions())))
    }))

  it.effect("a damaged old row stays where it is and keeps reading as Corrupt; the rest moves", () =>
    Effect.gen(function*() {
      const file = copyFixture()
      const original = legacyBlobs(file)
      const damaged = [...original.keys()][1]!
      raw(file, (db) => db.prepare("UPDATE blobs SET bytes = ? WHERE hash = ?").run(Buffer.from("tampered"), damaged))
      const error = yield* Effect.flip(
        Effect.flatMap(HistoryStore, (store) => store.getBlob(damaged as Sha256Hash)).pipe(Effect.provide(layerSqlite(file)))
      )
      assert.strictEqual(error.reason, "Corrupt")
      assert.include(error.message, damaged)
      assert.deepStrictEqual([count(file, "blobs"), count(file, "snapshots")], [1, 6])
    }))

  describe("a process killed in the middle of the move", () => {
    // Node 20 cannot run TypeScript: the worker is bundled at test time.
    let worker = ""
    beforeAll(() => {
      worker = bundle("packages/history/test/fixtures/migrateWorker.ts")
    })
    afterAll(() => fs.rmSync(worker, { force: true }))

    it("leaves whole steps done; the next open continues and every blob reads back exactly", async () => {
      // The fixture plus 400 more old rows of 100 KB (40 MB): several steps of the move.
      const file = copyFixture()
      const extra = new Map<string, Buffer>()
      raw(file, (db) => {
        const insert = db.prepare("INSERT INTO blobs (hash, size, bytes) VALUES (?, ?, ?)")
        db.transaction(() => {
          for (let i = 0; i < 400; i++) {
            const bytes = Buffer.from(Array.from({ length: 2_000 }, (_, j) => `file ${i} line ${j}: ${(i * 7919 + j * 104729) % 1000003}\n`).join("").slice(0, 100_000))
            const hash = sha256(bytes)
            insert.run(hash, bytes.length, bytes)
            extra.set(hash, bytes)
          }
        })()
      })
      const expected = new Map([...legacyBlobs(file)])
      const total = expected.size
      const child = spawn(process.execPath, [worker, file], { stdio: ["ignore", "pipe", "pipe"] })
      let stderr = ""
      child.stderr.on("data", (b: Buffer) => (stderr += b.toString("utf8")))
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.on("exit", (code, signal) => resolve({ code, signal }))
      )
      // Killed when it says it is paused: one step committed, the next one half done.
      let stdout = ""
      child.stdout.on("data", (b: Buffer) => {
        stdout += b.toString("utf8")
        if (/paused \d+\n/.test(stdout)) child.kill("SIGKILL")
      })
      const exit = await exited
      assert.strictEqual(exit.signal, "SIGKILL", `the child ended on its own first (${exit.code}): ${stdout} ${stderr}`)
      const committed = Number(/paused (\d+)/.exec(stdout)![1])
      const midway = count(file, "blobs")
      assert.isAbove(midway, 0, "the child finished the whole move before the kill")
      assert.isBelow(midway, total)
      // The half-done step left nothing: exactly the committed steps' rows are gone.
      assert.strictEqual(midway, total - committed)
      // Each snapshot is in exactly one place: moved ones are gone from the old table.
      assert.strictEqual(midway + count(file, "snapshots"), total)

      await Effect.runPromise(
        Effect.gen(function*() {
          const store = yield* HistoryStore
          for (const [hash, bytes] of expected) {
            const got = Option.getOrThrow(yield* store.getBlob(hash as Sha256Hash))
            assert.isTrue(Buffer.from(got).equals(bytes), hash)
          }
        }).pipe(Effect.provide(layerSqlite(file)))
      )
      assert.deepStrictEqual([count(file, "blobs"), count(file, "snapshots")], [0, total])
      assert.isAbove(extra.size, 399)
    })
  })
})

/**
 * Migration 5 on a real database of the first chunked release. `fixtures/history-chunked-875c8ab.db`
 * was made by that build (commit 875c8ab) with `forkjoin apply`: a 150 KB text file edited
 * eight times (six times at one spot, so one chunk is a chain of six deltas), a small file
 * edited once; VACUUMed into the fixture.
 */
describe("migration 5 of a database of the first chunked release", () => {
  const CHUNKED = fileURLToPath(new URL("./fixtures/history-chunked-875c8ab.db", import.meta.url))

  const copyChunked = (): string => {
    const file = path.join(dir, `chunked-${++n}`, "history.db")
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.copyFileSync(CHUNKED, file)
    return file
  }

  const chunkRows = (file: string) => raw(file, (db) => db.prepare("SELECT c.*, b.data FROM chunks c LEFT JOIN chunk_bodies b ON b.id = c.id ORDER BY c.id").all())

  it.effect("keeps every chunk row and body, reads every recorded version exact, and stores later edits as one-hop patches", () =>
    Effect.gen(function*() {
      const file = copyChunked()
      assert.strictEqual(raw(file, (db) => db.pragma("user_version", { simple: true })), 4)
      const rowsBefore = chunkRows(file)
      const chain = raw(file, (db) => db.prepare("SELECT MAX(depth) AS d, COUNT(*) AS n FROM chunks WHERE codec = 2").get() as { d: number; n: number })
      assert.isAtLeast(chain.d, 6)

      const env = raw(file, (db) => (db.prepare("SELECT DISTINCT environment_id AS e FROM records").get() as { e: string }).e)
      const records = yield* Effect.gen(function*() {
        const store = yield* HistoryStore
        const records = yield* store.recordsAfter(EnvironmentId.make(env), 0, 100)
        for (const hash of snapshotsOf(records)) {
          const got = yield* store.getBlob(hash)
          assert.isTrue(Option.isSome(got), hash)
          assert.strictEqual(sha256(Option.getOrThrow(got)), hash)
        }
        return records
      }).pipe(Effect.provide(layerSqlite(file)))
      assert.strictEqual(records.length, 9)
      assert.strictEqual(raw(file, (db) => db.pragma("user_version", { simple: true })), 5)
      // Rows, ids and bodies as they were: the first chunked release's deltas are read in place.
      assert.deepStrictEqual(chunkRows(file), rowsBefore)

      // The next two edits: this release cuts larger chunks, so the first is stored whole once
      // (nothing of it is a delta); the second is one patch of it, one hop.
      const last = records.filter((r) => r.changes.some((c) => c.path === "big.txt")).at(-1)!.changes[0]!.after!.hash
      const next = yield* Effect.gen(function*() {
        const sql = yield* Sqlite
        const edit = (base: Sha256Hash, from: string, to: string) =>
          Effect.gen(function*() {
            const found = yield* sql.run("t", (c) => SnapshotStore.read(c, "t", base))
            assert.strictEqual(found._tag, "Stored")
            const current = Buffer.from((found as { bytes: Uint8Array }).bytes)
            const at = current.indexOf(from)
            const edited = Buffer.concat([current.subarray(0, at), Buffer.from(to), current.subarray(at + from.length)])
            const hash = sha256(edited)
            yield* sql.transaction("t", (c) => SnapshotStore.put(c, edited, hash, { base }))
            const back = yield* sql.run("t", (c) => SnapshotStore.read(c, "t", hash))
            assert.isTrue(back._tag === "Stored" && Buffer.from(back.bytes).equals(edited))
            return hash
          })
        const rowsAfter = (id: number) =>
          sql.run("t", (c) => c.all<{ codec: number; depth: number; baseCodec: number | null }>(
            "SELECT c.codec, c.depth, b.codec AS baseCodec FROM chunks c LEFT JOIN chunks b ON b.id = c.base WHERE c.id > ? ORDER BY c.id",
            id
          ))
        const before = (rowsBefore.at(-1) as { id: number }).id
        const h1 = yield* edit(last, "edit 5", "edit 6")
        const first = yield* rowsAfter(before)
        const top = yield* sql.run("t", (c) => c.get<{ id: number }>("SELECT MAX(id) AS id FROM chunks")!.id)
        yield* edit(h1, "edit 6", "edit 7")
        return { first, second: yield* rowsAfter(top) }
      }).pipe(Effect.provide(Sqlite.layer(file, sqliteOptions())))
      assert.isAbove(next.first.length, 0)
      assert.isTrue(next.first.every((r) => r.codec === 0 || r.codec === 1))
      assert.deepStrictEqual(next.second, [{ codec: 3, depth: 1, baseCodec: 1 }])
    }))
})
