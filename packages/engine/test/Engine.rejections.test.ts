/**
 * Every SPEC §3 rejection: the stable code, the stage, the paths — and the workspace is
 * byte-identical afterwards with no applied record.
 */
import { ThreadId, TurnId } from "@forkjoin/schema/Ids"
import Database from "better-sqlite3"
import { execFileSync } from "node:child_process"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { type EngineConfig, Grants, type PatchRequest } from "../src/Engine.ts"
import { failureOf, makeWorkspace, patchOf, removeSandboxes, treeHash, withEngine } from "./helpers.ts"

afterAll(removeSandboxes)

const ctx = { threadId: ThreadId.make("t1"), turnId: TurnId.make("turn1") }

/** Applies `request` to a workspace with `files`, expecting a rejection; checks untouched + unrecorded. */
const rejects = async (
  files: Record<string, string>,
  request: Omit<PatchRequest, "threadId" | "turnId">,
  config: Partial<EngineConfig> = {},
  prepare?: (ws: string) => void
) => {
  const ws = makeWorkspace(files)
  prepare?.(ws)
  const before = treeHash(ws)
  const { exit, records } = await withEngine(ws, (e) => e.applyPatch({ ...ctx, ...request }), config)
  const error = failureOf(exit)
  expect(treeHash(ws)).toBe(before)
  expect(records).toEqual([])
  return error
}

