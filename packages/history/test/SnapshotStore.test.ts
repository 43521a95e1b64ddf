/**
 * The snapshot store on its own tables: every version reads back byte-exact (sizes around the
 * chunk bounds, random edit sequences), versions share chunks and store small patches one hop
 * from a whole chunk, patches and manifest chains stay bounded, a damaged or missing chunk is
 * reported as `Corrupt` naming the snapshot (never wrong bytes, not even from the cache), and
 * retention prunes exactly what it is given.
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import { sqliteOptions } from "@forkjoin/history/HistoryStoreSqlite"
import { cutPoints } from "../src/internal/chunking.ts"
import { helperRunning, helperStarted } from "../src/internal/hashAhead.ts"
import * as SnapshotStore from "@forkjoin/history/SnapshotStore"
import { type Connection, Sqlite } from "@forkjoin/history/Sqlite"
import type { StoreError } from "@forkjoin/history/HistoryStore"
import type { Sha256Hash } from "@forkjoin/schema"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import fc from "fast-check"
import { prng } from "../../../test/support/random.ts"
import { noise, splice, text, utf8 } from "./snapshotBytes.ts"
import { vi } from "vitest"

// Counts full scans (`cutPoints` over a whole version), to tell them from scans of an edit only.
const scans = vi.hoisted(() => ({ count: 0 }))
vi.mock("../src/internal/chunking.ts", async (importOriginal) => {
  const original = await importOriginal<typeof import("../src/internal/chunking.ts")>()
  return {
    ...original,
    cutPoints: (bytes: Uint8Array) => {
      scans.count++
      return original.cutPoints(bytes)
    }
  }
})

const layer = () => Sqlite.layerMemory(sqliteOptions())


/** Stores `bytes` (as an edit of `base`) in one transaction; returns the hash. */
const put = (bytes: Uint8Array, base?: Sha256Hash) =>
  Effect.gen(function*() {
    const sql = yield* Sqlite
    const hash = sha256(bytes)
    yield* sql.transaction("test", (c) => SnapshotStore.put(c, bytes, hash, { base }))
    return hash
  })

const read = (hash: Sha256Hash, cache?: SnapshotStore.ChunkCache) =>
  Effect.flatMap(Sqlite, (sql) => sql.run("test", (c) => SnapshotStore.read(c, "test", hash, cache)))

const bytesOf = (hash: Sha256Hash, cache?: SnapshotStore.ChunkCache) =>
  Effect.map(read(hash, cache), (found) => {
    if (found._tag !== "Stored") throw new Error(`${hash} is ${found._tag}`)
    return found.bytes
  })

const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b))

const stats = Effect.flatMap(Sqlite, (sql) =>
  sql.run("test", (c) => ({
    chunks: c.all<{ codec: number; n: number; stored: number; depth: number }>(
      "SELECT c.codec, COUNT(*) AS n, SUM(length(b.data)) AS stored, MAX(c.depth) AS depth FROM chunks c JOIN chunk_bodies b ON b.id = c.id GROUP BY c.codec ORDER BY c.codec"
    ),
    manifestDepth: c.get<{ d: number }>("SELECT MAX(depth) AS d FROM snapshots")!.d,
    stored: c.get<{ b: number }>("SELECT COALESCE(SUM(length(data)), 0) AS b FROM chunk_bodies")!.b
  })))

const corruptError = <A>(effect: Effect.Effect<A, StoreError, Sqlite>) =>
  Effect.map(Effect.flip(effect), (e) => ({ reason: e.reason, message: e.message }))

