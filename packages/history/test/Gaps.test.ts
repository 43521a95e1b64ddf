/**
 * Gap detection (SPEC §4.5) on its own: one gap record for an unexplained difference between
 * the disk and history, none when history already agrees, none when an open journal intent
 * names the path (an engine write in flight explains it).
 */
import { detectGap } from "@forkjoin/history/Gaps"
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { layerNoDeps, sqliteOptions } from "@forkjoin/history/HistoryStoreSqlite"
import { Sqlite } from "@forkjoin/history/Sqlite"
import { assert, describe, it } from "@effect/vitest"
import { EnvironmentId, RelativePath } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { bytes, planned, sha256 } from "./fixtures.ts"

const env = EnvironmentId.make("env-gaps")

const inWorkspace = <A, E>(body: (ws: string) => Effect.Effect<A, E, HistoryStore | Sqlite>) =>
  Effect.gen(function*() {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-gaps-")))
    const ws = path.join(dir, "ws")
    fs.mkdirSync(ws)
    const layer = layerNoDeps.pipe(Layer.provideMerge(Sqlite.layer(path.join(dir, "h.db"), sqliteOptions())), Layer.orDie)
    return yield* body(ws).pipe(
      Effect.provide(layer),
      Effect.ensuring(Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
    )
  })

const recordsOf = Effect.flatMap(HistoryStore, (store) => store.recordsAfter(env, 0, 100))

describe("Gaps.detectGap", () => {
  it.effect("records one gap for an unexplained edit, with the disk content, and none when history agrees", () =>
    inWorkspace((ws) =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
        const p = planned({ environmentId: env, files: [{ path: "f.txt", after: "1\n" }] })
        yield* store.putBlobs(p.blobs)
        yield* store.appendRecord(p.draft, Date.parse("2026-11-29T12:00:00.000Z"))
        const check = detectGap({ environmentId: env, root: ws }, { caller: "A", turnId: "t", path: RelativePath.make("f.txt") })
        fs.writeFileSync(path.join(ws, "f.txt"), "1\n")
        yield* check
        assert.strictEqual((yield* recordsOf).length, 1)
        fs.writeFileSync(path.join(ws, "f.txt"), "by hand\n")
        yield* check
        yield* check
        const records = yield* recordsOf
        assert.strictEqual(records.length, 2)
        const gap = records[1]!
        assert.deepStrictEqual([gap.outcome, gap.provenance, gap.exactness, gap.threadId, gap.turnId], [
          "gap",
          "unknown",
          "partial",
          "A",
          "t"
        ])
        assert.deepStrictEqual(gap.changes.map((c): Array<string | undefined> => [c.kind, c.path, c.after?.hash]), [[
          "replace",
          "f.txt",
          sha256(bytes("by hand\n"))
        ]])
        assert.deepStrictEqual(gap.warnings.map((w) => w.code), ["unrecorded_change"])
        const blob = yield* store.getBlob(sha256(bytes("by hand\n")))
        assert.strictEqual(blob._tag, "Some")
      })))

  it.effect("records nothing while an open journal intent names the path", () =>
    inWorkspace((ws) =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
        const first = planned({ environmentId: env, files: [{ path: "f.txt", after: "1\n" }] })
        yield* store.putBlobs(first.blobs)
        yield* store.appendRecord(first.draft, Date.parse("2026-11-29T12:00:00.000Z"))
        const inFlight = planned({ environmentId: env, files: [{ path: "f.txt", before: "1\n", after: "2\n" }] })
        yield* store.openIntent(inFlight.intent, inFlight.blobs)
        fs.writeFileSync(path.join(ws, "f.txt"), "2\n")
        yield* detectGap({ environmentId: env, root: ws }, { caller: "A", turnId: "t", path: RelativePath.make("f.txt") })
        assert.strictEqual((yield* recordsOf).length, 1)
        // An intent for another path explains nothing about this one.
        fs.writeFileSync(path.join(ws, "g.txt"), "by hand\n")
        const other = planned({ environmentId: env, files: [{ path: "g.txt", after: "1\n" }] })
        yield* store.putBlobs(other.blobs)
        yield* store.appendRecord(other.draft, Date.parse("2026-11-29T12:00:01.000Z"))
        yield* detectGap({ environmentId: env, root: ws }, { caller: "A", turnId: "t", path: RelativePath.make("g.txt") })
        assert.deepStrictEqual((yield* recordsOf).map((r) => r.outcome), ["applied", "applied", "gap"])
      })))
})
