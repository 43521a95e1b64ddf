/**
 * Opaque page cursors: base64url of a small JSON object holding the query fingerprint, the
 * source thread and commit time of the record the page stopped at, its commit ordinal, and
 * (for views not ordered by ordinal) a position key. Ordinals only grow, so a cursor keeps
 * pointing at the same place while other threads commit.
 */

/** What a cursor carries. */
export interface CursorData {
  /** Fingerprint of the query the cursor belongs to. */
  readonly q: string
  /** Thread of the record at the cursor (the source thread). */
  readonly s: string
  /** That record's commit time. */
  readonly t: string
  /** That record's commit ordinal. */
  readonly o: number
  /** Position key for views ordered otherwise (turn: last path; diff: next change index). */
  readonly p?: string | number
}

/** Encodes a cursor. */
export const encodeCursor = (data: CursorData): string => Buffer.from(JSON.stringify(data), "utf8").toString("base64url")

/** Decodes a cursor, or returns a reason it is not one. */
export const decodeCursor = (text: string): CursorData | string => {
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
  return c as unknown as CursorData
}
