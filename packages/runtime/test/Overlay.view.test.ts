/**
 * The overlay's view: listings merge the shared tree with staged adds and deletes and hide
 * denied paths; path and planning errors are the engine's codes; patches see staged edits.
 */
import { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import { afterAll, describe, expect, it } from "vitest"
import * as Overlay from "../src/Overlay.ts"
import * as WriteScope from "../src/WriteScope.ts"
import { binary, fingerprint, makeWorkspace, patchOf, removeSandboxes, run, text, utf8, valueOf } from "./helpers.ts"

afterAll(removeSandboxes)

const codeOf = (e: unknown) =>
  e instanceof EngineError ? `${e.code}:${e.paths.join(",")}` : e instanceof WriteScope.WriteScopeViolation ? e.code : String(e)

const names = (entries: ReadonlyArray<Overlay.DirEntry>) => entries.map((e) => `${e.kind}:${e.name}`)

describe("Overlay.listDir", () => {
  it("merges the shared listing with staged adds, deletes and moves; hides .git and .forkjoin", async () => {
    const ws = makeWorkspace({
      ".git/config": "[core]\n",
      "README.md": "r\n",
      "src/a/one.txt": "one\n",
      "src/a/two.txt": "two\n",
      "src/a/sub/deep.txt": "deep\n"
    })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const o = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src", "lib"]) })
        const rootBefore = names(yield* o.listDir("."))
        yield* o.applyPatch(patchOf(
          "*** Delete File: src/a/two.txt",
          "*** Add File: src/a/fresh/new.txt",
          "+new",
          "*** Update File: src/a/sub/deep.txt",
          "*** Move to: lib/deep.txt",
          "@@",
          "-deep",
          "+deeper"
        ))
        return {
          rootBefore,
          root: names(yield* o.listDir("")),
          a: names(yield* o.listDir("src/a")),
          // The only file of src/a/sub moved away; the directory itself is still there.
          sub: names(yield* o.listDir("src/a/sub/")),
          fresh: names(yield* o.listDir("src\\a\\fresh")),
          lib: names(yield* o.listDir("lib"))
        }
      })
    )
    expect(valueOf(exit)).toEqual({
      rootBefore: ["file:README.md", "directory:src"],
      root: ["file:README.md", "directory:lib", "directory:src"],
      a: ["directory:fresh", "file:one.txt", "directory:sub"],
      sub: [],
      fresh: ["file:new.txt"],
      lib: ["file:deep.txt"]
    })
  })

  it("refuses denied, missing, escaping and file paths with the engine's codes", async () => {
    const ws = makeWorkspace({ ".git/config": "[core]\n", "src/a.txt": "a\n" })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const o = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src"]) })
        return yield* Effect.forEach([".git", ".forkjoin", "nope", "../up", "/etc", "src/a.txt"], (p) =>
          Effect.flip(o.listDir(p)).pipe(Effect.map(codeOf)))
      })
    )
    expect(valueOf(exit)).toEqual([
      "path_denied_by_policy:.git",
      "path_denied_by_policy:.forkjoin",
      "target_missing:nope",
      "path_outside_roots:../up",
      "path_outside_roots:/etc",
      "unsupported_file_type:src/a.txt"
    ])
  })
})

describe("Overlay reads and patches", () => {
  it("read errors carry the engine's codes and paths", async () => {
    const ws = makeWorkspace({ ".git/config": "[core]\n", "src/a.txt": "a\n" })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const o = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src"]) })
        return yield* Effect.forEach([".git/config", "../x", "src/none.txt", "src", "src/a.txt/x"], (p) =>
          Effect.flip(o.readFile(p)).pipe(Effect.map(codeOf)))
      })
    )
    expect(valueOf(exit)).toEqual([
      "path_denied_by_policy:.git/config",
      "path_outside_roots:../x",
      "target_missing:src/none.txt",
      "unsupported_file_type:src",
      "path_invalid:src/a.txt/x"
    ])
  })

  it("patches are planned against the child's own staged edits, and fail like the engine's", async () => {
    const ws = makeWorkspace({ "src/a.txt": "one\ntwo\n", "src/bin.dat": binary(50), "src/dup.txt": "x\ny\nx\ny\n" })
    const before = fingerprint(ws)
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const o = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src"]) })
        yield* o.applyPatch(patchOf("*** Update File: src/a.txt", "@@", "-one", "+ONE"))
        // This patch only applies on top of the previous one.
        yield* o.applyPatch(patchOf("*** Update File: src/a.txt", "@@", " ONE", "-two", "+TWO"))
        const failures = yield* Effect.forEach([
          patchOf("*** Update File: src/a.txt", "@@", "-one", "+1"),
          patchOf("*** Add File: src/a.txt", "+again"),
          patchOf("*** Update File: src/bin.dat", "@@", "-x", "+y"),
          patchOf("*** Update File: src/dup.txt", "@@", "-x", "+z"),
          patchOf("*** Frobnicate: src/a.txt"),
          patchOf("*** Add File: src/a.txt/inner.txt", "+x"),
          patchOf("*** Delete File: src/missing.txt")
        ], (p) => Effect.flip(o.applyPatch(p)).pipe(Effect.map(codeOf)))
        const afterFailures = text(yield* o.readFile("src/a.txt"))
        // Deleting a file frees its path for a directory in the child's view.
        yield* o.deleteFile("src/a.txt")
        yield* o.writeFile("src/a.txt/inner.txt", utf8("inner\n"))
        const inner = text(yield* o.readFile("src/a.txt/inner.txt"))
        return { failures, afterFailures, inner }
      })
    )
    const v = valueOf(exit)
    expect(v.failures).toEqual([
      "context_not_found:src/a.txt",
      "target_exists:src/a.txt",
      "unsupported_file_type:src/bin.dat",
      "ambiguous_context:src/dup.txt",
      "patch_syntax:",
      "path_invalid:src/a.txt/inner.txt",
      "target_missing:src/missing.txt"
    ])
    expect(v.afterFailures).toBe("ONE\nTWO\n")
    expect(v.inner).toBe("inner\n")
    expect(fingerprint(ws)).toEqual(before)
  })

  it("the caller cannot change what later reads return by mutating returned or written buffers", async () => {
    const ws = makeWorkspace({ "src/a.txt": "abc\n" })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const o = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src"]) })
        const first = yield* o.readFile("src/a.txt")
        first[0] = 0x5a
        const written = utf8("mine\n")
        yield* o.writeFile("src/b.txt", written)
        written[0] = 0x5a
        return [text(yield* o.readFile("src/a.txt")), text(yield* o.readFile("src/b.txt"))]
      })
    )
    expect(valueOf(exit)).toEqual(["abc\n", "mine\n"])
  })

  it("operations on one overlay are serialized: concurrent patches all land, none is lost", async () => {
    const ws = makeWorkspace({ "src/log.txt": "start\n" })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const o = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src"]) })
        yield* Effect.forEach(
          Array.from({ length: 20 }, (_, i) => i),
          (i) => o.applyPatch(patchOf(`*** Add File: src/f${i}.txt`, `+${i}`)),
          { concurrency: "unbounded" }
        )
        return (yield* o.export({ childId: "c" as never, taskId: "c" as never, threadId: "t" as never })).entries.length
      })
    )
    expect(valueOf(exit)).toBe(20)
  })
})
