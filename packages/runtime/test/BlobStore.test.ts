/** The BlobStore contract, run against the memory and the directory layer, plus directory specifics. */
import { assert, describe, it } from "@effect/vitest"
import { sha256 } from "@forkjoin/patch"
import type { Sha256Hash } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import { BlobStore, blobPath } from "../src/BlobStore.ts"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "fj-blobs-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))
let n = 0

/** Runs `f` with the store of the surrounding layer. */
const using = <A, E>(f: (s: BlobStore["Service"]) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    return yield* f(yield* BlobStore)
  })

const text = (s: string) => new TextEncoder().encode(s)

const contract = (name: string, makeLayer: () => Layer.Layer<BlobStore, unknown>) =>
  describe(`BlobStore contract (${name})`, () => {
    const test = (title: string, body: () => Effect.Effect<void, unknown, BlobStore>) =>
      it.effect(title, () => body().pipe(Effect.provide(makeLayer())))

    test("put returns the sha256 address; get returns the exact bytes (text, binary, empty, 1 MiB)", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const big = new Uint8Array(1024 * 1024).map((_, i) => (i * 7919) % 256)
        for (const bytes of [text("alpha\n"), new Uint8Array([0, 255, 1, 254, 0]), new Uint8Array(0), big]) {
          const hash = yield* store.put(bytes)
          assert.strictEqual(hash, sha256(bytes))
          assert.isTrue(yield* store.has(hash))
          assert.isTrue(Buffer.from(yield* store.get(hash)).equals(Buffer.from(bytes)))
        }
      }))

    test("put is idempotent and stored content cannot be changed through the caller's buffer", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const bytes = text("same")
        const a = yield* store.put(bytes)
        const b = yield* store.put(text("same"))
        assert.strictEqual(a, b)
        bytes[0] = 0x58
        assert.strictEqual(Buffer.from(yield* store.get(a)).toString(), "same")
      }))

    test("a missing blob is NotFound with the hash in the error", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const hash = sha256(text("never stored"))
        assert.isFalse(yield* store.has(hash))
        const e = yield* Effect.flip(store.get(hash))
        assert.strictEqual(e.reason, "NotFound")
        assert.include(e.message, hash)
      }))
  })

contract("memory", () => BlobStore.layerMemory)
contract("directory", () => BlobStore.layerDirectory(path.join(root, `store-${++n}`, "blobs")))

describe("BlobStore directory layout", () => {
  it.effect("keeps blobs at <dir>/sha256/<hex>, leaves no temp files, and detects tampering", () => {
    const dir = path.join(root, "layout", "blobs")
    return Effect.gen(function*() {
      const store = yield* BlobStore
      const hash = yield* store.put(text("content\n"))
      const file = blobPath(dir, hash)
      assert.strictEqual(file, path.join(dir, "sha256", hash.slice(7)))
      assert.strictEqual(fs.readFileSync(file, "utf8"), "content\n")
      assert.deepStrictEqual(fs.readdirSync(path.join(dir, "sha256")), [hash.slice(7)])
      fs.chmodSync(file, 0o644)
      fs.writeFileSync(file, "tampered\n")
      const e = yield* Effect.flip(store.get(hash))
      assert.strictEqual(e.reason, "Corrupt")
      // A damaged blob (wrong size) is rewritten by the next put of the same content.
      yield* store.put(text("content\n"))
      assert.strictEqual(Buffer.from(yield* store.get(hash)).toString(), "content\n")
    }).pipe(Effect.provide(BlobStore.layerDirectory(dir, { fsync: false })))
  })

  it.effect("a second store over the same directory sees the first one's blobs", () => {
    const dir = path.join(root, "shared", "blobs")
    return Effect.gen(function*() {
      const hash = yield* using((s) => s.put(text("x"))).pipe(
        Effect.provide(BlobStore.layerDirectory(dir))
      )
      const got = yield* using((s) => s.get(hash as Sha256Hash)).pipe(
        Effect.provide(BlobStore.layerDirectory(dir))
      )
      assert.strictEqual(Buffer.from(got).toString(), "x")
    })
  })

  it.effect("an unusable directory is an Io error", () =>
    Effect.gen(function*() {
      const file = path.join(root, "not-a-dir")
      fs.writeFileSync(file, "")
      const e = yield* Effect.flip(using((s) => s.has(sha256(text("x")))).pipe(
        Effect.provide(BlobStore.layerDirectory(path.join(file, "blobs")))
      ))
      assert.strictEqual(e._tag === "BlobStoreError" && e.reason, "Io")
    }))
})
