/**
 * Every mutation is checked against the write scope before anything is staged (SPEC §6.1),
 * move destinations, deletions and symlinked directories included.
 */
import type { TaskId, ThreadId } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as Overlay from "../src/Overlay.ts"
import * as WriteScope from "../src/WriteScope.ts"
import { fingerprint, makeWorkspace, patchOf, removeSandboxes, run, utf8, valueOf } from "./helpers.ts"

afterAll(removeSandboxes)

const identity = { childId: "c" as TaskId, taskId: "c" as TaskId, threadId: "t-c" as ThreadId }

const violation = (e: unknown) =>
  e instanceof WriteScope.WriteScopeViolation
    ? { code: e.code, operation: e.operation, violatingPaths: e.violatingPaths }
    : { unexpected: String(e) }

describe("write scope guard", () => {
  it("refuses out-of-scope updates, adds, move destinations and deletes, staging nothing", async () => {
    const ws = makeWorkspace({
      "src/a/one.txt": "one\n",
      "src/a/two.txt": "two\n",
      "src/a2/x.txt": "x\n",
      "src/b/other.txt": "other\n",
      "README.md": "readme\n"
    })
    const before = fingerprint(ws)
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const overlay = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src/a"]) })
        const attempts = [
          overlay.applyPatch(patchOf("*** Update File: src/b/other.txt", "@@", "-other", "+mine")),
          // A mixed patch: the in-scope half must not be staged either.
          overlay.applyPatch(patchOf("*** Update File: src/a/one.txt", "@@", "-one", "+ONE", "*** Add File: src/b/new.txt", "+n")),
          overlay.applyPatch(patchOf("*** Update File: src/a/two.txt", "*** Move to: src/b/two.txt", "@@", "-two", "+2")),
          overlay.applyPatch(patchOf("*** Delete File: README.md")),
          overlay.applyPatch(patchOf("*** Add File: src/a2/y.txt", "+prefix sibling")),
          overlay.deleteFile("README.md"),
          overlay.moveFile("src/a/one.txt", "src/a2/one.txt"),
          overlay.moveFile("src/a2/x.txt", "src/a/x.txt"),
          overlay.writeFile("src/a/../b/sneaky.txt", utf8("normalized first")),
          overlay.writeFile("docs/new.md", utf8("x"))
        ]
        const refused = []
        for (const attempt of attempts) refused.push(violation(yield* Effect.flip(attempt)))
        // Reads outside the scope stay allowed.
        const readme = yield* overlay.readFile("README.md")
        return { refused, readme, changeset: yield* overlay.export(identity) }
      })
    )
    const v = valueOf(exit)
    expect(v.refused).toEqual([
      { code: "write_scope_violation", operation: "apply_patch", violatingPaths: ["src/b/other.txt"] },
      { code: "write_scope_violation", operation: "apply_patch", violatingPaths: ["src/b/new.txt"] },
      { code: "write_scope_violation", operation: "apply_patch", violatingPaths: ["src/b/two.txt"] },
      { code: "write_scope_violation", operation: "apply_patch", violatingPaths: ["README.md"] },
      { code: "write_scope_violation", operation: "apply_patch", violatingPaths: ["src/a2/y.txt"] },
      { code: "write_scope_violation", operation: "delete_file", violatingPaths: ["README.md"] },
      { code: "write_scope_violation", operation: "move_file", violatingPaths: ["src/a2/one.txt"] },
      { code: "write_scope_violation", operation: "move_file", violatingPaths: ["src/a2/x.txt"] },
      { code: "write_scope_violation", operation: "write_file", violatingPaths: ["src/b/sneaky.txt"] },
      { code: "write_scope_violation", operation: "write_file", violatingPaths: ["docs/new.md"] }
    ])
    expect(new TextDecoder().decode(v.readme)).toBe("readme\n")
    expect(v.changeset.entries).toEqual([])
    expect(fingerprint(ws)).toEqual(before)
  })

  it("the violation message names the paths and the scope and says nothing was staged", async () => {
    const ws = makeWorkspace({ "src/b/x.txt": "x\n" })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const overlay = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src/a", "docs/readme.md"]) })
        return yield* Effect.flip(overlay.deleteFile("src/b/x.txt"))
      })
    )
    const e = valueOf(exit)
    expect(e.message).toBe(
      "delete_file was refused: \"src/b/x.txt\" is outside the write scope [\"docs/readme.md\", \"src/a\"]. Nothing was staged; change only paths inside the scope."
    )
  })

  it("a refused patch does not poison later staging", async () => {
    const ws = makeWorkspace({ "src/a/one.txt": "one\n", "src/b/x.txt": "x\n" })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const overlay = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src/a"]) })
        yield* Effect.flip(overlay.applyPatch(patchOf("*** Delete File: src/b/x.txt")))
        yield* overlay.applyPatch(patchOf("*** Update File: src/a/one.txt", "@@", "-one", "+ONE"))
        return yield* overlay.export(identity)
      })
    )
    expect(valueOf(exit).entries.map((e) => e.path)).toEqual(["src/a/one.txt"])
  })

  it("refuses writes that would land outside the scope through a symbolic link", async () => {
    const ws = makeWorkspace({ "src/a/one.txt": "one\n", "src/b/secret.txt": "secret\n", "src/a/real/in.txt": "in\n" })
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), "fj-outside-"))
    fs.symlinkSync("../b", path.join(ws, "src/a/tob"))
    fs.symlinkSync("real", path.join(ws, "src/a/alias"))
    fs.symlinkSync(outside, path.join(ws, "src/a/out"))
    const before = fingerprint(ws)
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const overlay = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src/a"]) })
        const refused = [
          violation(yield* Effect.flip(overlay.writeFile("src/a/tob/secret.txt", utf8("pwned")))),
          violation(yield* Effect.flip(overlay.applyPatch(patchOf("*** Add File: src/a/tob/new.txt", "+x")))),
          violation(yield* Effect.flip(overlay.writeFile("src/a/out/x.txt", utf8("x"))))
        ]
        // A link that stays inside the scope is fine: the write lands in src/a/real.
        yield* overlay.writeFile("src/a/alias/in.txt", utf8("edited\n"))
        return { refused, changeset: yield* overlay.export(identity) }
      })
    )
    fs.rmSync(outside, { recursive: true, force: true })
    const v = valueOf(exit)
    expect(v.refused).toEqual([
      { code: "write_scope_violation", operation: "write_file", violatingPaths: ["src/a/tob/secret.txt"] },
      { code: "write_scope_violation", operation: "apply_patch", violatingPaths: ["src/a/tob/new.txt"] },
      { code: "write_scope_violation", operation: "write_file", violatingPaths: ["src/a/out/x.txt"] }
    ])
    expect(v.changeset.entries.map((e) => [e.kind, e.path])).toEqual([["replace", "src/a/alias/in.txt"]])
    expect(fingerprint(ws)).toEqual(before)
  })

  it("a file scope allows exactly that file", async () => {
    const ws = makeWorkspace({ "docs/readme.md": "r\n", "docs/readme.md.bak": "b\n" })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const overlay = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["docs/readme.md"]) })
        const refused = violation(yield* Effect.flip(overlay.deleteFile("docs/readme.md.bak")))
        yield* overlay.applyPatch(patchOf("*** Update File: docs/readme.md", "@@", "-r", "+R"))
        return { refused, changeset: yield* overlay.export(identity) }
      })
    )
    const v = valueOf(exit)
    expect(v.refused.violatingPaths).toEqual(["docs/readme.md.bak"])
    expect(v.changeset.entries.map((e) => e.path)).toEqual(["docs/readme.md"])
    expect(v.changeset.writeScope).toEqual(["docs/readme.md"])
  })
})
