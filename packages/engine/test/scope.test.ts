/**
 * A request's write scope and the caller's locked steps, checked where the engine re-checks its
 * plan under the workspace lock (stage 6). The attacker swaps a link in after the caller
 * resolved its paths: at the `Checking` progress event (the lock is held, nothing re-read yet),
 * a folder on the path, or the scope folder itself, becomes a link to another folder whose file
 * has the very bytes the plan expects, so only where the write lands gives it away. Every
 * refusal writes nothing and records nothing.
 */
import type { PlannedFile } from "@forkjoin/patch"
import { RelativePath, ThreadId, TurnId } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { PlanRequest } from "../src/Engine.ts"
import type { ProgressEvent } from "../src/Progress.ts"
import { withStateLock } from "../src/StateLock.ts"
import { failureOf, makeWorkspace, removeSandboxes, treeHash, withEngine } from "./helpers.ts"

afterAll(removeSandboxes)

const b = (s: string): Uint8Array => new TextEncoder().encode(s)
const ctx = { threadId: ThreadId.make("t"), turnId: TurnId.make("u") }

const update = (p: string, before: string, after: string): PlannedFile => ({ kind: "update", path: RelativePath.make(p), before: b(before), after: b(after) })
const planOf = (...files: ReadonlyArray<PlannedFile>): PlanRequest["plan"] => ({ files, summary: files.map((f) => ({ status: "M", path: f.path })) })

/** Calls `swap` once, when stage 6 starts under the lock. */
const atLock = (swap: () => void) => {
  let done = false
  return (e: ProgressEvent) => {
    if (e._tag === "Checking" && !done) {
      done = true
      swap()
    }
  }
}

/** `sub/x` (a real folder at planning) becomes a link to `target` under the lock. */
const swapToLink = (ws: string, from: string, target: string) => () => {
  fs.renameSync(path.join(ws, from), path.join(ws, `${from}.old`))
  fs.symlinkSync(target, path.join(ws, from))
}

const readAt = (ws: string, p: string) => fs.readFileSync(path.join(ws, p), "utf8")

