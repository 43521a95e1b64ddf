import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { UtcTimestamp, utcTimestampFromMillis } from "../src/UtcTimestamp.ts"
import { accepts, decodeFailure } from "./helpers.ts"

describe("UtcTimestamp", () => {
  it("accepts canonical toISOString output and keeps it as a string", () => {
    const s = "2026-01-31T12:34:56.789Z"
    expect(Schema.decodeUnknownSync(UtcTimestamp)(s)).toBe(s)
    expect(accepts(UtcTimestamp, "2024-02-29T00:00:00.000Z")).toBe(true)
  })

  it("rejects non-canonical or impossible timestamps", () => {
    for (const bad of [
      "2026-01-31T12:34:56Z",
      "2026-01-31T12:34:56.789+01:00",
      "2026-01-31 12:34:56.789Z",
      "2026-01-31",
      "2025-02-29T00:00:00.000Z",
      "2026-13-01T00:00:00.000Z",
      "2026-01-31T24:00:00.000Z"
    ]) {
      expect(decodeFailure(UtcTimestamp, bad), bad).toContain("UtcTimestamp must be a UTC ISO-8601 string")
    }
  })

  it("utcTimestampFromMillis builds the canonical form", () => {
    expect(utcTimestampFromMillis(0)).toBe("1970-01-01T00:00:00.000Z")
    expect(() => utcTimestampFromMillis(Number.NaN)).toThrow()
  })
})
