/**
 * Storing a snapshot prepared outside the write lock (`SnapshotStore.prepare`): given the
 * preparation, `put` writes exactly the rows it writes without one, and cuts, hashes and
 * compresses nothing inside the transaction; a preparation another writer made stale (the
 * same chunks stored meanwhile, a patch base replaced, the base pruned) still gives exactly the
 * rows of an unprepared put, and every version reads back exact.
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import { sqliteOptions } from "@forkjoin/history/HistoryStoreSqlite"
import * as SnapshotStore from "@forkjoin/history/SnapshotStore"
import { type Connection, Sqlite } from "@forkjoin/history/Sqlite"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { vi } from "vitest"
import { cutPoints } from "../src/internal/chunking.ts"
import { decodeManifest } from "../src/internal/snapshotCodec.ts"
import { noise, splice, text, utf8 } from "./snapshotBytes.ts"

// Counts the CPU-heavy calls made while `counting.on` (set around each write transaction).
const counting = vi.hoisted(() => {
  const state = { on: false, cuts: 0, hashes: 0, compressions: 0 }
  /** `fn`, counting its calls under `kind` while counting is on. */
  const counted = <A extends ReadonlyArray<unknown>, R>(kind: "cuts" | "hashes" | "compressions", fn: (...args: A) => R) =>
  (...args: A): R => {
    if (state.on) state[kind]++
    return fn(...args)
  }
  return Object.assign(state, { counted })
})
vi.mock("../src/internal/chunking.ts", async (importOriginal) => {
  const original = await importOriginal<typeof import("../src/internal/chunking.ts")>()
  return { ...original, cutPoints: counting.counted("cuts", original.cutPoints), cutPointsAfterEdit: counting.counted("cuts", original.cutPointsAfterEdit) }
})
vi.mock("../src/internal/snapshotCodec.ts", async (importOriginal) => {
  const original = await importOriginal<typeof import("../src/internal/snapshotCodec.ts")>()
  return { ...original, compressChunk: counting.counted("compressions", original.compressChunk) }
})
vi.mock("@forkjoin/patch/Bytes", async (importOriginal) => {
  const original = await importOriginal<typeof import("@forkjoin/patch/Bytes")>()
  return { ...original, sha256: counting.counted("hashes", original.sha256) }
})

const layer = () => Sqlite.layerMemory(sqliteOptions())

/** One write transaction's blobs: each with the blob it was edited from (stored before, or earlier in the list). */
type Write = ReadonlyArray<{ readonly bytes: Uint8Array; readonly base?: Uint8Array }>

/** Every row of the store, bodies included. */
const tables = (c: Connection) => ({
  chunks: c.all("SELECT c.id, hex(c.hash) AS hash, c.size, c.codec, c.base, c.depth, c.pack, c.pack_at, hex(b.data) AS body FROM chunks c LEFT JOIN chunk_bodies b ON b.id = c.id ORDER BY c.id"),
  snapshots: c.all("SELECT id, hash, size, base, depth, hex(manifest) AS manifest, pruned_at FROM snapshots ORDER BY id")
})

const rowCounts = (c: Connection) =>
  c.get("SELECT (SELECT COUNT(*) FROM chunks) AS chunks, (SELECT COUNT(*) FROM chunk_bodies) AS bodies, (SELECT COUNT(*) FROM snapshots) AS snapshots")

/** Prepares a write's blobs (unless `prepared` is false) outside any transaction; nothing is written. */
const prepareWrite = (write: Write, prepared: boolean, cache: SnapshotStore.ChunkCache) =>
  Effect.flatMap(Sqlite, (sql) =>
    sql.run("test", (c) => {
      const done: Array<SnapshotStore.Prepared | undefined> = []
      for (const [i, blob] of write.entries()) {
        if (!prepared) {
          done.push(undefined)
          continue
        }
        const at = blob.base === undefined ? -1 : write.findIndex((b) => b.bytes === blob.base)
        done.push(SnapshotStore.prepare(c, blob.bytes, sha256(blob.bytes), {
          base: blob.base === undefined ? undefined : sha256(blob.base),
          baseBytes: blob.base,
          cache,
          basePrepared: at >= 0 && at < i ? done[at] : undefined
        }))
      }
      return done
    }))

