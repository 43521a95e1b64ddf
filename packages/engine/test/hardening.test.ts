/**
 * Hardening (issue 9 items 3 and 4, and the state folder's `.gitignore`): `.git` and `.forkjoin`
 * are denied at any depth, the state folder must be a real folder inside the workspace (a link
 * or a file named `.forkjoin` is refused and nothing is created where a link points), and the
 * state folder keeps itself out of `git status`.
 */
import { layerMemory } from "@forkjoin/history/HistoryStoreSqlite"
import { ThreadId, TurnId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { Engine, Grants, type PatchRequest } from "../src/Engine.ts"
import { compileGlob, DEFAULT_DENIED_GLOBS, openStateDirectory, STATE_DIRECTORY } from "../src/Policy.ts"
import { failureOf, makeWorkspace, patchOf, removeSandboxes, treeHash, withEngine } from "./helpers.ts"

afterAll(removeSandboxes)

const ctx = { threadId: ThreadId.make("t1"), turnId: TurnId.make("turn1"), grant: Grants.writeCreateDirs }

const apply = (ws: string, request: Omit<PatchRequest, "threadId" | "turnId">, config: Parameters<typeof withEngine>[2] = {}) =>
  withEngine(ws, (e) => e.applyPatch({ ...ctx, ...request }), config)

/** Every entry under `dir` (relative POSIX paths), links included, sorted. */
const entries = (dir: string): Array<string> =>
  fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).map((p) => p.split(path.sep).join("/")).sort()

describe("nested .git and .forkjoin are denied at any depth (default policy)", () => {
  const nested = {
    "src/.git/config": "[core]\n",
    "vendor/lib/.git/hooks/pre-commit.sample": "#!/bin/sh\n",
    "a/.forkjoin/history.db": "x\n",
    "src/a.ts": "a\n"
  }

  it.each([
    ["Add File into a nested .git", patchOf("*** Add File: src/.git/config2", "+[core]")],
    ["Add File creating a nested .git", patchOf("*** Add File: lib/.git/config", "+[core]")],
    ["Update File of a nested repository's config", patchOf("*** Update File: src/.git/config", "@@", "-[core]", "+[evil]")],
    ["Add File of a deep hook", patchOf("*** Add File: vendor/lib/.git/hooks/pre-commit", "+rm -rf ~")],
    ["Move to into a nested .git", patchOf("*** Update File: src/a.ts", "*** Move to: vendor/lib/.git/hooks/post-checkout", "@@", "-a", "+b")],
    ["Delete File inside a nested .git", patchOf("*** Delete File: vendor/lib/.git/hooks/pre-commit.sample")],
    ["Add File into a nested .forkjoin", patchOf("*** Add File: a/.forkjoin/lock.db", "+x")],
    ["Add File through '..' into a nested .git", patchOf("*** Add File: src/x/../.git/hooks/pre-push", "+x")]
  ])("%s is path_denied_by_policy at stage 3; nothing is written or recorded", async (_, patch) => {
    const ws = makeWorkspace(nested)
    const before = treeHash(ws)
    const { exit, records } = await apply(ws, { patch })
    expect(failureOf(exit)).toMatchObject({ code: "path_denied_by_policy", stage: 3 })
    expect(failureOf(exit).message).toMatch(/denied pattern '\*\*\/\.(git|forkjoin)\/\*\*'/)
    expect(treeHash(ws)).toBe(before)
    expect(records).toEqual([])
  })

  it("is refused through an in-workspace symlink that lands in a nested .git", async () => {
    const ws = makeWorkspace(nested)
    fs.symlinkSync(".git", path.join(ws, "src", "g"))
    const before = treeHash(ws)
    const { exit } = await apply(ws, { patch: patchOf("*** Add File: src/g/hooks/pre-commit", "+x") })
    expect(failureOf(exit)).toMatchObject({ code: "path_denied_by_policy", paths: ["src/g/hooks/pre-commit"] })
    expect(treeHash(ws)).toBe(before)
  })

  it("a version guard on a nested .git path is refused too (it would reveal the file's hash)", async () => {
    const ws = makeWorkspace(nested)
    const { exit } = await apply(ws, { patch: patchOf("*** Add File: b.ts", "+b"), expect: { "src/.git/config": null } })
    expect(failureOf(exit)).toMatchObject({ code: "path_denied_by_policy", stage: 3, paths: ["src/.git/config"] })
  })

  it("names that only look alike stay writable: .github, .gitignore, x.git, .forkjoinrc", async () => {
    const ws = makeWorkspace({ "src/a.ts": "a\n" })
    const { exit, records } = await apply(ws, {
      patch: patchOf(
        "*** Add File: .github/workflows/ci.yml",
        "+on: push",
        "*** Add File: src/.gitignore",
        "+dist",
        "*** Add File: src/x.git/config",
        "+x",
        "*** Add File: pkg/.forkjoinrc",
        "+{}"
      )
    })
    expect(exit._tag).toBe("Success")
    expect(records).toHaveLength(1)
    expect(fs.readFileSync(path.join(ws, "src/x.git/config"), "utf8")).toBe("x\n")
  })

  it("the default globs match .git and .forkjoin at the root and below, and nothing else", () => {
    const res = DEFAULT_DENIED_GLOBS.map((g) => compileGlob(g, false))
    const denied = (p: string) => res.some((re) => re.test(p))
    for (const p of [".git", ".git/config", "src/.git", "src/.git/config", "a/b/.git/hooks/x", ".forkjoin", "a/.forkjoin/x"]) {
      expect(denied(p), p).toBe(true)
    }
    for (const p of ["src/.github/x", ".gitignore", "src/x.git/config", "git/config", "a.forkjoin/x", "src/.gitkeep"]) {
      expect(denied(p), p).toBe(false)
    }
  })
})

