/**
 * Views never write; writes record gaps. A file edited outside forkjoin is reported by the
 * file view (its `unrecordedChanges`) while the history database stays byte-identical, and
 * the next apply of that path records the gap (history's last content -> what the apply
 * found) before its own record, so the history of the path stays a chain.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { HistoryViews } from "@forkjoin/history/Views"
import { sha256 } from "@forkjoin/patch/Bytes"
import { RelativePath, ThreadId, TurnId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeWorkspace, patchOf, removeSandboxes, withEngine } from "./helpers.ts"

afterAll(removeSandboxes)

const T = ThreadId.make("T")

/** The bytes of every file of the database (main file and write-ahead log). */
const databaseBytes = (db: string): Record<string, string> =>
  Object.fromEntries(
    [db, `${db}-wal`].filter((f) => fs.existsSync(f)).map((f) => [path.basename(f), sha256(fs.readFileSync(f))])
  )

describe("gaps: reported by views, recorded by the next write", () => {
  it("a view reports an outside edit without writing; the next apply of the path records it first", async () => {
    const ws = fs.realpathSync(makeWorkspace())
    const db = path.join(ws, ".forkjoin", "history.db")
    const added = await withEngine(ws, (e) => e.applyPatch({ threadId: T, turnId: TurnId.make("t1"), patch: patchOf("*** Add File: f.txt", "+1") }), {}, db)
    assert.isTrue(Exit.isSuccess(added.exit))
    const environmentId = added.records[0]!.environmentId

    fs.writeFileSync(path.join(ws, "f.txt"), "edited by hand\n")
    const before = databaseBytes(db)
    const page = await Effect.runPromise(
      Effect.gen(function*() {
        const views = yield* HistoryViews
        return yield* views.file({ caller: "T", path: "f.txt" })
      }).pipe(Effect.provide(HistoryViews.layerSqlite(db, { environmentId, root: ws })), Effect.scoped)
    )
    assert.deepStrictEqual(page.coverage.unrecordedChanges, [
      { path: RelativePath.make("f.txt"), recordedHash: added.records[0]!.changes[0]!.after!.hash, diskHash: sha256("edited by hand\n") }
    ])
    assert.strictEqual(page.items.length, 1)
    assert.deepStrictEqual(databaseBytes(db), before)

    const updated = await withEngine(ws, (e) =>
      e.applyPatch({ threadId: T, turnId: TurnId.make("t2"), patch: patchOf("*** Update File: f.txt", "@@", "-edited by hand", "+third") }), {}, db)
    assert.isTrue(Exit.isSuccess(updated.exit), String(updated.exit))
    const [add, gap, update] = updated.records
    assert.strictEqual(updated.records.length, 3)
    assert.deepStrictEqual([add!.outcome, gap!.outcome, update!.outcome], ["applied", "gap", "applied"])
    assert.deepStrictEqual([gap!.provenance, gap!.exactness, gap!.warnings[0]!.code], ["unknown", "partial", "unrecorded_change"])
    const change = gap!.changes[0]!
    assert.strictEqual(change.kind, "replace")
    assert.strictEqual(change.before!.hash, add!.changes[0]!.after!.hash)
    assert.strictEqual(change.after!.hash, update!.changes[0]!.before!.hash)
    assert.isBelow(gap!.commitOrdinal, update!.commitOrdinal)
  })

  it("an apply over a file deleted or recreated outside forkjoin records the deletion or the addition", async () => {
    const ws = fs.realpathSync(makeWorkspace())
    const db = path.join(ws, ".forkjoin", "history.db")
    const first = await withEngine(ws, (e) => e.applyPatch({ threadId: T, turnId: TurnId.make("t1"), patch: patchOf("*** Add File: f.txt", "+1", "*** Add File: g.txt", "+g") }), {}, db)
    assert.isTrue(Exit.isSuccess(first.exit))
    fs.rmSync(path.join(ws, "f.txt"))
    const readd = await withEngine(ws, (e) => e.applyPatch({ threadId: T, turnId: TurnId.make("t2"), patch: patchOf("*** Add File: f.txt", "+2", "*** Delete File: g.txt") }), {}, db)
    assert.isTrue(Exit.isSuccess(readd.exit), String(readd.exit))
    const kinds = readd.records.map((r) => [r.outcome, r.changes.map((c) => `${c.kind} ${c.path}`).join(",")])
    assert.deepStrictEqual(kinds, [["applied", "add f.txt,add g.txt"], ["gap", "delete f.txt"], ["applied", "add f.txt,delete g.txt"]])
    // Nothing outside: the next apply records no gap.
    const again = await withEngine(ws, (e) => e.applyPatch({ threadId: T, turnId: TurnId.make("t3"), patch: patchOf("*** Update File: f.txt", "@@", "-2", "+3") }), {}, db)
    assert.isTrue(Exit.isSuccess(again.exit))
    assert.deepStrictEqual(again.records.map((r) => r.outcome), ["applied", "gap", "applied", "applied"])
  })
})
