/**
 * Export (SPEC §6.3): first preimage + last postimage per path, moves kept as moves, no-op
 * entries dropped, exportability per entry with a reason, nothing exported once discarded.
 */
import { sha256 } from "@forkjoin/patch"
import { Changeset, decodeUntrustedChangeset, type TaskId, type ThreadId } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { afterAll, describe, expect, it } from "vitest"
import { BlobStore } from "../src/BlobStore.ts"
import * as Overlay from "../src/Overlay.ts"
import * as WriteScope from "../src/WriteScope.ts"
import { binary, makeWorkspace, patchOf, removeSandboxes, run, text, utf8, valueOf } from "./helpers.ts"

afterAll(removeSandboxes)

const identity = { childId: "edit-a" as TaskId, taskId: "edit-a" as TaskId, threadId: "thread-a" as ThreadId }

const summary = (c: Changeset) =>
  c.entries.map((e) => ({
    kind: e.kind,
    path: e.path,
    ...(e.moveFrom === undefined ? {} : { moveFrom: e.moveFrom }),
    pre: e.preimage?.hash ?? null,
    post: e.postimage?.hash ?? null
  }))

const h = (s: string) => sha256(utf8(s))

describe("Overlay.export", () => {
  it("keeps the first preimage and the last postimage across many edits", async () => {
    const ws = makeWorkspace({ "src/a.txt": "v0\n" })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const o = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src"]) })
        yield* o.applyPatch(patchOf("*** Update File: src/a.txt", "@@", "-v0", "+v1"))
        yield* o.applyPatch(patchOf("*** Update File: src/a.txt", "@@", "-v1", "+v2"))
        yield* o.applyPatch(patchOf("*** Update File: src/a.txt", "@@", "-v2", "+v3"))
        yield* o.applyPatch(patchOf("*** Add File: src/n.txt", "+n1"))
        yield* o.applyPatch(patchOf("*** Update File: src/n.txt", "@@", "-n1", "+n2"))
        return yield* o.export(identity)
      })
    )
    expect(summary(valueOf(exit))).toEqual([
      { kind: "update", path: "src/a.txt", pre: h("v0\n"), post: h("v3\n") },
      { kind: "add", path: "src/n.txt", pre: null, post: h("n2\n") }
    ])
  })

  it("drops paths restored to their preimage: edit+revert, add+delete, move there and back, identical rewrite", async () => {
    const ws = makeWorkspace({ "src/a.txt": "a\n", "src/b.txt": "b\n", "src/c.bin": binary(100) })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const o = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src"]) })
        yield* o.applyPatch(patchOf("*** Update File: src/a.txt", "@@", "-a", "+A"))
        yield* o.applyPatch(patchOf("*** Update File: src/a.txt", "@@", "-A", "+a"))
        yield* o.applyPatch(patchOf("*** Add File: src/tmp.txt", "+scratch"))
        yield* o.deleteFile("src/tmp.txt")
        yield* o.moveFile("src/b.txt", "src/b2.txt")
        yield* o.applyPatch(patchOf("*** Update File: src/b2.txt", "*** Move to: src/b.txt", "@@", "-b", "+b"))
        yield* o.writeFile("src/c.bin", binary(100))
        yield* o.deleteFile("src/c.bin")
        yield* o.writeFile("src/c.bin", binary(100))
        return yield* o.export(identity)
      })
    )
    const c = valueOf(exit)
    expect(c.entries).toEqual([])
    expect(c.exportable).toBe(true)
    expect(c.blobs.hashes).toEqual([])
  })

  it("keeps moves as moves (chains collapse, edits ride along) and names each kind", async () => {
    const ws = makeWorkspace({
      "src/m.txt": "move me\n",
      "src/e.txt": "edit\nme\n",
      "src/r.txt": "replace me\n",
      "src/d.txt": "delete me\n",
      "src/swap1.txt": "one\n",
      "src/swap2.txt": "two\n"
    })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const o = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src"]) })
        yield* o.moveFile("src/m.txt", "src/m2.txt")
        yield* o.applyPatch(patchOf("*** Update File: src/m2.txt", "*** Move to: src/m3.txt", "@@", "-move me", "+moved"))
        yield* o.applyPatch(patchOf("*** Update File: src/e.txt", "@@", " edit", "-me", "+you"))
        yield* o.writeFile("src/r.txt", utf8("replaced\n"))
        yield* o.applyPatch(patchOf("*** Delete File: src/d.txt"))
        // A three-way swap is not a move: both ends still exist afterwards.
        yield* o.moveFile("src/swap1.txt", "src/tmp.txt")
        yield* o.moveFile("src/swap2.txt", "src/swap1.txt")
        yield* o.moveFile("src/tmp.txt", "src/swap2.txt")
        return yield* o.export(identity)
      })
    )
    const c = valueOf(exit)
    expect(summary(c)).toEqual([
      { kind: "delete", path: "src/d.txt", pre: h("delete me\n"), post: null },
      { kind: "update", path: "src/e.txt", pre: h("edit\nme\n"), post: h("edit\nyou\n") },
      { kind: "move", path: "src/m3.txt", moveFrom: "src/m.txt", pre: h("move me\n"), post: h("moved\n") },
      { kind: "replace", path: "src/r.txt", pre: h("replace me\n"), post: h("replaced\n") },
      { kind: "replace", path: "src/swap1.txt", pre: h("one\n"), post: h("two\n") },
      { kind: "replace", path: "src/swap2.txt", pre: h("two\n"), post: h("one\n") }
    ])
    const move = c.entries.find((e) => e.kind === "move")!
    expect(move.preimage?.path).toBe("src/m.txt")
    expect(move.postimage?.path).toBe("src/m3.txt")
    expect(move.preimage?.mode).toBeTypeOf("number")
  })

  it("a move onto an existing file (overwrite granted) carries the destination's preimage as overwritten", async () => {
    const ws = makeWorkspace({ "src/from.txt": "from\n", "src/to.txt": "to\n" })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const scope = WriteScope.makeUnsafe(["src"])
        const strict = yield* Overlay.make({ writeScope: scope })
        const refused = yield* Effect.flip(strict.moveFile("src/from.txt", "src/to.txt"))
        const o = yield* Overlay.make({ writeScope: scope, allowOverwrite: true })
        yield* o.moveFile("src/from.txt", "src/to.txt")
        return { refused: refused._tag === "EngineError" ? refused.code : refused._tag, changeset: yield* o.export(identity) }
      })
    )
    const v = valueOf(exit)
    expect(v.refused).toBe("unsafe_move")
    expect(v.changeset.entries).toEqual([
      expect.objectContaining({
        kind: "move",
        path: "src/to.txt",
        moveFrom: "src/from.txt",
        overwritten: expect.objectContaining({ path: "src/to.txt", hash: h("to\n") })
      })
    ])
  })

  it("stores every exportable postimage in the blob store, binary and text alike, with its facts", async () => {
    const ws = makeWorkspace({ "src/crlf.txt": "a\r\nb\r\n", "src/img.png": binary(3000, 9) })
    const png = binary(40_000, 11)
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const o = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src"]) })
        yield* o.applyPatch(patchOf("*** Update File: src/crlf.txt", "@@", " a", "-b", "+c"))
        yield* o.writeFile("src/img.png", png)
        const c = yield* o.export(identity)
        const store = yield* BlobStore
        const back = yield* Effect.forEach(c.entries, (e) => store.get(e.postimage!.hash))
        return { c, back }
      })
    )
    const { c, back } = valueOf(exit)
    expect(c.entries.map((e) => [e.kind, e.postimage?.encoding, e.postimage?.lineEnding, e.preimage?.encoding])).toEqual([
      ["update", "utf8", "crlf", "utf8"],
      ["replace", "binary", "none", "binary"]
    ])
    expect(text(back[0]!)).toBe("a\r\nc\r\n")
    expect(Buffer.from(back[1]!).equals(Buffer.from(png))).toBe(true)
    expect(c.blobs.hashes).toEqual([...c.entries.map((e) => e.postimage!.hash)].sort())
  })

  it("marks entries above the per-file limit not exportable with a reason, and warns when staging", async () => {
    const ws = makeWorkspace({ "src/big-old.bin": binary(4096, 2), "src/small.txt": "s\n", "src/big-move.bin": binary(4096, 4) })
    const big = binary(2048, 3)
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const o = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src"]), maxFileBytes: 1024 })
        const staged = yield* o.writeFile("src/big.bin", big)
        yield* o.deleteFile("src/big-old.bin")
        yield* o.moveFile("src/big-move.bin", "src/moved.bin")
        yield* o.writeFile("src/small.txt", utf8("small\n"))
        const c = yield* o.export(identity)
        const store = yield* BlobStore
        return { staged, c, stored: yield* store.has(sha256(big)) }
      })
    )
    const { staged, c, stored } = valueOf(exit)
    expect(staged.warnings).toEqual([expect.objectContaining({ code: "postimage_too_large", path: "src/big.bin" })])
    expect(c.limits).toEqual({ maxFileBytes: 1024 })
    expect(c.entries.map((e) => [e.kind, e.path, e.exportable, e.reason?.code ?? null])).toEqual([
      // A clean deletion and a pure move need no stored content: still exportable.
      ["delete", "src/big-old.bin", true, null],
      ["add", "src/big.bin", false, "postimage_too_large"],
      ["move", "src/moved.bin", true, null],
      ["replace", "src/small.txt", true, null]
    ])
    expect(c.entries[1]!.reason?.message).toMatch(/2048 bytes, above the 1024-byte per-file export limit/)
    expect(c.entries[1]!.postimage?.hash).toBe(sha256(big))
    expect(c.exportable).toBe(false)
    expect(stored).toBe(false)
    expect(c.blobs.hashes).toEqual([sha256(utf8("small\n"))])
    expect(decodeUntrustedChangeset(Schema.encodeSync(Changeset)(c))._tag).toBe("Success")
  })

  it("the default limit is 16 MiB: a 1 MiB binary exports, nothing is capped at 20 KB", async () => {
    const ws = makeWorkspace({ "src/large.txt": "x".repeat(100_000) + "\n" })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const o = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src"]) })
        yield* o.writeFile("src/one-mib.bin", binary(1024 * 1024))
        yield* o.applyPatch(patchOf("*** Update File: src/large.txt", "@@", "-" + "x".repeat(100_000), "+short"))
        return yield* o.export(identity)
      })
    )
    const c = valueOf(exit)
    expect(c.limits.maxFileBytes).toBe(16 * 1024 * 1024)
    expect(c.entries.map((e) => [e.path, e.exportable, e.preimage?.bytes ?? null, e.postimage?.bytes])).toEqual([
      ["src/large.txt", true, 100_001, 6],
      ["src/one-mib.bin", true, null, 1024 * 1024]
    ])
  })

  it("exports nothing after discard (error, cancel, timeout) and refuses work after export", async () => {
    const ws = makeWorkspace({ "src/a.txt": "a\n" })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const scope = WriteScope.makeUnsafe(["src"])
        const cancelled = yield* Overlay.make({ writeScope: scope })
        yield* cancelled.writeFile("src/a.txt", utf8("half done\n"))
        yield* cancelled.discard
        const afterDiscard = yield* Effect.flip(cancelled.export(identity))
        const readAfterDiscard = yield* Effect.flip(cancelled.readFile("src/a.txt"))
        const done = yield* Overlay.make({ writeScope: scope })
        yield* done.writeFile("src/a.txt", utf8("done\n"))
        yield* done.export(identity)
        const afterExport = yield* Effect.flip(done.applyPatch(patchOf("*** Delete File: src/a.txt")))
        const exportTwice = yield* Effect.flip(done.export(identity))
        yield* done.discard
        const stillExported = yield* Effect.flip(done.readFile("src/a.txt"))
        return [afterDiscard, readAfterDiscard, afterExport, exportTwice, stillExported].map((e) =>
          e._tag === "OverlayClosed" ? `${e.code}:${e.operation}:${e.state}` : e._tag
        )
      })
    )
    expect(valueOf(exit)).toEqual([
      "overlay_closed:export:discarded",
      "overlay_closed:read_file:discarded",
      "overlay_closed:apply_patch:exported",
      "overlay_closed:export:exported",
      "overlay_closed:read_file:exported"
    ])
  })
})
