/**
 * Page cursors decoded with their schema accept and reject exactly what the hand-written
 * check did (copied below as the oracle), with the same reasons.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { decodeCursor, encodeCursor } from "../src/internal/cursor.ts"

/** The hand-written decoder the schema replaced. */
const oldDecode = (text: string): Record<string, unknown> | string => {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return "not base64url"
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(text, "base64url").toString("utf8"))
  } catch {
    return "not a forkjoin cursor"
  }
  if (typeof parsed !== "object" || parsed === null) return "not a forkjoin cursor"
  const c = parsed as Record<string, unknown>
  if (
    typeof c["q"] !== "string" || typeof c["s"] !== "string" || typeof c["t"] !== "string" ||
    typeof c["o"] !== "number" || !Number.isSafeInteger(c["o"]) || (c["o"] as number) < 0 ||
    (c["p"] !== undefined && typeof c["p"] !== "string" && typeof c["p"] !== "number")
  ) return "not a forkjoin cursor"
  return c
}

const value = fc.oneof(
  fc.string({ maxLength: 4 }),
  fc.integer({ min: -3, max: 3 }),
  fc.constantFrom(1.5, 2 ** 53, 1e400, -0, null, true, [], {})
)
const cursorLike = fc.record(
  { q: value, s: value, t: value, o: value, p: value, x: value },
  { requiredKeys: [] }
)
const nearCursor = fc.record(
  { q: fc.string({ maxLength: 4 }), s: fc.string({ maxLength: 4 }), t: fc.string({ maxLength: 4 }), o: value, p: value },
  { requiredKeys: ["q", "s", "t"] }
)
const text = fc.oneof(
  cursorLike.map((c) => Buffer.from(JSON.stringify(c)).toString("base64url")),
  nearCursor.map((c) => Buffer.from(JSON.stringify(c)).toString("base64url")),
  fc.constantFrom("", "!!", "bnVsbA", "WzFd", "MQ", "e30"),
  fc.string({ maxLength: 12 })
)

/** A decode result without excess keys, so old and new compare on what a cursor carries. */
const carried = (r: Record<string, unknown> | string) =>
  typeof r === "string" ? r : Object.fromEntries(["q", "s", "t", "o", "p"].filter((k) => k in r).map((k) => [k, r[k]]))

describe("cursor", () => {
  it("accepts and rejects what the hand-written check did, for the same reasons", () => {
    let accepted = 0
    fc.assert(
      fc.property(text, (t) => {
        const now = decodeCursor(t)
        if (typeof now !== "string") accepted++
        assert.deepStrictEqual(carried(now), carried(oldDecode(t)), t)
      }),
      { numRuns: 3000 }
    )
    assert.isAbove(accepted, 0)
  })

  it("round-trips what the views write", () => {
    const data = { q: "abc", s: "thread", t: "2026-11-29T12:00:00.000Z", o: 7, p: "src/a.ts" }
    assert.deepStrictEqual(decodeCursor(encodeCursor(data)), data)
    assert.strictEqual(decodeCursor("a+b"), "not base64url")
    assert.strictEqual(decodeCursor(Buffer.from(JSON.stringify({ ...data, o: -1 })).toString("base64url")), "not a forkjoin cursor")
  })
})