/** Stores a write's blobs in one transaction, counting the CPU-heavy calls made inside it. */
const putWrite = (write: Write, prepared: ReadonlyArray<SnapshotStore.Prepared | undefined>, cache: SnapshotStore.ChunkCache) =>
  Effect.flatMap(Sqlite, (sql) => {
    const hashes = write.map((blob) => ({ hash: sha256(blob.bytes), base: blob.base === undefined ? undefined : sha256(blob.base) }))
    return sql.transaction("test", (c) => {
      counting.on = true
      try {
        for (const [i, blob] of write.entries()) {
          SnapshotStore.put(c, blob.bytes, hashes[i]!.hash, { base: hashes[i]!.base, baseBytes: blob.base, cache, prepared: prepared[i] })
        }
      } finally {
        counting.on = false
      }
    })
  })

const exact = (bytes: Uint8Array) =>
  Effect.flatMap(Sqlite, (sql) =>
    sql.run("test", (c) => {
      const found = SnapshotStore.read(c, "test", sha256(bytes))
      return found._tag === "Stored" && Buffer.from(found.bytes).equals(Buffer.from(bytes))
    }))

/** New text, one-line and large edits, a rewrite, incompressible bytes, repeated content, and an edit of a file new in the same write. */
const writes = (): Array<Write> => {
  const out: Array<Write> = []
  let current = text(1, 1_500_000)
  out.push([{ bytes: current }])
  for (let k = 0; k < 12; k++) {
    const next = k === 6 ? splice(current, 400_000, 200_000, text(40 + k, 150_000)) : splice(current, 50_000 + k * 97_000, 12, utf8(`edited line ${k}\n`))
    out.push([{ bytes: next, base: current }])
    current = next
  }
  out.push([{ bytes: text(2, 1_300_000), base: current }])
  const binary = noise(3, 1_100_000)
  out.push([{ bytes: binary }])
  out.push([{ bytes: splice(binary, 700_000, 40, noise(4, 64)), base: binary }])
  out.push([{ bytes: Buffer.concat([text(5, 400_000), text(5, 400_000), text(5, 400_000)]) }])
  const pre = text(6, 900_000)
  out.push([{ bytes: pre }, { bytes: splice(pre, 450_000, 20, utf8("one new line\n")), base: pre }])
  return out
}

