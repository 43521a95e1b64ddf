/**
 * Byte search: a `byteView` sees only the array's own window of its buffer, and its native search
 * agrees with `Uint8Array#indexOf` everywhere.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { byteView } from "../src/Bytes.ts"

describe("byteView", () => {
  it("covers only the array's own bytes, without a copy", () => {
    const whole = new Uint8Array([0, 1, 2, 0, 5, 0])
    assert.strictEqual(byteView(whole.subarray(1, 3)).indexOf(0), -1)
    assert.strictEqual(byteView(whole.subarray(1)).indexOf(0), 2)
    assert.strictEqual(byteView(whole.subarray(1)).indexOf(0, 3), 4)
    assert.strictEqual(byteView(whole).indexOf(5, 5), -1)
    assert.strictEqual(byteView(new Uint8Array(0)).indexOf(0), -1)
    const view = byteView(whole.subarray(2))
    view[0] = 9
    assert.strictEqual(whole[2], 9)
    const buffer = Buffer.from([1, 2])
    assert.strictEqual(byteView(buffer), buffer)
  })

  it("searches like Uint8Array#indexOf (property)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(300), fc.nat(300), fc.integer({ min: 0, max: 3 }), (bytes, cut, from, byte) => {
        const view = bytes.subarray(Math.min(cut, bytes.length))
        return byteView(view).indexOf(byte, from) === view.indexOf(byte, from)
      }),
      { numRuns: 500, seed: 14 }
    )
  })
})
