/**
 * The history views (SPEC §4.4): each view's result, pagination that stays stable while
 * other connections commit, caps, coverage, and thread scope / path refusal.
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { HistoryViews, netChanges } from "@forkjoin/history/Views"
import { assert, describe, it } from "@effect/vitest"
import { EnvironmentId, RelativePath, ThreadId, type TimelinePage } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { commit, draftOf, fork, ids, layerBoth } from "./viewFixtures.ts"

const env = EnvironmentId.make("env-views")
const memory = () => layerBoth(":memory:", { environmentId: env })
const tmp = () => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-views-")))

describe("HistoryViews.timeline", () => {
  it.effect("lists a thread's records in commit order, and a turn's within the caller's scope", () =>
    Effect.gen(function*() {
      const views = yield* HistoryViews
      const a1 = yield* commit(env, "A", "t1", [{ add: "x", after: "1\n" }])
      yield* commit(env, "B", "t1", [{ add: "y", after: "1\n" }])
      const a2 = yield* commit(env, "A", "t2", [{ update: "x", before: "1\n", after: "2\n" }])
      const page = yield* views.timeline({ caller: "A" })
      assert.deepStrictEqual(ids(page.items), [a1.recordId, a2.recordId])
      assert.strictEqual(page.nextCursor, null)
      assert.strictEqual(page.truncated, false)
      assert.deepStrictEqual(page.coverage, {
        records: 2, exact: 2, partial: 0, uncertain: 0, gaps: 0, providerAggregates: 0, verifiedAggregates: 0
      })
      // Turn t1 has records of A and B; A (unrelated to B) sees only its own.
      const turn = yield* views.timeline({ caller: "A", turn: "t1" })
      assert.deepStrictEqual(ids(turn.items), [a1.recordId])
    }).pipe(Effect.provide(memory())))

  it.effect("scope: a parent sees registered descendants; a child never sees its parent or siblings", () =>
    Effect.gen(function*() {
      const views = yield* HistoryViews
      yield* fork("child", "parent")
      yield* fork("grandchild", "child")
      yield* fork("sibling", "parent")
      const p = yield* commit(env, "parent", "t", [{ add: "p", after: "p\n" }])
      const g = yield* commit(env, "grandchild", "t", [{ add: "g", after: "g\n" }])
      const s = yield* commit(env, "sibling", "t", [{ add: "s", after: "s\n" }])
      const u = yield* commit(env, "unregistered", "t", [{ add: "u", after: "u\n" }])
      const all = yield* views.timeline({ caller: "parent", descendants: true })
      assert.deepStrictEqual(ids(all.items), [p.recordId, g.recordId, s.recordId])
      const ofGrandchild = yield* views.timeline({ caller: "parent", thread: "grandchild" })
      assert.deepStrictEqual(ids(ofGrandchild.items), [g.recordId])
      const refused = yield* Effect.flip(views.timeline({ caller: "child", thread: "parent" }))
      assert.strictEqual(refused._tag, "ViewError")
      assert.strictEqual((refused as any).reason, "NotVisible")
      const childTurn = yield* views.timeline({ caller: "child", turn: "t" })
      assert.deepStrictEqual(ids(childTurn.items), [g.recordId])
      const unregistered = yield* views.timeline({ caller: "unregistered", turn: "t" })
      assert.deepStrictEqual(ids(unregistered.items), [u.recordId])
      // Re-registering with another parent, or into a cycle, is refused.
      const store = yield* HistoryStore
      const moved = yield* Effect.flip(store.registerThread(ThreadId.make("child"), ThreadId.make("sibling")))
      assert.strictEqual(moved.reason, "Constraint")
      const cycle = yield* Effect.flip(store.registerThread(ThreadId.make("parent"), ThreadId.make("grandchild")))
      assert.strictEqual(cycle.reason, "Constraint")
      yield* fork("child", "parent") // idempotent
    }).pipe(Effect.provide(memory())))

  it.effect("caps: limit clamped to 1..1000 and reported; a byte cap cuts the page and pagination continues", () =>
    Effect.gen(function*() {
      const views = yield* HistoryViews
      for (let i = 0; i < 5; i++) yield* commit(env, "A", "t", [{ add: `f${i}`, after: "x\n" }])
      const big = yield* views.timeline({ caller: "A", limit: 5000 })
      assert.deepStrictEqual([big.caps.limit, big.caps.limitClamped, big.caps.requestedLimit], [1000, true, 5000])
      const zero = yield* views.timeline({ caller: "A", limit: 0 })
      assert.deepStrictEqual([zero.caps.limit, zero.caps.limitClamped, zero.items.length], [1, true, 1])
      const one = JSON.stringify(big.items[0]).length
      const capped = yield* views.timeline({ caller: "A", maxBytes: Math.max(1024, one * 2 + 10) })
      assert.isTrue(capped.truncated)
      assert.isTrue(capped.caps.bytesCapApplied)
      assert.isTrue(capped.items.length < 5)
      assert.isNotNull(capped.nextCursor)
      const seen = [...ids(capped.items)]
      let cursor: string | null = capped.nextCursor
      while (cursor !== null) {
        const next: TimelinePage = yield* views.timeline({ caller: "A", maxBytes: 1024, cursor })
        seen.push(...ids(next.items))
        cursor = next.nextCursor
      }
      assert.deepStrictEqual(seen, ids(big.items))
    }).pipe(Effect.provide(memory())))

  it.effect("refuses a cursor of another query, a forged cursor and garbage", () =>
    Effect.gen(function*() {
      const views = yield* HistoryViews
      for (let i = 0; i < 3; i++) yield* commit(env, "A", "t", [{ add: `f${i}`, after: "x\n" }])
      yield* fork("B", "A")
      const page = yield* views.timeline({ caller: "A", limit: 1 })
      const other = yield* Effect.flip(views.timeline({ caller: "A", thread: "B", cursor: page.nextCursor! }))
      assert.strictEqual((other as any).reason, "InvalidCursor")
      const decoded = JSON.parse(Buffer.from(page.nextCursor!, "base64url").toString())
      assert.deepStrictEqual(Object.keys(decoded).sort(), ["o", "q", "s", "t"])
      assert.strictEqual(decoded.s, "A")
      const forged = Buffer.from(JSON.stringify({ ...decoded, t: "2000-01-01T00:00:00.000Z" })).toString("base64url")
      const forgedError = yield* Effect.flip(views.timeline({ caller: "A", cursor: forged }))
      assert.strictEqual((forgedError as any).reason, "InvalidCursor")
      const garbage = yield* Effect.flip(views.timeline({ caller: "A", cursor: "%%%" }))
      assert.strictEqual((garbage as any).reason, "InvalidCursor")
    }).pipe(Effect.provide(memory())))

  it.effect("pages stay stable while another connection commits to other threads and to the same thread", () =>
    Effect.gen(function*() {
      const dir = tmp()
      const file = path.join(dir, "history.db")
      const writer = layerBoth(file, { environmentId: env })
      const expected: Array<string> = []
      yield* Effect.gen(function*() {
        for (let i = 0; i < 25; i++) {
          expected.push((yield* commit(env, "A", "t", [{ add: `a${i}`, after: `${i}\n` }])).recordId)
          yield* commit(env, `other-${i % 3}`, "t", [{ add: `o${i}`, after: `${i}\n` }])
        }
      }).pipe(Effect.provide(writer))
      // The reader pages through A while the writer (its own connection) keeps committing.
      const seen: Array<string> = []
      const seenFile: Array<string> = []
      yield* Effect.gen(function*() {
        const views = yield* HistoryViews
        let cursor: string | null | undefined = undefined
        let fileCursor: string | null | undefined = undefined
        let round = 0
        do {
          const page: any = yield* views.timeline({ caller: "A", limit: 4, ...(cursor ? { cursor } : {}) })
          seen.push(...ids(page.items))
          cursor = page.nextCursor
          const fp: any = yield* views.file({ caller: "A", path: "shared", limit: 2, ...(fileCursor ? { cursor: fileCursor } : {}) })
          seenFile.push(...fp.items.map((i: any) => i.recordId))
          fileCursor = fp.nextCursor
          yield* Effect.gen(function*() {
            yield* Effect.all([
              commit(env, `other-${round}`, "t", [{ add: `late${round}`, after: "l\n" }]),
              commit(env, "other-x", "t", [{ add: `shared`, after: `${round}\n` }]).pipe(Effect.ignore)
            ], { concurrency: "unbounded" })
            if (round < 3) {
              expected.push((yield* commit(env, "A", "t", [{ add: `new${round}`, after: "n\n" }])).recordId)
            }
          }).pipe(Effect.provide(writer))
          round++
        } while (cursor !== null || round < 4)
      }).pipe(Effect.provide(layerBoth(file, { environmentId: env })))
      assert.deepStrictEqual(seen, expected)
      // other-x is not in A's scope: the file view never shows its records.
      assert.deepStrictEqual(seenFile, [])
      fs.rmSync(dir, { recursive: true, force: true })
    }))
})

describe("HistoryViews.turn", () => {
  it("netChanges follows moves, drops transient files and unchanged content", () => {
    const e = EnvironmentId.make("e")
    const recs = [
      draftOf(e, "A", "t", [{ update: "a", before: "0\n", after: "1\n" }, { add: "tmp", after: "x\n" }]),
      draftOf(e, "A", "t", [{ move: "a", to: "b", before: "1\n", after: "2\n" }, { delete: "tmp", before: "x\n" }]),
      draftOf(e, "A", "t", [{ move: "b", to: "c", before: "2\n", after: "3\n" }, { delete: "d", before: "d\n" }]),
      draftOf(e, "A", "t", [{ update: "same", before: "s\n", after: "t\n" }]),
      draftOf(e, "A", "t", [{ update: "same", before: "t\n", after: "s\n" }])
    ].map((d, i) => ({ ...d, schemaVersion: 1 as const, commitOrdinal: i + 1, committedAt: "2026-11-29T12:00:00.000Z" as any }))
    const net = netChanges(recs)
    assert.deepStrictEqual(net.map((n) => [n.kind, n.path, n.moveFrom]), [["move", "c", "a"], ["delete", "d", undefined]])
    assert.strictEqual(net[0]!.before!.hash, recs[0]!.changes[0]!.before!.hash)
    assert.strictEqual(net[0]!.after!.hash, recs[2]!.changes[0]!.after!.hash)
    assert.deepStrictEqual(net[0]!.records, [recs[0]!.recordId, recs[1]!.recordId, recs[2]!.recordId])
  })

  it.effect("aggregates a turn of 30 records into per-path pages, pinned while more records arrive", () =>
    Effect.gen(function*() {
      const views = yield* HistoryViews
      for (let i = 0; i < 30; i++) yield* commit(env, "A", "t", [{ add: `p${String(i).padStart(2, "0")}`, after: "x\n" }])
      const first = yield* views.turn({ caller: "A", turn: "t", limit: 10 })
      assert.deepStrictEqual(first.items.map((i) => i.path), Array.from({ length: 10 }, (_, i) => `p0${i}`))
      assert.strictEqual(first.coverage.records, 30)
      yield* commit(env, "A", "t", [{ add: "p000", after: "late\n" }])
      const rest: Array<string> = []
      let cursor = first.nextCursor
      while (cursor !== null) {
        const page = yield* views.turn({ caller: "A", turn: "t", limit: 10, cursor })
        rest.push(...page.items.map((i) => i.path))
        cursor = page.nextCursor
      }
      assert.strictEqual(rest.length, 20)
      assert.notInclude(rest, "p000")
      assert.deepStrictEqual((yield* views.turn({ caller: "B", turn: "t" })).items, [])
    }).pipe(Effect.provide(memory())))
})

describe("HistoryViews.diff", () => {
  it.effect("renders a unified diff from the blobs, caps it by lines, summarises binary content", () =>
    Effect.gen(function*() {
      const views = yield* HistoryViews
      const before = Array.from({ length: 50 }, (_, i) => `line ${i}`).join("\n") + "\n"
      const after = before.replace("line 10\n", "line ten\n").replace("line 40\n", "")
      const r = yield* commit(env, "A", "t", [{ update: "src/a.txt", before, after }, { add: "n.txt", after: "new\n" }])
      const page = yield* views.diff({ caller: "A", recordId: r.recordId })
      assert.strictEqual(page.items.length, 2)
      assert.strictEqual(
        page.items[0]!.diff,
        [
          "--- a/src/a.txt", "+++ b/src/a.txt", "@@ -8,7 +8,7 @@", " line 7", " line 8", " line 9", "-line 10",
          "+line ten", " line 11", " line 12", " line 13", "@@ -38,7 +38,6 @@", " line 37", " line 38", " line 39",
          "-line 40", " line 41", " line 42", " line 43", ""
        ].join("\n")
      )
      assert.deepStrictEqual([page.items[0]!.linesAdded, page.items[0]!.linesRemoved], [1, 2])
      assert.strictEqual(page.items[1]!.diff, "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+new\n")
      const capped = yield* views.diff({ caller: "A", recordId: r.recordId, maxLines: 5 })
      assert.isTrue(capped.truncated)
      assert.isTrue(capped.items[0]!.truncated)
      assert.strictEqual(capped.items[0]!.diff.split("\n").length - 1, 5)
      assert.isNotNull(capped.nextCursor)
      const rest = yield* views.diff({ caller: "A", recordId: r.recordId, maxLines: 5, cursor: capped.nextCursor! })
      assert.deepStrictEqual(rest.items.map((i) => i.path), ["n.txt"])
      const hidden = yield* Effect.flip(views.diff({ caller: "B", recordId: r.recordId }))
      assert.strictEqual((hidden as any).reason, "NotFound")
    }).pipe(Effect.provide(memory())))

  it.effect("summarises binary changes", () =>
    Effect.gen(function*() {
      const views = yield* HistoryViews
      const store = yield* HistoryStore
      const d = draftOf(env, "A", "t", [{ update: "img.bin", before: "a", after: "b" }])
      const bin = {
        ...d,
        changes: d.changes.map((c) => ({
          ...c,
          before: { ...c.before!, encoding: "binary" as const },
          after: { ...c.after!, encoding: "binary" as const }
        }))
      }
      yield* store.putBlobs([new TextEncoder().encode("a"), new TextEncoder().encode("b")])
      const r = yield* store.appendRecord(bin, Date.now())
      const page = yield* views.diff({ caller: "A", recordId: r.recordId })
      assert.isTrue(page.items[0]!.binary)
      assert.strictEqual(page.items[0]!.diff, "Binary files a/img.bin and b/img.bin differ (1 -> 1 bytes)\n")
    }).pipe(Effect.provide(memory())))
})

describe("HistoryViews.file", () => {
  it.effect("follows moves in both directions and stays inside the caller's scope", () =>
    Effect.gen(function*() {
      const views = yield* HistoryViews
      yield* fork("child", "A")
      const r1 = yield* commit(env, "A", "t", [{ add: "old.txt", after: "1\n" }])
      const r2 = yield* commit(env, "child", "t", [{ update: "old.txt", before: "1\n", after: "2\n" }])
      yield* commit(env, "B", "t", [{ update: "old.txt", before: "2\n", after: "b\n" }])
      const r3 = yield* commit(env, "A", "t", [{ move: "old.txt", to: "new.txt", before: "2\n", after: "3\n" }])
      const r4 = yield* commit(env, "A", "t", [{ update: "new.txt", before: "3\n", after: "4\n" }])
      const r5 = yield* commit(env, "A", "t", [{ add: "old.txt", after: "unrelated\n" }])
      const ofNew = yield* views.file({ caller: "A", path: "new.txt" })
      assert.deepStrictEqual(ofNew.items.map((i) => i.recordId), [r1, r2, r3, r4].map((r) => r.recordId))
      const ofOld = yield* views.file({ caller: "A", path: "old.txt" })
      assert.deepStrictEqual(ofOld.items.map((i) => i.recordId), [r1, r2, r3, r4, r5].map((r) => r.recordId))
      const fromChild = yield* views.file({ caller: "child", path: "new.txt" })
      assert.deepStrictEqual(fromChild.items.map((i) => i.recordId), [r2.recordId])
      const paged = yield* views.file({ caller: "A", path: "new.txt", limit: 3 })
      const next = yield* views.file({ caller: "A", path: "new.txt", limit: 3, cursor: paged.nextCursor! })
      assert.deepStrictEqual([...paged.items, ...next.items].map((i) => i.recordId), ofNew.items.map((i) => i.recordId))
    }).pipe(Effect.provide(memory())))

  it.effect("refuses paths outside the workspace instead of normalising them", () =>
    Effect.gen(function*() {
      const dir = tmp()
      const ws = path.join(dir, "ws")
      fs.mkdirSync(ws)
      yield* Effect.gen(function*() {
        const views = yield* HistoryViews
        for (const p of ["../outside.txt", "a/../../x", "/etc/passwd", path.join(dir, "other.txt"), "a//b", "./a", ""]) {
          const e = yield* Effect.flip(views.file({ caller: "A", path: p }))
          assert.strictEqual((e as any).reason, "PathRefused", p)
        }
        const inside = yield* views.file({ caller: "A", path: path.join(ws, "a.txt") })
        assert.deepStrictEqual(inside.items, [])
      }).pipe(Effect.provide(layerBoth(path.join(dir, "h.db"), { environmentId: env, root: ws })))
      fs.rmSync(dir, { recursive: true, force: true })
    }))

  it.effect("a '..' that stays inside the workspace pops a segment: a/../f.txt names f.txt", () =>
    Effect.gen(function*() {
      const dir = tmp()
      const ws = path.join(dir, "ws")
      fs.mkdirSync(ws)
      yield* Effect.gen(function*() {
        const views = yield* HistoryViews
        const r = yield* commit(env, "A", "t", [{ add: "f.txt", after: "1\n" }])
        for (const p of ["a/../f.txt", "a/b/../../f.txt", path.join(ws, "a", "..", "f.txt")]) {
          const page = yield* views.file({ caller: "A", path: p, detectGaps: false })
          assert.deepStrictEqual(page.items.map((i) => [i.recordId, i.change.path]), [[r.recordId, "f.txt"]], p)
        }
        const escaping = yield* Effect.flip(views.file({ caller: "A", path: "a/../../f.txt" }))
        assert.strictEqual(escaping.reason, "PathRefused")
      }).pipe(Effect.provide(layerBoth(path.join(dir, "h.db"), { environmentId: env, root: ws })))
      fs.rmSync(dir, { recursive: true, force: true })
    }))

  it.effect("reports a file changed on disk as an unrecorded change and writes nothing", () =>
    Effect.gen(function*() {
      const dir = tmp()
      const ws = path.join(dir, "ws")
      fs.mkdirSync(ws)
      yield* Effect.gen(function*() {
        const views = yield* HistoryViews
        const store = yield* HistoryStore
        const a = yield* commit(env, "A", "t", [{ add: "f.txt", after: "1\n" }])
        fs.writeFileSync(path.join(ws, "f.txt"), "1\n")
        const agrees = yield* views.file({ caller: "A", path: "f.txt" })
        assert.strictEqual(agrees.items.length, 1)
        assert.isUndefined(agrees.coverage.unrecordedChanges)
        fs.writeFileSync(path.join(ws, "f.txt"), "edited by hand\n")
        const page = yield* views.file({ caller: "A", path: "f.txt" })
        assert.strictEqual(page.items.length, 1)
        assert.strictEqual(page.coverage.gaps, 0)
        assert.deepStrictEqual(page.coverage.unrecordedChanges, [
          { path: RelativePath.make("f.txt"), recordedHash: a.changes[0]!.after!.hash, diskHash: sha256(Buffer.from("edited by hand\n")) }
        ])
        // Nothing recorded: asking again reports the same, and history holds one record.
        assert.deepStrictEqual((yield* views.file({ caller: "A", path: "f.txt" })).coverage, page.coverage)
        assert.strictEqual((yield* store.recordsAfter(env, 0, 100)).length, 1)
        // A later page (a cursor) and --no-gap-check do not look at the disk.
        assert.isUndefined((yield* views.file({ caller: "A", path: "f.txt", detectGaps: false })).coverage.unrecordedChanges)
        fs.rmSync(path.join(ws, "f.txt"))
        const deleted = yield* views.file({ caller: "A", path: "f.txt" })
        assert.deepStrictEqual(deleted.coverage.unrecordedChanges, [
          { path: RelativePath.make("f.txt"), recordedHash: a.changes[0]!.after!.hash, diskHash: null }
        ])
        assert.strictEqual((yield* store.recordsAfter(env, 0, 100)).length, 1)
      }).pipe(Effect.provide(layerBoth(path.join(dir, "h.db"), { environmentId: env, root: ws })))
      fs.rmSync(dir, { recursive: true, force: true })
    }))

  it.effect("never reads a denied path or a link into one to look for changes", () =>
    Effect.gen(function*() {
      const dir = tmp()
      const ws = path.join(dir, "ws")
      fs.mkdirSync(path.join(ws, ".git"), { recursive: true })
      fs.writeFileSync(path.join(ws, ".git", "config"), "[credential] token = s3cret\n")
      fs.symlinkSync(".git", path.join(ws, "g"))
      yield* Effect.gen(function*() {
        const views = yield* HistoryViews
        // History that (wrongly) knew these paths: the disk still must not be read.
        yield* commit(env, "A", "t", [{ add: ".git/config", after: "old\n" }, { add: "g/config", after: "old\n" }])
        for (const p of [".git/config", "g/config"]) {
          const page = yield* views.file({ caller: "A", path: p })
          assert.isUndefined(page.coverage.unrecordedChanges, p)
          assert.notInclude(JSON.stringify(page), "s3cret")
        }
      }).pipe(Effect.provide(layerBoth(path.join(dir, "h.db"), { environmentId: env, root: ws })))
      fs.rmSync(dir, { recursive: true, force: true })
    }))
})