describe("SnapshotStore.prepare", () => {
  it.effect("prepared, a put writes exactly the same rows and cuts, hashes and compresses nothing inside the transaction", () =>
    Effect.gen(function*() {
      const run = (prepared: boolean) =>
        Effect.gen(function*() {
          const sql = yield* Sqlite
          const cache = SnapshotStore.makeChunkCache(32 * 1024 * 1024)
          const inside = { cuts: 0, hashes: 0, compressions: 0 }
          for (const write of writes()) {
            const before = yield* sql.run("t", rowCounts)
            const done = yield* prepareWrite(write, prepared, cache)
            // Preparing writes nothing.
            assert.deepStrictEqual(yield* sql.run("t", rowCounts), before)
            Object.assign(counting, { cuts: 0, hashes: 0, compressions: 0 })
            yield* putWrite(write, done, cache)
            inside.cuts += counting.cuts
            inside.hashes += counting.hashes
            inside.compressions += counting.compressions
            for (const blob of write) assert.isTrue(yield* exact(blob.bytes))
          }
          return { rows: yield* sql.run("t", tables), inside }
        }).pipe(Effect.provide(layer()))
      const plain = yield* run(false)
      const prepared = yield* run(true)
      // The counters see the work when it is done inside (a check of the check).
      assert.isAbove(plain.inside.cuts, 15)
      assert.isAbove(plain.inside.hashes, 30)
      assert.isAbove(plain.inside.compressions, 20)
      assert.deepStrictEqual(prepared.inside, { cuts: 0, hashes: 0, compressions: 0 })
      assert.deepStrictEqual(prepared.rows, plain.rows)
    }))

  it.effect("a preparation made stale by another writer still stores exactly the rows an unprepared put stores", () =>
    Effect.gen(function*() {
      const v1 = text(7, 1_000_000)
      const v2 = splice(v1, 500_000, 30, utf8("a changed line\n"))
      const fresh = text(8, 700_000)
      // What another writer does between the preparation and the transaction.
      const interferences: Record<string, (c: Connection) => void> = {
        "the same chunks stored under another snapshot": (c) => {
          const other = Buffer.concat([fresh.subarray(0, 500_000), utf8("another tail\n")])
          SnapshotStore.put(c, other, sha256(other))
        },
        "the patch base replaced by another chunk of the same size under its id": (c) => {
          // The chunk of v1 that v2's edit falls in, given other bytes (as if pruned and its id reused).
          const cuts = cutPoints(v1)
          const k = cuts.findIndex((end) => end > 500_000)
          const row = c.get<{ manifest: Uint8Array }>("SELECT manifest FROM snapshots WHERE hash = ?", sha256(v1))!
          const id = decodeManifest(new Uint8Array(row.manifest))[k]!
          const other = text(9, cuts[k]! - (k === 0 ? 0 : cuts[k - 1]!))
          c.run("UPDATE chunks SET hash = ?, codec = 0, base = NULL, depth = 0, pack = NULL, pack_at = 0 WHERE id = ?", Buffer.from(sha256(other).slice(7), "hex"), id)
          c.run("UPDATE chunk_bodies SET data = ? WHERE id = ?", other, id)
        },
        "the base pruned": (c) => {
          SnapshotStore.prune(c, "test", [sha256(v1)], "2026-12-01T00:00:00.000Z")
        }
      }
      for (const [name, interfere] of Object.entries(interferences)) {
        const run = (prepared: boolean) =>
          Effect.gen(function*() {
            const sql = yield* Sqlite
            const cache = SnapshotStore.makeChunkCache(32 * 1024 * 1024)
            yield* putWrite([{ bytes: v1 }], [], cache)
            const write: Write = [{ bytes: v2, base: v1 }, { bytes: fresh }]
            const done = yield* prepareWrite(write, prepared, cache)
            yield* sql.transaction("t", interfere)
            yield* putWrite(write, done, cache)
            for (const blob of write) assert.isTrue(yield* exact(blob.bytes), `${name}: reads back exact`)
            return yield* sql.run("t", tables)
          }).pipe(Effect.provide(layer()))
        const plain = yield* run(false)
        const prepared = yield* run(true)
        assert.deepStrictEqual(prepared, plain, name)
      }
    }))

  it.effect("an already stored snapshot prepares to nothing, and a preparation for other bytes is ignored", () =>
    Effect.gen(function*() {
      const sql = yield* Sqlite
      const a = text(10, 600_000)
      const b = text(11, 600_000)
      const c2 = text(12, 600_000)
      yield* putWrite([{ bytes: a }], [], SnapshotStore.makeChunkCache(0))
      const stored = yield* sql.run("t", (c) => SnapshotStore.prepare(c, a, sha256(a)))
      assert.isUndefined(stored.planned)
      // `b`'s preparation given to the put of `c2` must not lend it `b`'s chunk hashes.
      const forB = yield* sql.run("t", (c) => SnapshotStore.prepare(c, b, sha256(b)))
      assert.isDefined(forB.planned)
      yield* sql.transaction("t", (c) => SnapshotStore.put(c, c2, sha256(c2), { prepared: forB }))
      assert.isTrue(yield* exact(c2))
    }).pipe(Effect.provide(layer())))
})
