/**
 * The lock file: exclusive among connections (of one process here; the engine's concurrency
 * tests cover processes), released when the scope that took it closes, and again takeable.
 */
import * as LockFile from "@forkjoin/sqlite/LockFile"
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-lockfile-"))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

describe("LockFile", () => {
  it.effect("one holder at a time; closing the holder's scope releases the lock", () =>
    Effect.scoped(Effect.gen(function*() {
      const file = path.join(dir, "a.db")
      const one = yield* LockFile.open(file)
      const two = yield* LockFile.open(file)
      const held = yield* Scope.make()
      assert.isTrue(yield* Scope.provide(one.acquire, held))
      assert.isFalse(yield* Effect.scoped(two.acquire))
      yield* Scope.close(held, Exit.void)
      assert.isTrue(yield* Effect.scoped(two.acquire))
      assert.isTrue(yield* Effect.scoped(one.acquire))
    })))

  it.effect("closing the connection releases a lock still held", () =>
    Effect.scoped(Effect.gen(function*() {
      const file = path.join(dir, "b.db")
      const other = yield* LockFile.open(file)
      const connection = yield* Scope.make()
      const lock = yield* Scope.provide(LockFile.open(file), connection)
      assert.isTrue(yield* Scope.provide(lock.acquire, yield* Scope.make()))
      assert.isFalse(yield* Effect.scoped(other.acquire))
      yield* Scope.close(connection, Exit.void)
      assert.isTrue(yield* Effect.scoped(other.acquire))
    })))

  it.effect("a file SQLite cannot open fails as Io, naming it", () =>
    Effect.gen(function*() {
      const file = path.join(dir, "missing", "c.db")
      const error = yield* Effect.flip(Effect.scoped(LockFile.open(file)))
      assert.strictEqual(error.reason, "Io")
      assert.strictEqual(error.operation, "LockFile.open")
      assert.isFalse(fs.existsSync(path.dirname(file)))
    }))
})
