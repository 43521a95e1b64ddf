/**
 * The overlay never writes the shared workspace, not even temporarily (SPEC §6.2), and reads
 * are repeatable: the first touch of a path fixes what the child sees.
 */
import { Engine } from "@forkjoin/engine/Engine"
import { sha256 } from "@forkjoin/patch"
import { type Changeset, ChangesetFromJson, decodeUntrustedChangesetJson, type TaskId, type ThreadId } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { BlobStore, blobDirectory } from "../src/BlobStore.ts"
import * as Overlay from "../src/Overlay.ts"
import * as WriteScope from "../src/WriteScope.ts"
import { binary, fingerprint, makeWorkspace, patchOf, removeSandboxes, run, text, utf8, valueOf } from "./helpers.ts"

afterAll(removeSandboxes)

const identity = { childId: "edit-a" as TaskId, taskId: "edit-a" as TaskId, threadId: "thread-edit-a" as ThreadId }

const files = () => ({
  "README.md": "read me\n",
  "src/a/one.txt": "one\n",
  "src/a/two.txt": "two\n",
  "src/a/three.txt": "alpha\nbeta\n",
  "src/a/big.bin": binary(1024 * 1024, 7),
  "src/b/other.txt": "other\n",
  "docs/x.md": "# x\n",
  ".git/config": "[core]\n"
})

describe("the overlay never touches the shared workspace", () => {
  it("reads, patches, deletes, moves, binary writes > 20 KB and a 1 MiB file, listing and export leave every inode, byte and timestamp as it was", async () => {
    const ws = makeWorkspace(files())
    const artifacts = path.join(ws, ".forkjoin", "runs", "run-1")
    const blob64k = binary(64 * 1024, 3)
    const blob1m = binary(1024 * 1024, 5)
    let before: Map<string, string> | undefined
    const exit = await run(
      ws,
      Effect.gen(function*() {
        // The engine creates .forkjoin/ when it starts; fingerprint the tree after that.
        before = fingerprint(ws)
        const overlay = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src/a", "docs"]) })
        const readme = yield* overlay.readFile("README.md")
        yield* overlay.listDir("")
        yield* overlay.listDir("src/a")
        yield* overlay.applyPatch(patchOf(
          "*** Update File: src/a/one.txt",
          "@@",
          "-one",
          "+ONE",
          "*** Add File: src/a/new/deep.txt",
          "+fresh",
          "*** Delete File: src/a/two.txt",
          "*** Update File: src/a/three.txt",
          "*** Move to: src/a/moved/three.txt",
          "@@",
          " alpha",
          "-beta",
          "+gamma"
        ))
        yield* overlay.writeFile("src/a/blob.bin", blob64k)
        yield* overlay.writeFile("src/a/huge.bin", blob1m)
        yield* overlay.moveFile("src/a/big.bin", "docs/big.bin")
        yield* overlay.deleteFile("docs/x.md")
        const views = {
          readme: text(readme),
          one: text(yield* overlay.readFile("src/a/one.txt")),
          deep: text(yield* overlay.readFile("src/a/new/deep.txt")),
          moved: text(yield* overlay.readFile("src/a/moved/three.txt")),
          blob: yield* overlay.readFile("src/a/blob.bin"),
          huge: yield* overlay.readFile("src/a/huge.bin"),
          big: yield* overlay.readFile("docs/big.bin"),
          listing: yield* overlay.listDir("src/a"),
          gone: (yield* Effect.flip(overlay.readFile("src/a/two.txt"))).code
        }
        const changeset = yield* overlay.export(identity)
        const store = yield* BlobStore
        const stored = yield* Effect.forEach(changeset.blobs.hashes, (h) => store.get(h))
        return { views, changeset, stored }
      }),
      BlobStore.layerDirectory(blobDirectory(artifacts))
    )
    const { views, changeset, stored } = valueOf(exit)
    expect(fingerprint(ws)).toEqual(before)
    expect(fs.existsSync(path.join(ws, "src/a/new"))).toBe(false)

    // The view showed the child its own work.
    expect(views).toMatchObject({ readme: "read me\n", one: "ONE\n", deep: "fresh\n", moved: "alpha\ngamma\n", gone: "target_missing" })
    expect(Buffer.from(views.blob).equals(Buffer.from(blob64k))).toBe(true)
    expect(Buffer.from(views.huge).equals(Buffer.from(blob1m))).toBe(true)
    expect(views.big.length).toBe(1024 * 1024)
    expect(views.listing.map((e) => `${e.kind}:${e.name}`)).toEqual([
      "file:blob.bin",
      "file:huge.bin",
      "directory:moved",
      "directory:new",
      "file:one.txt"
    ])

    // And the export says exactly that, with every postimage in the blob directory.
    expect(changeset.entries.map((e) => [e.kind, e.path, e.moveFrom ?? null, e.exportable])).toEqual([
      ["move", "docs/big.bin", "src/a/big.bin", true],
      ["delete", "docs/x.md", null, true],
      ["add", "src/a/blob.bin", null, true],
      ["add", "src/a/huge.bin", null, true],
      ["move", "src/a/moved/three.txt", "src/a/three.txt", true],
      ["add", "src/a/new/deep.txt", null, true],
      ["update", "src/a/one.txt", null, true],
      ["delete", "src/a/two.txt", null, true]
    ])
    expect(changeset.exportable).toBe(true)
    expect(changeset.entries.find((e) => e.path === "src/a/blob.bin")?.postimage).toMatchObject({
      hash: sha256(blob64k),
      bytes: 64 * 1024,
      encoding: "binary"
    })
    for (const hash of changeset.blobs.hashes) {
      expect(fs.existsSync(path.join(artifacts, "blobs", "sha256", hash.slice(7)))).toBe(true)
    }
    expect(stored.map((b) => sha256(b))).toEqual(changeset.blobs.hashes)
  })

  it("a child's staged edits are invisible to a sibling overlay and to the engine", async () => {
    const ws = makeWorkspace({ "src/a/one.txt": "one\n" })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const scope = WriteScope.makeUnsafe(["src"])
        const a = yield* Overlay.make({ writeScope: scope })
        const b = yield* Overlay.make({ writeScope: scope })
        yield* a.writeFile("src/a/one.txt", utf8("child a\n"))
        yield* a.writeFile("src/a/only-a.txt", utf8("a\n"))
        const engine = yield* Engine
        const live = yield* engine.read(["src/a/one.txt"])
        return {
          sibling: text(yield* b.readFile("src/a/one.txt")),
          siblingList: (yield* b.listDir("src/a")).map((e) => e.name),
          live: live.get("src/a/one.txt")
        }
      })
    )
    const v = valueOf(exit)
    expect(v.sibling).toBe("one\n")
    expect(v.siblingList).toEqual(["one.txt"])
    expect(v.live?._tag === "File" && text(v.live.bytes)).toBe("one\n")
  })
})