describe("the state folder must be a real folder inside the workspace", () => {
  it("a .forkjoin symlink to a folder outside: the engine refuses to open and creates nothing there", async () => {
    const ws = makeWorkspace({ "a.txt": "a\n" })
    const outside = makeWorkspace()
    fs.symlinkSync(outside, path.join(ws, ".forkjoin"))
    const exit = await Effect.runPromiseExit(Effect.scoped(Layer.build(Engine.layer({ root: ws }).pipe(Layer.provide(layerMemory)))))
    const error = failureOf(exit)
    expect(error).toMatchObject({ code: "path_denied_by_policy", stage: 3, paths: [".forkjoin"] })
    expect(error.message).toMatch(/symbolic link/)
    expect(error.message).toMatch(/real folder/)
    expect(entries(outside)).toEqual([])
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("a\n")
  })

  it("with startup repair off, the engine still refuses to open (before any apply) and nothing lands outside", async () => {
    const ws = makeWorkspace({ "a.txt": "a\n" })
    const outside = makeWorkspace()
    fs.symlinkSync(outside, path.join(ws, ".forkjoin"))
    const exit = await Effect.runPromiseExit(
      Effect.scoped(Layer.build(Engine.layer({ root: ws, repairOnStart: false }).pipe(Layer.provide(layerMemory))))
    )
    expect(failureOf(exit)).toMatchObject({ code: "path_denied_by_policy", paths: [".forkjoin"] })
    expect(fs.existsSync(path.join(ws, "b.txt"))).toBe(false)
    expect(entries(outside)).toEqual([])
  })

  it("openStateDirectory refuses a link, a dangling link, a file, and a link inside the folder", () => {
    const refused = (prepare: (ws: string) => void) => {
      const ws = makeWorkspace()
      prepare(ws)
      const r = openStateDirectory(ws)
      if (Result.isSuccess(r)) throw new Error(`expected a refusal in ${ws}`)
      return r.failure
    }
    const outside = makeWorkspace()
    expect(refused((ws) => fs.symlinkSync(outside, path.join(ws, ".forkjoin")))).toMatchObject({
      code: "path_denied_by_policy",
      stage: 3,
      paths: [".forkjoin"]
    })
    expect(refused((ws) => fs.symlinkSync(path.join(os.tmpdir(), "fj-no-such-dir-h7"), path.join(ws, ".forkjoin"))).message)
      .toMatch(/symbolic link/)
    const file = refused((ws) => fs.writeFileSync(path.join(ws, ".forkjoin"), "not a folder\n"))
    expect(file).toMatchObject({ code: "path_denied_by_policy", paths: [".forkjoin"] })
    expect(file.message).toMatch(/not a folder/)
    const inner = refused((ws) => {
      fs.mkdirSync(path.join(ws, ".forkjoin"))
      fs.symlinkSync(path.join(outside, "history.db"), path.join(ws, ".forkjoin", "history.db"))
    })
    expect(inner).toMatchObject({ code: "path_denied_by_policy", paths: [".forkjoin/history.db"] })
    expect(entries(outside)).toEqual([])
  })
})

describe("the state folder keeps itself out of git status", () => {
  it("the engine writes .forkjoin/.gitignore ('*') when it creates the folder", async () => {
    const ws = makeWorkspace({ "a.txt": "a\n" })
    const { exit } = await apply(ws, { patch: patchOf("*** Add File: b.txt", "+b") })
    expect(exit._tag).toBe("Success")
    expect(fs.readFileSync(path.join(ws, STATE_DIRECTORY, ".gitignore"), "utf8")).toMatch(/^\*$/m)
  })

  it("an existing state folder keeps its contents: its .gitignore is not rewritten, nor added back", () => {
    const edited = makeWorkspace({ ".forkjoin/.gitignore": "history.db\n" })
    expect(Result.isSuccess(openStateDirectory(edited))).toBe(true)
    expect(fs.readFileSync(path.join(edited, ".forkjoin", ".gitignore"), "utf8")).toBe("history.db\n")
    const removed = makeWorkspace({ ".forkjoin/history.db": "" })
    expect(Result.isSuccess(openStateDirectory(removed))).toBe(true)
    expect(fs.readdirSync(path.join(removed, ".forkjoin"))).toEqual(["history.db"])
  })

  it("openStateDirectory creates the folder with its .gitignore, once", () => {
    const ws = makeWorkspace()
    const first = openStateDirectory(ws)
    expect(Result.isSuccess(first) && first.success).toBe(path.join(ws, ".forkjoin"))
    expect(fs.readdirSync(path.join(ws, ".forkjoin"))).toEqual([".gitignore"])
    expect(Result.isSuccess(openStateDirectory(ws))).toBe(true)
    expect(fs.readdirSync(path.join(ws, ".forkjoin"))).toEqual([".gitignore"])
  })
})
