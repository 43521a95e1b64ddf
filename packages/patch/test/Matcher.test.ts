/**
 * The matcher finds the same passes and positions whether it scans forward (a plan with few
 * searches) or indexes every line (many searches).
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { type LineSource, Matcher } from "../src/internal/matcher.ts"

const sourceOf = (lines: ReadonlyArray<string>): LineSource => {
  const offsets = new Int32Array(lines.length)
  const lens = new Int32Array(lines.length)
  let at = 0
  lines.forEach((line, i) => {
    offsets[i] = at
    lens[i] = line.length
    at += line.length + 1
  })
  return { text: lines.join("\n"), n: lines.length, offsets, lens }
}

// Few distinct lines, some differing only in whitespace: repeats and every pass get exercised.
const line = fc.constantFrom("a", "a ", " a", "b", "b\t", "return x;", "  return x;", "", "}", "\u00a0}")

describe("Matcher", () => {
  it("scanning forward and indexing find the same pass and positions (property)", () => {
    fc.assert(
      fc.property(
        fc.array(line, { maxLength: 60 }),
        fc.array(line, { minLength: 1, maxLength: 3 }),
        fc.nat(60),
        fc.boolean(),
        fc.integer({ min: 1, max: 3 }),
        (lines, pattern, start, eof, limit) => {
          const src = sourceOf(lines)
          const from = Math.min(start, lines.length)
          const scanned = new Matcher(src, 1).find(pattern, from, eof, limit)
          const indexed = new Matcher(src).find(pattern, from, eof, limit)
          return JSON.stringify(scanned) === JSON.stringify(indexed)
        }
      ),
      { numRuns: 2000, seed: 14 }
    )
  })

  it("finds every repeat up to the limit, from the cursor on, either way", () => {
    const src = sourceOf(["x", "a", "b", "x", "a", "b", "a", "b"])
    for (const searches of [1, Infinity]) {
      assert.deepStrictEqual(new Matcher(src, searches).find(["a", "b"], 0, false, 3), { pass: 0, positions: [1, 4, 6] })
      assert.deepStrictEqual(new Matcher(src, searches).find(["a", "b"], 2, false, 2), { pass: 0, positions: [4, 6] })
      assert.deepStrictEqual(new Matcher(src, searches).find(["a ", "b"], 0, false, 2), { pass: 1, positions: [1, 4] })
      assert.isUndefined(new Matcher(src, searches).find(["c"], 0, false, 2))
    }
  })
})