describe("engine rejections leave the workspace untouched and unrecorded", () => {
  it("input_too_large: oversized patch and oversized file", async () => {
    expect(await rejects({}, { patch: patchOf("*** Add File: a", "+xxxxxxxx") }, { limits: { maxPatchBytes: 20 } }))
      .toMatchObject({ code: "input_too_large", stage: 1 })
    expect(await rejects({}, { patch: patchOf("*** Add File: a", "+xxxxxxxx") }, { limits: { maxFileBytes: 4 } }))
      .toMatchObject({ code: "input_too_large", paths: ["a"] })
    expect(await rejects({}, { patch: patchOf("*** Add File: a", "+x", "*** Add File: b", "+y") }, { limits: { maxFiles: 1 } }))
      .toMatchObject({ code: "input_too_large", stage: 1 })
  })

  it("patch_syntax with the upstream message and line", async () => {
    expect(await rejects({ "a": "x\n" }, { patch: patchOf("*** Frobnicate File: a") })).toMatchObject({
      code: "patch_syntax",
      stage: 2,
      line: 2
    })
    expect(await rejects({}, { patch: patchOf() })).toMatchObject({ code: "patch_syntax", message: "No files were modified." })
  })

  it("version_guard_failed", async () => {
    const e = await rejects({ "a.txt": "one\n" }, {
      patch: patchOf("*** Update File: a.txt", "@@", "-one", "+two"),
      expect: { "a.txt": `sha256:${"0".repeat(64)}` }
    })
    expect(e).toMatchObject({ code: "version_guard_failed", stage: 2, paths: ["a.txt"] })
  })

  it("path_invalid, path_outside_roots (.., absolute, symlink out), path_denied_by_policy (.git, .forkjoin)", async () => {
    expect(await rejects({}, { patch: patchOf("*** Add File: a\u0001b", "+x") })).toMatchObject({ code: "path_invalid", stage: 3 })
    expect(await rejects({}, { patch: patchOf("*** Add File: ../escape.txt", "+x") })).toMatchObject({ code: "path_outside_roots" })
    expect(await rejects({}, { patch: patchOf("*** Add File: /etc/forkjoin-test", "+x") })).toMatchObject({ code: "path_outside_roots" })
    const outside = makeWorkspace({ "secret.txt": "s\n" })
    const e = await rejects({}, { patch: patchOf("*** Update File: link/secret.txt", "@@", "-s", "+pwned") }, {}, (ws) =>
      fs.symlinkSync(outside, path.join(ws, "link")))
    expect(e).toMatchObject({ code: "path_outside_roots", stage: 3, paths: ["link/secret.txt"] })
    expect(fs.readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("s\n")
    expect(await rejects({ ".git/config": "x\n" }, { patch: patchOf("*** Update File: .git/config", "@@", "-x", "+y") }))
      .toMatchObject({ code: "path_denied_by_policy", stage: 3 })
    expect(await rejects({}, { patch: patchOf("*** Add File: .forkjoin/evil", "+x") })).toMatchObject({ code: "path_denied_by_policy" })
    expect(await rejects({}, { patch: patchOf("*** Add File: gitlink/hooks/pre-commit", "+x") }, {}, (ws) => {
      fs.mkdirSync(path.join(ws, ".git"))
      fs.symlinkSync(path.join(ws, ".git"), path.join(ws, "gitlink"))
    })).toMatchObject({ code: "path_denied_by_policy" })
  })

  it("allowed roots let a symlink lead outside the workspace", async () => {
    const outside = makeWorkspace({ "lib.txt": "v1\n" })
    const ws = makeWorkspace()
    fs.symlinkSync(outside, path.join(ws, "vendor"))
    const { exit } = await withEngine(ws, (e) => e.applyPatch({ ...ctx, patch: patchOf("*** Update File: vendor/lib.txt", "@@", "-v1", "+v2") }), {
      allowedRoots: [outside]
    })
    expect(exit._tag).toBe("Success")
    expect(fs.readFileSync(path.join(outside, "lib.txt"), "utf8")).toBe("v2\n")
  })

  it("permission_denied on a read-only grant", async () => {
    expect(await rejects({ "a": "x\n" }, { patch: patchOf("*** Delete File: a"), grant: Grants.readOnly })).toMatchObject({
      code: "permission_denied",
      stage: 4
    })
  })

  it("directory_create_denied without the create-dirs grant", async () => {
    expect(await rejects({}, { patch: patchOf("*** Add File: new/dir/a.txt", "+x"), grant: Grants.write })).toMatchObject({
      code: "directory_create_denied",
      stage: 4,
      paths: ["new", "new/dir"]
    })
  })

  it("target_missing, target_exists (overwrite without the grant), unsafe_move, unsupported_file_type", async () => {
    expect(await rejects({}, { patch: patchOf("*** Update File: nope", "@@", "-a") })).toMatchObject({ code: "target_missing", stage: 5 })
    expect(await rejects({ "a": "old\n" }, { patch: patchOf("*** Add File: a", "+new") })).toMatchObject({ code: "target_exists" })
    expect(await rejects({ "s": "x\n", "d": "keep\n" }, { patch: patchOf("*** Update File: s", "*** Move to: d", "@@", "-x", "+y") }))
      .toMatchObject({ code: "unsafe_move" })
    const binary = makeWorkspace()
    fs.writeFileSync(path.join(binary, "b.bin"), Buffer.from([0, 1, 2, 10]))
    const before = treeHash(binary)
    const { exit } = await withEngine(binary, (e) => e.applyPatch({ ...ctx, patch: patchOf("*** Update File: b.bin", "@@", "-x") }))
    expect(failureOf(exit)).toMatchObject({ code: "unsupported_file_type" })
    expect(treeHash(binary)).toBe(before)
    expect(await rejects({}, { patch: patchOf("*** Update File: fifo", "@@", "-x", "+y") }, {}, (ws) =>
      execFileSync("mkfifo", [path.join(ws, "fifo")]))).toMatchObject({ code: "unsupported_file_type" })
  })

  it("context_not_found and ambiguous_context with candidates", async () => {
    expect(await rejects({ "a": "x\n" }, { patch: patchOf("*** Update File: a", "@@", "-nope", "+y") })).toMatchObject({
      code: "context_not_found",
      stage: 5
    })
    expect(await rejects({ "a": "x\ny\nx\ny\n" }, { patch: patchOf("*** Update File: a", "@@", " x", "-y", "+Y") })).toMatchObject({
      code: "ambiguous_context",
      candidates: [1, 3]
    })
  })

  it("a second operation failing after a first succeeded writes nothing", async () => {
    const e = await rejects({ "a": "1\n" }, {
      patch: patchOf("*** Add File: created.txt", "+hello", "*** Update File: a", "@@", "-1", "+2", "*** Update File: missing.txt", "@@", "-x", "+y")
    })
    expect(e).toMatchObject({ code: "target_missing", paths: ["missing.txt"] })
  })

  it("budget_exceeded when the turn budget is exhausted", async () => {
    const ws = makeWorkspace()
    const config = { budgets: { turnBytes: 10 } }
    // One file database, so the turn's usage persists across the engines.
    const db = path.join(ws, ".forkjoin", "history.db")
    const r1 = await withEngine(ws, (e) => e.applyPatch({ ...ctx, patch: patchOf("*** Add File: b", "+12345678") }), config, db)
    expect(r1.exit._tag).toBe("Success")
    const before = treeHash(ws)
    const r2 = await withEngine(ws, (e) => e.applyPatch({ ...ctx, patch: patchOf("*** Add File: c", "+x") }), config, db)
    expect(failureOf(r2.exit)).toMatchObject({ code: "budget_exceeded", stage: 5 })
    expect(r2.records.length).toBe(1)
    expect(treeHash(ws)).toBe(before)
    // another turn still has budget
    const r3 = await withEngine(ws, (e) => e.applyPatch({ threadId: ThreadId.make("t1"), turnId: TurnId.make("turn2"), patch: patchOf("*** Add File: c", "+x") }), config, db)
    expect(r3.exit._tag).toBe("Success")
  })

  it("budget_exceeded when the workspace file budget is exhausted (across turns)", async () => {
    const ws = makeWorkspace()
    const config = { budgets: { workspaceFiles: 2 } }
    const db = path.join(ws, ".forkjoin", "history.db")
    const r1 = await withEngine(ws, (e) => e.applyPatch({ threadId: ThreadId.make("a"), turnId: TurnId.make("1"), patch: patchOf("*** Add File: x", "+x", "*** Add File: y", "+y") }), config, db)
    expect(r1.exit._tag).toBe("Success")
    const before = treeHash(ws)
    const r2 = await withEngine(ws, (e) => e.applyPatch({ threadId: ThreadId.make("b"), turnId: TurnId.make("2"), patch: patchOf("*** Add File: z", "+z") }), config, db)
    expect(failureOf(r2.exit)).toMatchObject({ code: "budget_exceeded", stage: 5, paths: ["z"] })
    expect(failureOf(r2.exit).message).toContain("workspace")
    expect(treeHash(ws)).toBe(before)
    expect(r2.records.length).toBe(1)
  })

  const holdLock = (ws: string) => {
    fs.mkdirSync(path.join(ws, ".forkjoin"), { recursive: true })
    const db = new Database(path.join(ws, ".forkjoin", "lock.db"))
    db.exec("BEGIN IMMEDIATE")
    return db
  }

  it("lock_timeout while another process holds the workspace lock", async () => {
    const ws = makeWorkspace({ "a": "1\n" })
    const before = treeHash(ws)
    // A different connection is what another process would be: SQLite locks are per connection.
    const { exit, records } = await withEngine(ws, (e) =>
      Effect.gen(function*() {
        const holder = holdLock(ws)
        try {
          return yield* e.applyPatch({ ...ctx, patch: patchOf("*** Update File: a", "@@", "-1", "+2") })
        } finally {
          holder.close()
        }
      }), { lockTimeoutMs: 150 })
    expect(failureOf(exit)).toMatchObject({ code: "lock_timeout", stage: 6 })
    expect(treeHash(ws)).toBe(before)
    expect(records).toEqual([])
  })

  it("stale_file when a file changes between planning and locking", async () => {
    const ws = makeWorkspace({ "a": "1\n" })
    const { exit, records } = await withEngine(ws, (e) =>
      Effect.gen(function*() {
        const holder = holdLock(ws)
        // Once the request has planned and waits on the lock, change the file and release.
        let heardWaiting!: () => void
        const waiting = new Promise<void>((resolve) => (heardWaiting = resolve))
        const fiber = yield* Effect.forkChild(e.applyPatch({
          ...ctx,
          patch: patchOf("*** Update File: a", "@@", "-1", "+2"),
          onProgress: (ev) => ev._tag === "LockWaiting" && heardWaiting()
        }))
        yield* Effect.promise(() => waiting)
        fs.writeFileSync(path.join(ws, "a"), "1\nsomeone else\n")
        holder.close()
        return yield* Fiber.join(fiber)
      }))
    expect(failureOf(exit)).toMatchObject({ code: "stale_file", stage: 6, paths: ["a"] })
    expect(fs.readFileSync(path.join(ws, "a"), "utf8")).toBe("1\nsomeone else\n")
    expect(records).toEqual([])
  })

  it("commit_failed mid-commit restores the files already renamed (immutable target)", async () => {
    const ws = makeWorkspace({ "a.txt": "a1\n", "b.txt": "b1\n" })
    execFileSync("chattr", ["+i", path.join(ws, "b.txt")])
    try {
      const before = treeHash(ws)
      const { exit, records } = await withEngine(ws, (e) =>
        e.applyPatch({ ...ctx, patch: patchOf("*** Update File: a.txt", "@@", "-a1", "+a2", "*** Update File: b.txt", "@@", "-b1", "+b2") }))
      expect(failureOf(exit)).toMatchObject({ code: "commit_failed", stage: 8, paths: ["b.txt"] })
      expect(treeHash(ws)).toBe(before)
      expect(records).toEqual([])
      expect(fs.readdirSync(ws).filter((n) => n.endsWith(".tmp"))).toEqual([])
    } finally {
      execFileSync("chattr", ["-i", path.join(ws, "b.txt")])
    }
  })
})