describe("repeatable reads", () => {
  it("a path keeps the bytes of its first touch even after the shared file changes; patches match against them", async () => {
    const ws = makeWorkspace({ "src/a/one.txt": "one\n", "src/a/two.txt": "two\n" })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const overlay = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src/a"]) })
        const first = text(yield* overlay.readFile("src/a/one.txt"))
        const firstListing = (yield* overlay.listDir("src/a")).map((e) => e.name)
        // Another writer changes the shared workspace after the child's first touch.
        fs.writeFileSync(path.join(ws, "src/a/one.txt"), "changed by someone else\n")
        fs.writeFileSync(path.join(ws, "src/a/two.txt"), "two, changed before first touch\n")
        fs.writeFileSync(path.join(ws, "src/a/late.txt"), "late\n")
        const second = text(yield* overlay.readFile("src/a/one.txt"))
        const untouchedUntilNow = text(yield* overlay.readFile("src/a/two.txt"))
        const secondListing = (yield* overlay.listDir("src/a")).map((e) => e.name)
        yield* overlay.applyPatch(patchOf("*** Update File: src/a/one.txt", "@@", "-one", "+uno"))
        const changeset = yield* overlay.export(identity)
        return { first, second, untouchedUntilNow, firstListing, secondListing, changeset }
      })
    )
    const v = valueOf(exit)
    expect(v.first).toBe("one\n")
    expect(v.second).toBe("one\n")
    expect(v.untouchedUntilNow).toBe("two, changed before first touch\n")
    expect(v.secondListing).toEqual(v.firstListing)
    expect(v.secondListing).not.toContain("late.txt")
    const entry = v.changeset.entries[0]!
    expect(entry).toMatchObject({ kind: "update", path: "src/a/one.txt" })
    // The first preimage is what the child saw, so the join will detect the drift.
    expect(entry.preimage?.hash).toBe(sha256(utf8("one\n")))
    expect(entry.postimage?.hash).toBe(sha256(utf8("uno\n")))
    expect(fs.readFileSync(path.join(ws, "src/a/one.txt"), "utf8")).toBe("changed by someone else\n")
  })

  it("a path first seen absent stays absent for the child even if it appears later", async () => {
    const ws = makeWorkspace({ "src/a/one.txt": "one\n" })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const overlay = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src/a"]) })
        const missing = (yield* Effect.flip(overlay.readFile("src/a/new.txt"))).code
        fs.writeFileSync(path.join(ws, "src/a/new.txt"), "appeared\n")
        const still = (yield* Effect.flip(overlay.readFile("src/a/new.txt"))).code
        // Add File is planned against the child's view: absent, so it is an add.
        yield* overlay.applyPatch(patchOf("*** Add File: src/a/new.txt", "+mine"))
        return { missing, still, changeset: yield* overlay.export(identity) }
      })
    )
    const v = valueOf(exit)
    expect([v.missing, v.still]).toEqual(["target_missing", "target_missing"])
    expect(v.changeset.entries).toEqual([
      expect.objectContaining({ kind: "add", path: "src/a/new.txt", exportable: true })
    ])
    expect(v.changeset.entries[0]).not.toHaveProperty("preimage")
  })
})

describe("the export is the schema's encoding", () => {
  it("round-trips through ChangesetFromJson and refuses excess properties when decoded as untrusted", async () => {
    const ws = makeWorkspace({ "src/a/one.txt": "one\n" })
    const exit = await run(
      ws,
      Effect.gen(function*() {
        const overlay = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["src/a"]) })
        yield* overlay.applyPatch(patchOf("*** Update File: src/a/one.txt", "@@", "-one", "+two"))
        return yield* overlay.export(identity)
      })
    )
    const changeset: Changeset = valueOf(exit)
    const json = Schema.encodeSync(ChangesetFromJson)(changeset)
    const back = decodeUntrustedChangesetJson(json)
    expect(back._tag).toBe("Success")
    const tampered = JSON.parse(json)
    tampered.entries[0].postimage.content = "smuggled"
    expect(decodeUntrustedChangesetJson(JSON.stringify(tampered))._tag).toBe("Failure")
  })
})
