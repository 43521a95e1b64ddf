/**
 * The directory store's reads against planted blobs: a blob file replaced by a link to a named
 * pipe, by a named pipe, by a link to `/dev/zero`, or grown past the read limit is `Unsafe`,
 * failing at once without blocking or reading it; a link to a regular file with the right
 * bytes is refused too (blobs are never read through a link).
 */
import { assert, it } from "@effect/vitest"
import { sha256 } from "@forkjoin/patch"
import * as Effect from "effect/Effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import { blobPath, makeDirectory } from "../src/BlobStore.ts"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "fj-blobs-unsafe-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

const bytes = new TextEncoder().encode("the content\n")
const hash = sha256(bytes)

const plants: ReadonlyArray<readonly [string, (file: string, dir: string) => void, RegExp]> = [
  ["a link to a named pipe", (file, dir) => {
    execFileSync("mkfifo", [path.join(dir, "pipe")])
    fs.symlinkSync(path.join(dir, "pipe"), file)
  }, /symbolic link, not a regular file/],
  ["a named pipe", (file) => execFileSync("mkfifo", [file]), /named pipe \(FIFO\), not a regular file/],
  ["a link to /dev/zero", (file) => fs.symlinkSync("/dev/zero", file), /symbolic link, not a regular file/],
  ["a link to a regular file holding the right bytes", (file, dir) => {
    fs.writeFileSync(path.join(dir, "elsewhere"), bytes)
    fs.symlinkSync(path.join(dir, "elsewhere"), file)
  }, /symbolic link, not a regular file/],
  ["a file above the read limit", (file) => fs.writeFileSync(file, new Uint8Array(64)), /64 bytes, above the limit of 32/]
]

for (const [name, plant, detail] of plants) {
  it.effect(`a blob that is ${name} is Unsafe, never read`, () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(root, "d-"))
      const store = yield* makeDirectory(dir, { maxBlobBytes: 32 })
      plant(blobPath(dir, hash), dir)
      const error = yield* Effect.flip(store.get(hash))
      assert.strictEqual(error.reason, "Unsafe")
      assert.match(error.detail ?? "", detail)
      assert.match(error.message, /blobs must be regular files/)
    }))
}

it.effect("control: a regular blob within the limit is read and verified", () =>
  Effect.gen(function*() {
    const dir = fs.mkdtempSync(path.join(root, "d-"))
    const store = yield* makeDirectory(dir, { maxBlobBytes: 32 })
    assert.strictEqual(yield* store.put(bytes), hash)
    assert.deepStrictEqual(yield* store.get(hash), bytes)
  }))