describe("writeScope", () => {
  it("a folder on the path swapped to a link out of the scope under the lock: path_outside_scope at stage 6, nothing written", async () => {
    const ws = makeWorkspace({ "sub/x/a.txt": "v1\n", "docs/a.txt": "v1\n" })
    const { exit, records } = await withEngine(ws, (e) =>
      e.applyPlan({ ...ctx, writeScope: ["sub"], plan: planOf(update("sub/x/a.txt", "v1\n", "v2\n")), onProgress: atLock(swapToLink(ws, "sub/x", "../docs")) }))
    expect(failureOf(exit)).toMatchObject({ code: "path_outside_scope", stage: 6, paths: ["sub/x/a.txt", "docs/a.txt"] })
    expect(failureOf(exit).message).toContain("'docs/a.txt'")
    expect(readAt(ws, "docs/a.txt")).toBe("v1\n")
    expect(readAt(ws, "sub/x.old/a.txt")).toBe("v1\n")
    expect(records).toEqual([])
  })

  it("the scope folder itself swapped to a link: path_outside_scope, nothing written", async () => {
    const ws = makeWorkspace({ "sub/a.txt": "v1\n", "docs/a.txt": "v1\n" })
    const { exit, records } = await withEngine(ws, (e) =>
      e.applyPlan({ ...ctx, writeScope: ["sub"], plan: planOf(update("sub/a.txt", "v1\n", "v2\n")), onProgress: atLock(swapToLink(ws, "sub", "docs")) }))
    expect(failureOf(exit)).toMatchObject({ code: "path_outside_scope", stage: 6, paths: ["sub/a.txt", "docs/a.txt"] })
    expect(readAt(ws, "docs/a.txt")).toBe("v1\n")
    expect(records).toEqual([])
  })

  it("a link to a folder inside the scope: path_redirected (history would name a file that did not change), nothing written", async () => {
    const ws = makeWorkspace({ "sub/x/a.txt": "v1\n", "sub/y/a.txt": "v1\n" })
    const { exit, records } = await withEngine(ws, (e) =>
      e.applyPlan({ ...ctx, writeScope: ["sub"], plan: planOf(update("sub/x/a.txt", "v1\n", "v2\n")), onProgress: atLock(swapToLink(ws, "sub/x", "y")) }))
    expect(failureOf(exit)).toMatchObject({ code: "path_redirected", stage: 6, paths: ["sub/x/a.txt", "sub/y/a.txt"] })
    expect(readAt(ws, "sub/y/a.txt")).toBe("v1\n")
    expect(records).toEqual([])
  })

  it("a delete and a move's source and destination are checked too", async () => {
    const cases: ReadonlyArray<readonly [string, PlannedFile]> = [
      ["delete", { kind: "delete", path: RelativePath.make("sub/x/a.txt"), before: b("v1\n"), after: undefined }],
      ["move from", { kind: "move", path: RelativePath.make("sub/b.txt"), moveFrom: RelativePath.make("sub/x/a.txt"), before: b("v1\n"), after: b("v1\n") }],
      ["move to", { kind: "move", path: RelativePath.make("sub/x/a.txt"), moveFrom: RelativePath.make("sub/c.txt"), before: b("c\n"), after: b("c\n"), overwritten: b("v1\n") }]
    ]
    for (const [what, file] of cases) {
      const ws = makeWorkspace({ "sub/x/a.txt": "v1\n", "sub/c.txt": "c\n", "docs/a.txt": "v1\n" })
      const before = treeHash(ws)
      const { exit, records } = await withEngine(ws, (e) =>
        e.applyPlan({ ...ctx, writeScope: ["sub"], grant: { write: true, createDirs: true, overwrite: true }, plan: planOf(file), onProgress: atLock(swapToLink(ws, "sub/x", "../docs")) }))
      expect(failureOf(exit).code, what).toBe("path_outside_scope")
      expect(readAt(ws, "docs/a.txt"), what).toBe("v1\n")
      expect(records, what).toEqual([])
      // Only the swap itself changed the tree.
      fs.rmSync(path.join(ws, "sub/x"))
      fs.renameSync(path.join(ws, "sub/x.old"), path.join(ws, "sub/x"))
      expect(treeHash(ws), what).toBe(before)
    }
  })

  it("a path already leading through a link when the request comes: refused at stage 4, before the lock", async () => {
    const ws = makeWorkspace({ "docs/a.txt": "v1\n", "sub/keep.txt": "k\n" })
    fs.symlinkSync("../docs", path.join(ws, "sub/x"))
    const out = await withEngine(ws, (e) => e.applyPlan({ ...ctx, writeScope: ["sub"], plan: planOf(update("sub/x/a.txt", "v1\n", "v2\n")) }))
    expect(failureOf(out.exit)).toMatchObject({ code: "path_outside_scope", stage: 4, paths: ["sub/x/a.txt", "docs/a.txt"] })
    fs.mkdirSync(path.join(ws, "sub/y"))
    fs.writeFileSync(path.join(ws, "sub/y/a.txt"), "v1\n")
    fs.symlinkSync("y", path.join(ws, "sub/z"))
    const inside = await withEngine(ws, (e) => e.applyPlan({ ...ctx, writeScope: ["sub"], plan: planOf(update("sub/z/a.txt", "v1\n", "v2\n")) }))
    expect(failureOf(inside.exit)).toMatchObject({ code: "path_redirected", stage: 4, paths: ["sub/z/a.txt", "sub/y/a.txt"] })
    expect(readAt(ws, "docs/a.txt")).toBe("v1\n")
    expect(readAt(ws, "sub/y/a.txt")).toBe("v1\n")
  })

  it("real paths inside the scope are written; a file scope covers only itself", async () => {
    const ws = makeWorkspace({ "sub/x/a.txt": "v1\n", "top.txt": "t\n" })
    const ok = await withEngine(ws, (e) => e.applyPlan({ ...ctx, writeScope: ["sub", "top.txt"], plan: planOf(update("sub/x/a.txt", "v1\n", "v2\n"), update("top.txt", "t\n", "T\n")) }))
    expect(Exit.isSuccess(ok.exit)).toBe(true)
    expect(readAt(ws, "sub/x/a.txt")).toBe("v2\n")
    const out = await withEngine(ws, (e) => e.applyPlan({ ...ctx, writeScope: ["sub/x/a.txt"], plan: planOf(update("top.txt", "T\n", "U\n")) }))
    expect(failureOf(out.exit)).toMatchObject({ code: "path_outside_scope", paths: ["top.txt", "top.txt"] })
  })

  it("a scope entry that is not a normalized relative path is request_invalid", async () => {
    const ws = makeWorkspace({ "sub/a.txt": "v1\n" })
    for (const entry of ["./sub", "sub/", "/sub", "../sub", ""]) {
      const { exit } = await withEngine(ws, (e) => e.applyPlan({ ...ctx, writeScope: [entry], plan: planOf(update("sub/a.txt", "v1\n", "v2\n")) }))
      expect(failureOf(exit), entry).toMatchObject({ code: "request_invalid", stage: 1 })
    }
    expect(readAt(ws, "sub/a.txt")).toBe("v1\n")
  })
})

