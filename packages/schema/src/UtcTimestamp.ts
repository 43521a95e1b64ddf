/**
 * Points in time as they appear in records: the canonical UTC ISO-8601 string that
 * `Date.prototype.toISOString()` produces (`2026-01-31T12:00:00.000Z`), on both the Type and
 * the Encoded side. A plain string keeps records structurally comparable, JSON- and
 * SQLite-friendly (TEXT column, lexicographic order = chronological order) and lets a record
 * round-trip byte for byte. Code that needs arithmetic converts with `DateTime.makeUnsafe`.
 *
 * Owns the format only; the current time comes from Effect's `Clock` in the callers.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

const CANONICAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

const isCanonical = (s: string): boolean => {
  if (!CANONICAL.test(s)) return false
  const millis = globalThis.Date.parse(s)
  return !globalThis.Number.isNaN(millis) && new globalThis.Date(millis).toISOString() === s
}

/**
 * A canonical UTC timestamp string (`YYYY-MM-DDTHH:mm:ss.sssZ`, a real calendar date).
 *
 * @category models
 * @since 0.1.0
 */
export const UtcTimestamp = Schema.String.pipe(
  Schema.check(
    Schema.makeFilter(
      (s: string) =>
        isCanonical(s)
          ? undefined
          : `UtcTimestamp must be a UTC ISO-8601 string like "2026-01-31T12:00:00.000Z", got ${JSON.stringify(s)}`,
      { expected: "a UTC timestamp" }
    )
  ),
  Schema.brand("UtcTimestamp")
)

/**
 * @category models
 * @since 0.1.0
 */
export type UtcTimestamp = typeof UtcTimestamp.Type

/**
 * The timestamp of epoch milliseconds (e.g. from `Clock.currentTimeMillis`). Throws for
 * values outside years 0000–9999.
 *
 * @category constructors
 * @since 0.1.0
 */
export const utcTimestampFromMillis = (millis: number): UtcTimestamp =>
  UtcTimestamp.make(new globalThis.Date(millis).toISOString())
