/**
 * Git export (SPEC §4.7) checked with the real `git`: commits on refs/forkjoin/<thread> with
 * the trailers, `git log -p` showing each change, deterministic objects, incremental re-runs,
 * and no worktree or index touched.
 */
import { exportThread, refOf } from "@forkjoin/history/GitExport"
import { assert, describe, it } from "@effect/vitest"
import { EnvironmentId } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { commit, layerBoth } from "./viewFixtures.ts"

const env = EnvironmentId.make("env-git")
const git = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", HOME: cwd } })

describe("GitExport", () => {
  it("refOf escapes anything outside [A-Za-z0-9_-]", () => {
    assert.strictEqual(refOf("thread-1"), "refs/forkjoin/thread-1")
    assert.strictEqual(refOf("a/b..c d"), "refs/forkjoin/a%2Fb%2E%2Ec%20d")
  })

  it.effect("writes one commit per applied record with trailers; git log -p shows the changes; re-runs are incremental", () =>
    Effect.gen(function*() {
      const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-git-")))
      const repo = path.join(dir, "repo")
      fs.mkdirSync(repo)
      git(repo, "init", "-q")
      fs.writeFileSync(path.join(repo, "untracked.txt"), "mine\n")
      const statusBefore = git(repo, "status", "--porcelain")
      const gitdir = path.join(repo, ".git")
      const layer = layerBoth(path.join(dir, "h.db"), { environmentId: env })
      yield* Effect.gen(function*() {
        const r1 = yield* commit(env, "T", "t", [{ update: "src/a.txt", before: "one\ntwo\n", after: "one\n2\n" }])
        yield* commit(env, "other", "t", [{ add: "elsewhere.txt", after: "no\n" }])
        const r2 = yield* commit(env, "T", "t", [{ move: "src/a.txt", to: "b.txt", before: "one\n2\n", after: "one\n2\n" }, {
          add: "bin/run.sh",
          after: "#!/bin/sh\n"
        }])
        const first = yield* exportThread({ environmentId: env, threadId: "T", gitdir })
        assert.deepStrictEqual([first.ref, first.exported, first.baselines], ["refs/forkjoin/T", 2, 1])
        const log = git(repo, "log", "-p", "--format=%H%n%an <%ae> %at%n%B", "refs/forkjoin/T")
        assert.include(log, "-two\n+2\n")
        assert.include(log, `Forkjoin-Record: ${r1.recordId}\nForkjoin-Authority: native_patch_engine\n` +
          "Forkjoin-Provenance: native_engine\nForkjoin-Exactness: exact")
        assert.include(log, `Forkjoin-Record: ${r2.recordId}`)
        assert.include(log, "rename from src/a.txt\nrename to b.txt")
        assert.include(log, "+#!/bin/sh")
        assert.include(log, `forkjoin <forkjoin@localhost> ${Math.floor(Date.parse(r1.committedAt) / 1000)}`)
        assert.notInclude(log, "elsewhere.txt")
        assert.strictEqual(git(repo, "rev-list", "--count", "refs/forkjoin/T").trim(), "3")
        // Idempotent, then incremental.
        const again = yield* exportThread({ environmentId: env, threadId: "T", gitdir })
        assert.deepStrictEqual([again.exported, again.head], [0, first.head])
        yield* commit(env, "T", "t2", [{ delete: "b.txt", before: "one\n2\n" }])
        const third = yield* exportThread({ environmentId: env, threadId: "T", gitdir })
        assert.strictEqual(third.exported, 1)
        assert.strictEqual(git(repo, "rev-parse", "refs/forkjoin/T~1").trim(), first.head)
        assert.include(git(repo, "show", "refs/forkjoin/T"), "-one\n-2\n")
        // Deterministic: a fresh export of the same history makes the same objects.
        const other = path.join(dir, "fresh.git")
        const fresh = yield* exportThread({ environmentId: env, threadId: "T", gitdir: other })
        assert.strictEqual(fresh.head, third.head)
      }).pipe(Effect.provide(layer))
      assert.strictEqual(git(repo, "status", "--porcelain"), statusBefore)
      assert.isFalse(fs.existsSync(path.join(gitdir, "index")))
      assert.strictEqual(git(repo, "fsck", "--no-progress").trim(), "")
      fs.rmSync(dir, { recursive: true, force: true })
    }))
})