describe("stage 6 without a scope", () => {
  it("a folder swapped to a link under the lock is stale_file even when the bytes there match: nothing is written through it", async () => {
    const ws = makeWorkspace({ "sub/x/a.txt": "v1\n", "docs/a.txt": "v1\n" })
    const { exit, records } = await withEngine(ws, (e) =>
      e.applyPlan({ ...ctx, plan: planOf(update("sub/x/a.txt", "v1\n", "v2\n")), onProgress: atLock(swapToLink(ws, "sub/x", "../docs")) }))
    expect(failureOf(exit)).toMatchObject({ code: "stale_file", stage: 6, paths: ["sub/x/a.txt", "docs/a.txt"] })
    expect(readAt(ws, "docs/a.txt")).toBe("v1\n")
    expect(records).toEqual([])
  })
})

describe("locked steps", () => {
  it("before runs holding the workspace lock, and its failure writes and records nothing", async () => {
    const ws = makeWorkspace({ "a.txt": "v1\n" })
    const lockFile = path.join(ws, ".forkjoin", "lock.db")
    const probe = withStateLock(lockFile, { timeoutMs: 0, paths: [] }, Effect.void).pipe(Effect.flip, Effect.map((e) => e.code))
    const { exit, records } = await withEngine(ws, (e) =>
      e.applyPlan({
        ...ctx,
        plan: planOf(update("a.txt", "v1\n", "v2\n")),
        locked: { before: Effect.flatMap(probe, (held) => Effect.fail(`refused while ${held}`)) }
      }).pipe(Effect.match({ onFailure: String, onSuccess: () => "written" })))
    expect(exit).toEqual(Exit.succeed("refused while lock_timeout"))
    expect(readAt(ws, "a.txt")).toBe("v1\n")
    expect(records).toEqual([])
  })

  it("after sees the committed record, still under the lock; Engine.locked holds it too", async () => {
    const ws = makeWorkspace({ "a.txt": "v1\n" })
    const lockFile = path.join(ws, ".forkjoin", "lock.db")
    const probe = withStateLock(lockFile, { timeoutMs: 0, paths: [] }, Effect.succeed("free")).pipe(Effect.catch((e) => Effect.succeed(e.code)))
    const seen: Array<string> = []
    const { exit } = await withEngine(ws, (e) =>
      Effect.gen(function*() {
        yield* e.applyPlan({
          ...ctx,
          plan: planOf(update("a.txt", "v1\n", "v2\n")),
          locked: { after: (record) => Effect.map(probe, (held) => void seen.push(`${record.changes[0]?.path} ${held}`)) }
        })
        seen.push(`locked ${yield* e.locked(probe)}`)
        seen.push(`outside ${yield* probe}`)
      }))
    expect(Exit.isSuccess(exit)).toBe(true)
    expect(seen).toEqual(["a.txt lock_timeout", "locked lock_timeout", "outside free"])
  })
})
