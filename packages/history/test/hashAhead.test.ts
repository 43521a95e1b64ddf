/**
 * Hashing ahead on the helper thread gives exactly the inline sha256, however the bytes are
 * advanced (in steps, all at once at the end, past the end, not at all), after an abandoned
 * hash, once the helper has ended, and for bytes whose length is not the one announced; below
 * the size worth handing over it never starts the thread.
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import { assert, describe, it } from "@effect/vitest"
import { endHelper, type HashAhead, hashAhead, helperCaughtUp, helperQuiet, helperRunning, helperStarted, onHelper } from "../src/internal/hashAhead.ts"
import { prng } from "../../../test/support/random.ts"

const MiB = 1 << 20

/** Starts the helper (the second hash large enough does) and waits until it runs. */
const withHelper = async (): Promise<void> => {
  for (let i = 0; i < 2; i++) hashAhead(2 * MiB).digest(new Uint8Array(2 * MiB))
  await helperStarted()
  assert.isTrue(helperRunning(), "the helper thread started")
}

/**
 * A hash of `size` bytes on the helper: a full collection in the last second (frequent in a busy
 * test worker) keeps hashes inline, so this waits for the end of that second (again if another
 * collection ran in between).
 */
const helperHash = async (size: number): Promise<HashAhead> => {
  for (;;) {
    await helperQuiet()
    const hashing = hashAhead(size)
    if (onHelper(hashing)) return hashing
    hashing.digest(new Uint8Array(size))
  }
}

/** Writes `bytes` into a fresh buffer the way a read does: in steps, advancing after each. */
const written = (bytes: Uint8Array, steps: ReadonlyArray<number>): { readonly out: Uint8Array; readonly digest: string } => {
  const hashing = hashAhead(bytes.length)
  const out = Buffer.allocUnsafe(bytes.length)
  let at = 0
  for (const step of steps) {
    const to = Math.min(bytes.length, at + step)
    out.set(bytes.subarray(at, to), at)
    at = to
    hashing.advance(out, at)
  }
  out.set(bytes.subarray(at), at)
  return { out, digest: hashing.digest(out) }
}

describe("hashAhead", () => {
  it("below 1 MiB it hashes inline and starts no helper", () => {
    const bytes = prng(1).bytes(MiB - 1)
    for (let i = 0; i < 3; i++) assert.strictEqual(written(bytes, [4096, 70_000]).digest, sha256(bytes))
    assert.isFalse(helperRunning())
  })

  it("on the helper, the digest is the sha256 of the bytes however they are advanced", async () => {
    await withHelper()
    const rnd = prng(7)
    for (const size of [MiB, MiB + 1, 3 * MiB + 7, 5 * MiB]) {
      const bytes = rnd.bytes(size)
      const expected = sha256(bytes)
      const uneven = Array.from({ length: 40 }, () => 1 + (rnd.uint32() % 300_000))
      assert.strictEqual(written(bytes, uneven).digest, expected, `${size} bytes in uneven steps`)
      assert.strictEqual(written(bytes, []).digest, expected, `${size} bytes, never advanced`)
      assert.strictEqual(written(bytes, [size * 2]).digest, expected, `${size} bytes, advanced past the end at once`)
      assert.isTrue(helperRunning(), "the helper is still running after each hash")
    }
  })

  it("an abandoned hash does not disturb the next one, and stays correct itself", async () => {
    await withHelper()
    const a = prng(11).bytes(2 * MiB)
    const b = prng(12).bytes(2 * MiB)
    const first = hashAhead(a.length)
    first.advance(a, MiB)
    // A second hash starts before the first is finished: the first hashes inline from then on.
    assert.strictEqual(written(b, [500_000, 500_000]).digest, sha256(b))
    first.advance(a, a.length)
    assert.strictEqual(first.digest(a), sha256(a))
    assert.strictEqual(written(a, [MiB]).digest, sha256(a))
    assert.isTrue(helperRunning())
  })

  it("bytes of another length than announced are hashed as they are", async () => {
    await withHelper()
    const bytes = prng(13).bytes(2 * MiB)
    const hashing = hashAhead(bytes.length + 5)
    hashing.advance(bytes, MiB)
    assert.strictEqual(hashing.digest(bytes), sha256(bytes))
    // Changed after they were advanced: the digest is of what the bytes are at the end.
    const changed = Buffer.from(bytes)
    const again = await helperHash(changed.length)
    again.advance(changed, changed.length)
    const before = sha256(changed)
    changed[10] = changed[10]! ^ 0xff
    // Once the helper has finished, the digest is its own, whatever the machine's load.
    await helperCaughtUp()
    assert.strictEqual(again.digest(changed), before, "advanced bytes are final: the helper hashed them as they were")
  })

  it("once the helper has ended, hashes are inline and still exact", async () => {
    await withHelper()
    const bytes = prng(17).bytes(2 * MiB)
    const open = hashAhead(bytes.length)
    open.advance(bytes, MiB)
    await endHelper()
    assert.isFalse(helperRunning())
    assert.strictEqual(open.digest(bytes), sha256(bytes), "a hash begun on the helper")
    assert.strictEqual(written(bytes, [MiB]).digest, sha256(bytes), "a hash begun after")
  })
})
