/**
 * Fault-injection tests of the engine's on-disk stage/commit steps: a failure at any step
 * restores every committed file, removes temps and created directories, and reports
 * `commit_failed` (stage 7 while staging, 8 while committing).
 */
import { RelativePath } from "@forkjoin/schema/Ids"
import type { Plan } from "@forkjoin/patch"
import { EngineError } from "@forkjoin/schema/EngineError"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { type WriterIo, writePlan } from "../src/internal/commit.ts"
import { compileGlob, resolveTargets } from "../src/internal/resolve.ts"
import { makeSandbox, removeSandboxes, snapshotTree, writeTree } from "../../cli/test/helpers.ts"

afterAll(removeSandboxes)

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)

/** A workspace with three files and a plan touching all of them plus a new nested file. */
const setup = () => {
  const { ws } = makeSandbox()
  writeTree(ws, { "a.txt": "a0\n", "b.txt": "b0\n", "c.txt": "c0\n" })
  fs.chmodSync(path.join(ws, "a.txt"), 0o750)
  const plan: Plan = {
    files: [
      { kind: "update", path: RelativePath.make("a.txt"), before: bytes("a0\n"), after: bytes("a1\n") },
      { kind: "add", path: RelativePath.make("deep/er/new.txt"), before: undefined, after: bytes("new\n") },
      { kind: "delete", path: RelativePath.make("b.txt"), before: bytes("b0\n"), after: undefined },
      { kind: "move", path: RelativePath.make("moved/c.txt"), moveFrom: RelativePath.make("c.txt"), before: bytes("c0\n"), after: bytes("c1\n") }
    ],
    summary: []
  }
  const ctx = { root: fs.realpathSync(ws), allowedRoots: [], denied: [{ glob: ".git/**", re: compileGlob(".git/**", false) }], caseInsensitive: false }
  const targets = resolveTargets(ctx, ["a.txt", "deep/er/new.txt", "b.txt", "moved/c.txt", "c.txt"])
  return { ws, plan, targets: new Map(targets.map((t) => [t.path, t])) }
}

/** The real node:fs, except that the `nth` call (1-based) of `method` throws EIO. */
const failingIo = (method: keyof WriterIo, nth: number): WriterIo => {
  let calls = 0
  return {
    ...fs,
    [method]: (...args: Array<unknown>) => {
      calls++
      if (calls === nth) throw Object.assign(new Error(`injected ${String(method)} failure`), { code: "EIO" })
      return (fs[method as keyof typeof fs] as (...a: Array<unknown>) => unknown)(...args)
    }
  } as WriterIo
}

const expectCommitFailed = (run: () => void): EngineError => {
  try {
    run()
  } catch (error) {
    expect(error).toBeInstanceOf(EngineError)
    expect((error as EngineError).code).toBe("commit_failed")
    expect([7, 8]).toContain((error as EngineError).stage)
    return error as EngineError
  }
  throw new Error("writePlan did not fail")
}

describe("writePlan", () => {
  it("commits every change and keeps permission bits", () => {
    const { plan, targets, ws } = setup()
    writePlan(plan, targets)
    const tree = snapshotTree(ws)
    expect(Object.keys(tree).sort()).toEqual(["a.txt", "deep", "deep/er", "deep/er/new.txt", "moved", "moved/c.txt"])
    expect(tree["a.txt"]).toBe(`file 750 ${Buffer.from("a1\n").toString("base64")}`)
    expect(fs.readFileSync(path.join(ws, "moved/c.txt"), "utf8")).toBe("c1\n")
  })

  const faults: ReadonlyArray<[string, keyof WriterIo, number]> = [
    ["staging a temp file", "writeSync", 2],
    ["fsyncing a temp file", "fsyncSync", 3],
    ["creating a directory", "mkdirSync", 2],
    ["the first rename", "renameSync", 1],
    ["a later rename", "renameSync", 3],
    ["the delete", "unlinkSync", 1],
    ["removing a move's source", "unlinkSync", 2]
  ]

  it.each(faults)("a failure while %s restores the workspace exactly", (_name, method, nth) => {
    const { plan, targets, ws } = setup()
    const before = snapshotTree(ws)
    const error = expectCommitFailed(() => writePlan(plan, targets, failingIo(method, nth)))
    expect(error.message).toMatch(/workspace is unchanged|nothing was changed/)
    expect(error.paths.length).toBeGreaterThan(0)
    // Same names, bytes and modes; no temp files or created directories left behind.
    expect(snapshotTree(ws)).toEqual(before)
  })
})
