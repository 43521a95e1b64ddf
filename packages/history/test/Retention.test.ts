/**
 * What the views and the git export show once retention pruned a snapshot's content: the diff
 * marks the change `pruned` with a one-line note instead of failing, the file and turn views
 * list the pruned hashes, a change whose content is still stored shows as before, and the
 * export names the change whose content it could not write.
 */
import { exportThread } from "@forkjoin/history/GitExport"
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { HistoryViews } from "@forkjoin/history/Views"
import { EnvironmentId } from "@forkjoin/schema"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { bytes, sha256 } from "./fixtures.ts"
import { commit, layerBoth } from "./viewFixtures.ts"

const env = EnvironmentId.make("env-retention")

describe("retention as the views see it", () => {
  it.effect("diff, file and turn views mark pruned snapshots; git export names the change it could not write", () =>
    Effect.gen(function*() {
      const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-retention-")))
      const [v0, v1, v2] = ["one\ntwo\n", "one\n2\n", "one\n3\n"]
      yield* Effect.gen(function*() {
        const store = yield* HistoryStore
        const views = yield* HistoryViews
        const r0 = yield* commit(env, "T", "t0", [{ add: "a.txt", after: v0 }])
        const r1 = yield* commit(env, "T", "t1", [{ update: "a.txt", before: v0, after: v1 }])
        const r2 = yield* commit(env, "T", "t2", [{ update: "a.txt", before: v1, after: v2 }])
        const report = yield* store.pruneSnapshots({ committedBefore: Date.parse(r1.committedAt) + 1 })
        // v0 is used only by r0 and r1; v1 also by r2, which is newer.
        assert.strictEqual(report.snapshotsPruned, 1)
        const h0 = sha256(bytes(v0))

        const d1 = yield* views.diff({ caller: "T", recordId: r1.recordId })
        assert.deepStrictEqual(
          [d1.items[0]!.source, d1.items[0]!.pruned, d1.items[0]!.linesAdded, d1.items[0]!.beforeHash],
          ["pruned", [h0], 0, h0]
        )
        assert.include(d1.items[0]!.diff, "a/a.txt and b/a.txt was pruned by retention")
        const d0 = yield* views.diff({ caller: "T", recordId: r0.recordId })
        assert.strictEqual(d0.items[0]!.source, "pruned")
        const d2 = yield* views.diff({ caller: "T", recordId: r2.recordId })
        assert.deepStrictEqual([d2.items[0]!.source, d2.items[0]!.pruned], ["blobs", undefined])
        assert.include(d2.items[0]!.diff, "-2\n+3\n")

        const file = yield* views.file({ caller: "T", path: "a.txt" })
        assert.deepStrictEqual(file.items.map((i) => i.pruned), [[h0], [h0], undefined])
        const turn0 = yield* views.turn({ caller: "T", turn: "t0" })
        assert.deepStrictEqual(turn0.items.map((i) => i.pruned), [[h0]])
        const turn2 = yield* views.turn({ caller: "T", turn: "t2" })
        assert.deepStrictEqual(turn2.items.map((i) => i.pruned), [undefined])

        const gitdir = path.join(dir, "export.git")
        const exported = yield* exportThread({ environmentId: env, threadId: "T", gitdir })
        assert.strictEqual(exported.exported, 3)
        const log = execFileSync("git", ["--git-dir", gitdir, "log", "--format=%B", exported.ref], { encoding: "utf8" })
        assert.include(log, "content not recorded (tree entry left as it was): a.txt")
        const head = execFileSync("git", ["--git-dir", gitdir, "show", `${exported.ref}:a.txt`], { encoding: "utf8" })
        assert.strictEqual(head, v2)
      }).pipe(Effect.provide(layerBoth(path.join(dir, "h.db"), { environmentId: env })))
      fs.rmSync(dir, { recursive: true, force: true })
    }))
})
