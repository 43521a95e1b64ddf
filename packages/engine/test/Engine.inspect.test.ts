/**
 * `Engine.inspect`: per-path resolution results with state, mode, landing and lazy snapshot
 * facts; a path's own problem fails only that path, two paths naming one file fail the call.
 */
import { RelativePath } from "@forkjoin/schema/Ids"
import { factsOf } from "@forkjoin/patch/Snapshot"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import type { Inspection } from "../src/Engine.ts"
import { failureOf, makeWorkspace, removeSandboxes, withEngine } from "./helpers.ts"

afterAll(removeSandboxes)

const succeeded = <A>(exit: Exit.Exit<A, unknown>): A => {
  if (Exit.isFailure(exit)) throw new Error(`expected success, got ${String(exit.cause)}`)
  return exit.value
}

const inspection = (r: Result.Result<Inspection, unknown> | undefined): Inspection => {
  if (r === undefined || Result.isFailure(r)) throw new Error(`expected an inspection, got ${String(r)}`)
  return r.success
}

describe("Engine.inspect", () => {
  it("reports state, mode and landing of a plain file, and its facts lazily", async () => {
    const ws = makeWorkspace({ "a.txt": "one\r\ntwo" })
    fs.chmodSync(path.join(ws, "a.txt"), 0o751)
    const { exit } = await withEngine(ws, (e) => e.inspect(["a.txt", "nope.txt", "dir"]), {}, undefined)
    const map = succeeded(exit)
    const a = inspection(map.get("a.txt"))
    expect(a).toMatchObject({ path: RelativePath.make("a.txt"), mode: 0o751, landing: "a.txt" })
    expect(a.state._tag).toBe("File")
    // A getter: nothing is hashed until `facts` is read, then the same value every time.
    expect(Object.getOwnPropertyDescriptor(a, "facts")?.get).toBeTypeOf("function")
    const bytes = a.state._tag === "File" ? a.state.bytes : new Uint8Array()
    expect(a.facts).toEqual(factsOf(bytes))
    expect(a.facts).toMatchObject({ lineEnding: "crlf", finalNewline: false })
    expect(a.facts).toBe(a.facts)
    const missing = inspection(map.get("nope.txt"))
    expect(missing).toMatchObject({ state: { _tag: "Missing" }, mode: undefined, landing: "nope.txt", facts: undefined })
  })

  it("follows in-workspace symlinks to where a write would land", async () => {
    const ws = makeWorkspace({ "real/x.txt": "x\n" })
    fs.symlinkSync(path.join(ws, "real"), path.join(ws, "link"))
    const { exit } = await withEngine(ws, (e) => e.inspect(["link/x.txt", "link/new/y.txt"]))
    const map = succeeded(exit)
    expect(inspection(map.get("link/x.txt"))).toMatchObject({ path: RelativePath.make("link/x.txt"), landing: "real/x.txt", state: { _tag: "File" } })
    expect(inspection(map.get("link/new/y.txt"))).toMatchObject({ landing: "real/new/y.txt", state: { _tag: "Missing" } })
  })

  it("a path landing in an allowed root outside the workspace has no landing", async () => {
    const outside = makeWorkspace({ "lib.txt": "v1\n" })
    const ws = makeWorkspace()
    fs.symlinkSync(outside, path.join(ws, "vendor"))
    const { exit } = await withEngine(ws, (e) => e.inspect(["vendor/lib.txt"]), { allowedRoots: [outside] })
    const map = succeeded(exit)
    const lib = inspection(map.get("vendor/lib.txt"))
    expect(lib.landing).toBeUndefined()
    expect(lib.state._tag).toBe("File")
  })

  it("a path's own problem fails that path only, with read's code and message", async () => {
    const outside = makeWorkspace({ "secret.txt": "s\n" })
    const ws = makeWorkspace({ "a.txt": "a\n", ".git/config": "c\n" })
    fs.symlinkSync(outside, path.join(ws, "out"))
    const bad = [".git/config", "out/secret.txt", "a.txt/inner"]
    const { exit } = await withEngine(ws, (e) => e.inspect(["a.txt", ...bad]))
    const map = succeeded(exit)
    expect(inspection(map.get("a.txt")).state._tag).toBe("File")
    const codes = bad.map((p) => {
      const r = map.get(p)
      if (r === undefined || Result.isSuccess(r)) throw new Error(`expected ${p} to fail`)
      return [r.failure.code, r.failure.stage]
    })
    expect(codes).toEqual([["path_denied_by_policy", 3], ["path_outside_roots", 3], ["path_invalid", 3]])
    // Each failure is exactly what `read` reports for that path.
    for (const p of bad) {
      const read = await withEngine(ws, (e) => e.read([p]))
      const r = map.get(p)
      if (r === undefined || Result.isSuccess(r)) throw new Error("unreachable")
      expect(r.failure).toMatchObject({ code: failureOf(read.exit).code, message: failureOf(read.exit).message, paths: [p] })
    }
  })

  it("fails the whole call when two paths name the same file", async () => {
    const ws = makeWorkspace({ "real/x.txt": "x\n" })
    fs.symlinkSync(path.join(ws, "real"), path.join(ws, "link"))
    const { exit } = await withEngine(ws, (e) => e.inspect(["real/x.txt", "link/x.txt"]))
    expect(failureOf(exit)).toMatchObject({ code: "path_invalid", stage: 3, paths: ["real/x.txt", "link/x.txt"] })
  })

  it("read still fails on the first bad path", async () => {
    const ws = makeWorkspace({ "a.txt": "a\n" })
    const { exit } = await withEngine(ws, (e) =>
      e.read(["a.txt", ".forkjoin/x", ".git/y"]).pipe(Effect.map((m) => [...m.keys()])))
    expect(failureOf(exit)).toMatchObject({ code: "path_denied_by_policy", paths: [".forkjoin/x"] })
  })
})
