/**
 * Byte search: the native search sees only the array's own window of its buffer, and agrees with
 * `Uint8Array#indexOf` everywhere.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { indexOfByte } from "../src/Bytes.ts"

describe("indexOfByte", () => {
  it("searches only the view's own bytes, from the given index", () => {
    const whole = new Uint8Array([0, 1, 2, 0, 5, 0])
    assert.strictEqual(indexOfByte(whole.subarray(1, 3), 0), -1)
    assert.strictEqual(indexOfByte(whole.subarray(1), 0), 2)
    assert.strictEqual(indexOfByte(whole.subarray(1), 0, 3), 4)
    assert.strictEqual(indexOfByte(whole, 5, 5), -1)
    assert.strictEqual(indexOfByte(new Uint8Array(0), 0), -1)
  })

  it("agrees with Uint8Array#indexOf (property)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(300), fc.nat(300), fc.integer({ min: 0, max: 3 }), (bytes, cut, from, byte) => {
        const view = bytes.subarray(Math.min(cut, bytes.length))
        return indexOfByte(view, byte, from) === view.indexOf(byte, from)
      }),
      { numRuns: 500, seed: 14 }
    )
  })
})
