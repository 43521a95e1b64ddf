/**
 * Directory manifests: a built tree names equal content by equal hashes and decodes back; a
 * node received from elsewhere is refused, with its stable code, when its bytes are not the
 * ones asked for, when it is not the canonical encoding, or when a name could leave its
 * directory or reach a folder the workspace policy denies.
 */
import { assert, describe, it } from "@effect/vitest"
import { sha256 } from "@forkjoin/patch"
import type { Sha256Hash } from "@forkjoin/schema"
import * as Result from "effect/Result"
import { type BaselineFile, buildTree, decodeNode, encodeNode, type ManifestError } from "../src/Manifest.ts"

const file = (p: string, text: string, mode?: number): BaselineFile => ({ path: p, hash: sha256(text), size: text.length, mode })
const BLOB = sha256("x")

const codeOf = (bytes: Uint8Array, hash: string = sha256(bytes)): ManifestError["code"] | "ok" => {
  const r = decodeNode(hash, bytes)
  return Result.isSuccess(r) ? "ok" : r.failure.code
}
const raw = (value: unknown) => new TextEncoder().encode(JSON.stringify(value))
const entry = (name: string) => ({ name, kind: "file" as const, hash: BLOB, size: 1 })

describe("buildTree", () => {
  it("one node per directory, sorted, equal directories stored once, modes kept", () => {
    const tree = buildTree([file("b/x.txt", "1"), file("a/x.txt", "1"), file("run.sh", "#!", 0o755), file("a/deep/y", "2")], ["empty"])
    const root = decodeNode(tree.root, tree.nodes.get(tree.root)!)
    assert.isTrue(Result.isSuccess(root))
    if (Result.isFailure(root)) return
    assert.deepStrictEqual(root.success.entries.map((e) => [e.name, e.kind, e.mode]), [
      ["a", "dir", undefined],
      ["b", "dir", undefined],
      ["empty", "dir", undefined],
      ["run.sh", "file", 0o755]
    ])
    // root, a, a/deep, b, empty: five directories, five distinct nodes.
    assert.strictEqual(tree.nodes.size, 5)
    for (const [hash, bytes] of tree.nodes) assert.strictEqual(codeOf(bytes, hash), "ok")
    // Same content, same name: a second build is the same root.
    assert.strictEqual(buildTree([file("a/deep/y", "2"), file("run.sh", "#!", 0o755), file("a/x.txt", "1"), file("b/x.txt", "1")], ["empty"]).root, tree.root)
  })

  it("a changed byte anywhere changes the root", () => {
    assert.notStrictEqual(buildTree([file("a/b/c", "1")]).root, buildTree([file("a/b/c", "2")]).root)
  })
})

describe("decodeNode refuses untrusted bytes", () => {
  it("bytes that are not the object asked for: object_hash_mismatch", () => {
    const bytes = encodeNode({ v: 1, entries: [entry("a")] })
    const tampered = Uint8Array.from(bytes)
    tampered[tampered.length - 3] = tampered[tampered.length - 3]! ^ 1
    assert.strictEqual(codeOf(tampered, sha256(bytes)), "object_hash_mismatch")
  })

  it("names that leave the directory or are denied: node_name_refused", () => {
    for (const name of ["", ".", "..", "a/b", "../x", "a\\b", "a\0b", ".git", ".forkjoin", ".GIT", ".ForkJoin"]) {
      assert.strictEqual(codeOf(raw({ v: 1, entries: [entry(name)] })), "node_name_refused", JSON.stringify(name))
    }
  })

  it("duplicates and unsorted entries", () => {
    assert.strictEqual(codeOf(raw({ v: 1, entries: [entry("a"), entry("a")] })), "node_duplicate_name")
    assert.strictEqual(codeOf(raw({ v: 1, entries: [entry("b"), entry("a")] })), "node_unsorted")
  })

  it("another encoding of valid entries: node_not_canonical", () => {
    const spaced = new TextEncoder().encode(JSON.stringify({ v: 1, entries: [entry("a")] }, null, 1))
    assert.strictEqual(codeOf(spaced), "node_not_canonical")
    assert.strictEqual(codeOf(raw({ entries: [entry("a")], v: 1 })), "node_not_canonical")
    assert.strictEqual(codeOf(raw({ v: 1, entries: [{ ...entry("a"), mode: 0o644 }] })), "ok")
  })

  it("not a version 1 node: node_malformed", () => {
    for (const bad of [
      new Uint8Array([0xff, 0xfe]),
      new TextEncoder().encode("{not json"),
      raw({ v: 2, entries: [] }),
      raw({ v: 1, entries: [{ ...entry("a"), extra: 1 }] }),
      raw({ v: 1, entries: [{ ...entry("a"), mode: 0o10000 }] }),
      raw({ v: 1, entries: [{ ...entry("a"), executable: true }] }),
      raw({ v: 1, entries: [{ ...entry("a"), hash: "sha256:XYZ" }] }),
      raw({ v: 1, entries: [{ ...entry("a"), size: -1 }] }),
      raw({ v: 1, entries: [{ ...entry("a"), kind: "device" }] })
    ]) {
      assert.strictEqual(codeOf(bad), "node_malformed")
    }
  })

  it("the error says which node and why", () => {
    const bytes = raw({ v: 1, entries: [entry("..")] })
    const hash: Sha256Hash = sha256(bytes)
    const r = decodeNode(hash, bytes)
    assert.isTrue(Result.isFailure(r) && r.failure.hash === hash && r.failure.message.includes("node_name_refused"))
  })
})
