/**
 * Opaque page cursors: base64url of a small JSON object holding the query fingerprint, the
 * source thread and commit time of the record the page stopped at, its commit ordinal, and
 * (for views not ordered by ordinal) a position key. Ordinals only grow, so a cursor keeps
 * pointing at the same place while other threads commit.
 *
 * It owns the cursor's wire form. Checking a cursor against a query and a database is the
 * views' paging (`paging.ts`).
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/** What a cursor carries. */
export const CursorData = Schema.Struct({
  /** Fingerprint of the query the cursor belongs to. */
  q: Schema.String,
  /** Thread of the record at the cursor (the source thread). */
  s: Schema.String,
  /** That record's commit time. */
  t: Schema.String,
  /** That record's commit ordinal. */
  o: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
  /** Position key for views ordered otherwise (turn: last path; diff: next change index). */
  p: Schema.optionalKey(Schema.Union([Schema.String, Schema.Number]))
})

/** What a cursor carries. */
export type CursorData = typeof CursorData.Type

const decodeCursorJson = Schema.decodeUnknownResult(Schema.fromJsonString(CursorData))

const BASE64URL = /^[A-Za-z0-9_-]+$/

/** Encodes a cursor. */
export const encodeCursor = (data: CursorData): string => Buffer.from(JSON.stringify(data), "utf8").toString("base64url")

/** Decodes a cursor, or returns a reason it is not one. */
export const decodeCursor = (text: string): CursorData | string => {
  if (!BASE64URL.test(text)) return "not base64url"
  const decoded = decodeCursorJson(Buffer.from(text, "base64url").toString("utf8"))
  return Result.isSuccess(decoded) ? decoded.success : "not a forkjoin cursor"
}