describe("SnapshotStore", () => {
  it.effect("round-trips sizes around the chunk bounds, text and binary, and stores each snapshot once", () =>
    Effect.gen(function*() {
      const sizes = [0, 1, 4095, 4096, 4097, 16_384, 65_536, 65_537, 300_000]
      for (const n of sizes) {
        for (const bytes of [text(n, n), new Uint8Array(n).map((_, i) => (i * 7919) % 251)]) {
          const hash = yield* put(bytes)
          yield* put(bytes)
          assert.isTrue(same(yield* bytesOf(hash), bytes), `${n} bytes`)
        }
      }
      const sql = yield* Sqlite
      assert.strictEqual(yield* sql.run("t", (c) => c.get<{ n: number }>("SELECT COUNT(*) AS n FROM snapshots")!.n), sizes.length * 2 - 1)
      assert.deepStrictEqual(yield* read(sha256(utf8("never stored"))), { _tag: "Missing" })
    }).pipe(Effect.provide(layer())))

  it.effect("versions of a file share chunks: 60 one-line edits of 1 MB store a few bytes each", () =>
    Effect.gen(function*() {
      let current = text(1, 1_000_000)
      let hash = yield* put(current)
      const first = yield* stats
      const versions: Array<[Sha256Hash, Uint8Array]> = [[hash, current]]
      for (let k = 0; k < 60; k++) {
        const at = current.indexOf(10, (k * 15_887) % current.length) + 1
        current = splice(current, at, 0, utf8(`  // edit ${k}\n`))
        hash = yield* put(current, hash)
        versions.push([hash, current])
      }
      const after = yield* stats
      // Each edit: one patch of tens of bytes (two when it moved a boundary), no new whole chunk.
      assert.isBelow(after.stored - first.stored, 60 * 200)
      assert.deepStrictEqual(after.chunks.find((c) => c.codec === 1), first.chunks.find((c) => c.codec === 1))
      assert.isAtLeast(after.chunks.find((c) => c.codec === 3)!.n, 60)
      assert.strictEqual(after.chunks.find((c) => c.codec === 3)!.depth, 1)
      for (const [h, bytes] of versions) assert.isTrue(same(yield* bytesOf(h), bytes))
    }).pipe(Effect.provide(layer())))

  // 350 versions of 1.2 MB, each read back: CPU-bound, past the suite's minute on a loaded machine.
  it.effect("a chunk edited again and again stays one hop from a whole chunk; its patch is bounded, manifests chain at most 64", () =>
    Effect.gen(function*() {
      // 150 edits of one spot: each patch replaces the last one's literal, nothing grows.
      let current = text(2, 1_200_000)
      let hash = yield* put(current)
      const whole = (yield* stats).chunks.find((c) => c.codec === 1)!.n
      const versions: Array<[Sha256Hash, Uint8Array]> = []
      for (let k = 0; k < 150; k++) {
        current = splice(current, 600_000, 3, utf8(String(k).padStart(3, "0")))
        hash = yield* put(current, hash)
        versions.push([hash, current])
      }
      let s = yield* stats
      assert.strictEqual(Math.max(...s.chunks.map((c) => c.depth)), 1)
      assert.strictEqual(s.manifestDepth, 64)
      assert.strictEqual(s.chunks.find((c) => c.codec === 1)!.n, whole)
      // 200 lines inserted at different places of one chunk: every patch carries all of them since
      // its whole chunk, so past a sixteenth of the chunk it is stored whole again.
      const sql = yield* Sqlite
      for (let k = 0; k < 200; k++) {
        current = splice(current, current.indexOf(10, 600_100 + (k * 397) % 16_000) + 1, 0, utf8(`  inserted line ${k} of the chunk, a longer one\n`))
        hash = yield* put(current, hash)
        versions.push([hash, current])
      }
      s = yield* stats
      assert.strictEqual(Math.max(...s.chunks.map((c) => c.depth)), 1)
      assert.isAbove(s.chunks.find((c) => c.codec === 1)!.n, whole)
      const largest = yield* sql.run("t", (c) =>
        c.get<{ ratio: number }>("SELECT MAX(1.0 * length(b.data) / c.size) AS ratio FROM chunks c JOIN chunk_bodies b ON b.id = c.id WHERE c.codec = 3")!.ratio)
      assert.isAtMost(largest, 1 / 16)
      for (const [h, bytes] of versions) assert.isTrue(same(yield* bytesOf(h), bytes))
    }).pipe(Effect.provide(layer())), 300_000)

  it.effect("random edit sequences read back byte-exact at every version (property)", () =>
    Effect.gen(function*() {
      const edit = fc.record({
        at: fc.double({ min: 0, max: 1, noNaN: true }),
        removed: fc.integer({ min: 0, max: 40_000 }),
        inserted: fc.oneof(fc.uint8Array({ maxLength: 300 }), fc.integer({ min: 0, max: 70_000 }).map((n) => text(n, n)))
      })
      const cases = fc.sample(fc.tuple(fc.integer({ min: 0, max: 250_000 }), fc.array(edit, { minLength: 1, maxLength: 12 })), {
        numRuns: 12,
        seed: 14
      })
      for (const [size, edits] of cases) {
        let current = text(size, size)
        let hash = yield* put(current)
        const versions: Array<[Sha256Hash, Uint8Array]> = [[hash, current]]
        for (const e of edits) {
          current = splice(current, Math.floor(e.at * current.length), e.removed, e.inserted)
          hash = yield* put(current, hash)
          versions.push([hash, current])
        }
        for (const [h, bytes] of versions) assert.isTrue(same(yield* bytesOf(h), bytes))
      }
    }).pipe(Effect.provide(layer())))

  it.effect("given the base's bytes, a put stores exactly the rows a full scan of the new version stores", () =>
    Effect.gen(function*() {
      const tables = (c: Connection) => ({
        chunks: c.all("SELECT c.id, hex(c.hash) AS hash, c.size, c.codec, c.base, c.depth, c.pack, c.pack_at, hex(b.data) AS body FROM chunks c LEFT JOIN chunk_bodies b ON b.id = c.id ORDER BY c.id"),
        snapshots: c.all("SELECT id, hash, size, base, depth, hex(manifest) AS manifest FROM snapshots ORDER BY id")
      })
      const run = (withBytes: boolean) =>
        Effect.gen(function*() {
          const sql = yield* Sqlite
          let current = text(31, 1_200_000)
          let hash = sha256(current)
          yield* sql.transaction("t", (c) => SnapshotStore.put(c, current, hash))
          const versions: Array<[Sha256Hash, Uint8Array]> = []
          const next = prng(32).uint32
          scans.count = 0
          for (let k = 0; k < 40; k++) {
            // One-line edits, a few large ones, and the last chunks cut off.
            const at = next() % current.length
            const edited = k === 20 ? current.subarray(0, 900_000) : k % 10 === 5 ? splice(current, at, 200_000, text(k, 150_000)) : splice(current, at, next() % 30, utf8(`edit ${k}\n`))
            const h = sha256(edited)
            const before = current
            const base = hash
            yield* sql.transaction("t", (c) => SnapshotStore.put(c, edited, h, { base, baseBytes: withBytes ? before : undefined }))
            current = edited
            hash = h
            versions.push([h, edited])
          }
          const fullScans = scans.count
          for (const [h, bytes] of versions) assert.isTrue(same(yield* bytesOf(h), bytes))
          return { ...(yield* sql.run("t", tables)), fullScans }
        }).pipe(Effect.provide(layer()))
      const edited = yield* run(true)
      const scanned = yield* run(false)
      assert.strictEqual(scanned.fullScans, 40)
      assert.strictEqual(edited.fullScans, 0)
      assert.deepStrictEqual({ ...edited, fullScans: 0 }, { ...scanned, fullScans: 0 })
    }))

  it.effect("a damaged chunk is Corrupt, naming the snapshot and the chunk; the cache never masks it", () =>
    Effect.gen(function*() {
      const sql = yield* Sqlite
      const v1 = text(3, 200_000)
      const v2 = splice(v1, 50_000, 10, utf8("an edited line\n"))
      const h1 = yield* put(v1)
      const h2 = yield* put(v2, h1)
      // A whole compressed chunk of both versions: overwrite bytes inside its compressed data.
      const victim = yield* sql.run("t", (c) => c.get<{ id: number }>("SELECT id FROM chunks WHERE codec = 1 ORDER BY id LIMIT 1 OFFSET 1")!.id)
      yield* sql.run("t", (c) => c.run("UPDATE chunk_bodies SET data = substr(data, 1, 100) || randomblob(40) || substr(data, 141) WHERE id = ?", victim))
      for (const h of [h1, h2]) {
        const e = yield* corruptError(read(h))
        assert.strictEqual(e.reason, "Corrupt")
        assert.include(e.message, `snapshot ${h}`)
      }
      // A body that decodes to the right length but other bytes: the snapshot hash catches it.
      yield* sql.run("t", (c) => {
        c.run("UPDATE chunks SET codec = 0 WHERE id = ?", victim)
        c.run("UPDATE chunk_bodies SET data = zeroblob((SELECT size FROM chunks WHERE id = ?)) WHERE id = ?", victim, victim)
      })
      const e = yield* corruptError(read(h1))
      assert.include(e.message, `snapshot ${h1}: chunk ${victim} does not match its hash`)
      // A missing body, then a missing chunk.
      yield* sql.run("t", (c) => c.run("DELETE FROM chunk_bodies WHERE id = ?", victim))
      assert.include((yield* corruptError(read(h2))).message, `chunk ${victim}'s body is missing`)
      yield* sql.run("t", (c) => c.run("DELETE FROM chunks WHERE id = ?", victim))
      assert.include((yield* corruptError(read(h2))).message, `chunk ${victim} is missing`)
    }).pipe(Effect.provide(layer())))

  it.effect("large reads hash on the helper thread while they are written: exact bytes, and damage is still Corrupt", () =>
    Effect.gen(function*() {
      const sql = yield* Sqlite
      const v1 = text(21, 3 * 1024 * 1024)
      const v2 = splice(v1, 1_500_000, 10, utf8("an edited line\n"))
      const h1 = yield* put(v1)
      const h2 = yield* put(v2, h1)
      // The second large read starts the helper; reads use it once it runs.
      for (let i = 0; i < 2; i++) assert.isTrue(same(yield* bytesOf(h2), v2))
      yield* Effect.promise(helperStarted)
      assert.isTrue(helperRunning(), "the helper thread started")
      for (const [h, v] of [[h1, v1], [h2, v2]] as const) assert.isTrue(same(yield* bytesOf(h), v))
      // A chunk both share, replaced by as many other bytes: only the hash can tell.
      const victim = yield* sql.run("t", (c) => c.get<{ id: number }>("SELECT id FROM chunks WHERE codec = 1 ORDER BY id LIMIT 1 OFFSET 3")!.id)
      yield* sql.run("t", (c) => {
        c.run("UPDATE chunks SET codec = 0 WHERE id = ?", victim)
        c.run("UPDATE chunk_bodies SET data = zeroblob((SELECT size FROM chunks WHERE id = ?)) WHERE id = ?", victim, victim)
      })
      for (const h of [h1, h2]) assert.include((yield* corruptError(read(h))).message, `snapshot ${h}: chunk ${victim} does not match its hash`)
      assert.isTrue(helperRunning())
    }).pipe(Effect.provide(layer())))

  it.effect("a new version stored against a damaged chunk still reads back exact: its patch carries every byte they differ in", () =>
    Effect.gen(function*() {
      const sql = yield* Sqlite
      const v1 = text(6, 200_000)
      const h1 = yield* put(v1)
      // The chunk the edit falls in (v1's chunks got ids 1..n in order) gets 8 wrong bytes just
      // after the edit, stored raw: a patch copying them would rebuild other bytes than v2's.
      const at = 100_000
      const cuts = cutPoints(v1)
      const k = cuts.findIndex((cut) => cut > at)
      const start = k === 0 ? 0 : cuts[k - 1]!
      const damaged = Buffer.from(v1.subarray(start, cuts[k]!))
      damaged.fill(0x21, at - start + 20, at - start + 28)
      yield* sql.run("t", (c) => {
        c.run("UPDATE chunks SET codec = 0 WHERE id = ?", k + 1)
        c.run("UPDATE chunk_bodies SET data = ? WHERE id = ?", damaged, k + 1)
      })
      const v2 = splice(v1, at, 5, utf8("edited"))
      const h2 = yield* put(v2, h1)
      assert.isTrue(same(yield* bytesOf(h2), v2))
      const patch = yield* sql.run("t", (c) => c.get<{ n: number }>("SELECT length(b.data) AS n FROM chunks c JOIN chunk_bodies b ON b.id = c.id WHERE c.base = ?", k + 1))
      // The edit and the damaged stretch after it travel in the patch as literal bytes.
      assert.isAtLeast(patch!.n, 28)
      assert.strictEqual((yield* corruptError(read(h1))).reason, "Corrupt")
    }).pipe(Effect.provide(layer())))

  it.effect("a verified read fills the cache; a later read of another version decompresses only what differs", () =>
    Effect.gen(function*() {
      const sql = yield* Sqlite
      const v1 = text(4, 400_000)
      const v2 = splice(v1, 200_000, 0, utf8("inserted\n"))
      const h1 = yield* put(v1)
      const h2 = yield* put(v2, h1)
      const cache = SnapshotStore.makeChunkCache(8 * 1024 * 1024)
      assert.isTrue(same(yield* bytesOf(h1, cache), v1))
      // With every shared chunk's body gone from the table, only the cache can supply them.
      yield* sql.run("t", (c) => c.run("UPDATE chunk_bodies SET data = x'' WHERE id IN (SELECT id FROM chunks WHERE codec = 1)"))
      assert.isTrue(same(yield* bytesOf(h2, cache), v2))
      assert.strictEqual((yield* corruptError(read(h2))).reason, "Corrupt")
      // A cache too small for any chunk holds nothing.
      const tiny = SnapshotStore.makeChunkCache(10)
      tiny.set("a", new Uint8Array(11))
      assert.isUndefined(tiny.get("a"))
    }).pipe(Effect.provide(layer())))

  it.effect("raw chunks of one snapshot share one body row (a pack); a short pack is Corrupt naming the chunk", () =>
    Effect.gen(function*() {
      const sql = yield* Sqlite
      const v1 = noise(21, 2_000_000)
      const h1 = yield* put(v1)
      const rows = yield* sql.run("t", (c) => c.all<{ id: number; codec: number; pack: number | null; pack_at: number; size: number }>("SELECT id, codec, pack, pack_at, size FROM chunks ORDER BY id"))
      assert.isAbove(rows.length, 5)
      assert.isTrue(rows.every((r) => r.codec === 0))
      assert.deepStrictEqual(yield* sql.run("t", (c) => c.all("SELECT id FROM chunk_bodies")), [{ id: rows[0]!.id }])
      // Members point at the first chunk's row, at consecutive offsets.
      let at = 0
      for (const [i, r] of rows.entries()) {
        assert.deepStrictEqual([r.pack, r.pack_at], [i === 0 ? null : rows[0]!.id, at])
        at += r.size
      }
      assert.isTrue(same(yield* bytesOf(h1), v1))
      // A local edit shares every other chunk with the packed version and stores a small delta.
      const v2 = splice(v1, 1_000_000, 4, utf8("edit"))
      const h2 = yield* put(v2, h1)
      assert.isTrue(same(yield* bytesOf(h2), v2))
      assert.isBelow((yield* stats).stored, v1.length + 1_000)
      // A pack cut short: the chunks past its end are reported, never read as other bytes.
      yield* sql.run("t", (c) => c.run("UPDATE chunk_bodies SET data = substr(data, 1, 1200000)"))
      const e = yield* corruptError(read(h1))
      assert.include(e.message, `snapshot ${h1}: chunk`)
      assert.include(e.message, "does not fit in its body")
    }).pipe(Effect.provide(layer())))

  it.effect("prune keeps a pack while one of its chunks is needed and drops it with the last", () =>
    Effect.gen(function*() {
      const sql = yield* Sqlite
      const v1 = noise(22, 1_400_000)
      const h1 = yield* put(v1)
      const v2 = splice(v1, 700_000, 8, utf8("#edited#"))
      const h2 = yield* put(v2, h1)
      const v3 = noise(23, 1_400_000)
      const h3 = yield* put(v3, h2)
      const bodies = () => sql.run("t", (c) => c.get<{ n: number }>("SELECT COUNT(*) AS n FROM chunk_bodies")!.n)
      const packs = yield* bodies()
      // v1 goes; v2 shares all but one of its chunks, so v1's pack stays.
      const first = yield* sql.transaction("t", (c) => SnapshotStore.prune(c, "test", [h1], "2026-12-01T00:00:00.000Z"))
      assert.strictEqual(first.snapshots, 1)
      assert.strictEqual(yield* bodies(), packs)
      assert.isTrue(same(yield* bytesOf(h2), v2))
      // v2 goes too: the pack's chunks are needed by nothing, and its whole row is dropped.
      const second = yield* sql.transaction("t", (c) => SnapshotStore.prune(c, "test", [h2], "2026-12-01T00:00:00.000Z"))
      assert.isAbove(second.chunks, 5)
      assert.isAbove(second.bytes, 1_390_000)
      assert.isBelow(yield* bodies(), packs)
      assert.isTrue(same(yield* bytesOf(h3), v3))
    }).pipe(Effect.provide(layer())))

  it.effect("prune marks snapshots, drops the chunks only they need, and keeps every other version exact", () =>
    Effect.gen(function*() {
      const sql = yield* Sqlite
      let current = text(5, 300_000)
      let hash = yield* put(current)
      const versions: Array<[Sha256Hash, Uint8Array]> = [[hash, current]]
      for (let k = 0; k < 40; k++) {
        // Rewrites of a region: new whole chunks as well as patches.
        current = k % 10 === 9 ? splice(current, 100_000, 30_000, text(100 + k, 30_000)) : splice(current, (k * 7_001) % 290_000, 1, utf8("#"))
        hash = yield* put(current, hash)
        versions.push([hash, current])
      }
      const going = versions.slice(0, 30).map(([h]) => h)
      const before = yield* stats
      const counts = yield* sql.transaction("t", (c) => SnapshotStore.prune(c, "test", going, "2026-12-01T00:00:00.000Z"))
      assert.strictEqual(counts.snapshots, 30)
      assert.isAbove(counts.chunks, 0)
      assert.strictEqual(counts.bytes, before.stored - (yield* stats).stored)
      for (const [h, bytes] of versions.slice(30)) assert.isTrue(same(yield* bytesOf(h), bytes))
      for (const h of going) assert.deepStrictEqual(yield* read(h), { _tag: "Pruned", prunedAt: "2026-12-01T00:00:00.000Z" })
      assert.strictEqual(yield* sql.run("t", (c) => SnapshotStore.stateOf(c, going[0]!)), "pruned")
      // Pruning again changes nothing; storing a pruned version again brings it back.
      assert.deepStrictEqual(yield* sql.transaction("t", (c) => SnapshotStore.prune(c, "test", going, "2026-12-02T00:00:00.000Z")), {
        snapshots: 0,
        chunks: 0,
        bytes: 0
      })
      yield* put(versions[3]![1], versions[39]![0])
      assert.isTrue(same(yield* bytesOf(versions[3]![0]), versions[3]![1]))
      for (const [h, bytes] of versions.slice(30)) assert.isTrue(same(yield* bytesOf(h), bytes))
    }).pipe(Effect.provide(layer())))
})
