/**
 * Paging shared by the history views (SPEC §4.4): clamping the requested page size, byte and
 * diff-line caps, the query fingerprint a cursor is bound to, reading a cursor back (checked
 * against the query and the database) and writing one, and the `caps` block of a response.
 */
import type { EnvironmentId, PatchHistoryRecord, ViewCaps } from "@forkjoin/schema"
import { createHash } from "node:crypto"
import type { Connection } from "../Sqlite.ts"
import { type CursorData, decodeCursor, encodeCursor } from "./cursor.ts"
import { fail } from "./viewContext.ts"
import { SQL } from "./viewQueries.ts"

/** Page-size and byte caps (SPEC §4.4). */
const DEFAULT_LIMIT = 100
const MAX_LIMIT = 1000
const DEFAULT_MAX_BYTES = 1024 * 1024
const MIN_MAX_BYTES = 1024
const MAX_MAX_BYTES = 16 * 1024 * 1024
const DEFAULT_DIFF_LINES = 2000
const MAX_DIFF_LINES = 100_000

/** A page size after clamping, and whether clamping changed it. */
export interface Limit {
  readonly limit: number
  readonly clamped: boolean
}

/** The page size: default 100, clamped to 1..1000. */
export const clampLimit = (requested: number | undefined): Limit => {
  if (requested === undefined || !Number.isFinite(requested)) return { limit: DEFAULT_LIMIT, clamped: false }
  const limit = Math.min(MAX_LIMIT, Math.max(1, Math.floor(requested)))
  return { limit, clamped: limit !== requested }
}

/** The response byte cap: default 1 MiB, clamped to 1 KiB..16 MiB. */
export const clampBytes = (requested: number | undefined): number =>
  requested === undefined || !Number.isFinite(requested)
    ? DEFAULT_MAX_BYTES
    : Math.min(MAX_MAX_BYTES, Math.max(MIN_MAX_BYTES, Math.floor(requested)))

/** The diff-line cap: default 2000, clamped to 1..100000. */
export const clampDiffLines = (requested: number | undefined): number =>
  requested === undefined || !Number.isFinite(requested)
    ? DEFAULT_DIFF_LINES
    : Math.min(MAX_DIFF_LINES, Math.max(1, Math.floor(requested)))

/** The fingerprint of a query, which its cursors carry. */
export const fingerprint = (...parts: ReadonlyArray<string | number | boolean | undefined>): string =>
  createHash("sha256").update(JSON.stringify(parts)).digest("base64url").slice(0, 12)

/** Reads and checks a cursor against this query and the database; throws a `ViewError` when it is not one of them. */
export const readCursor = (
  c: Connection,
  env: EnvironmentId,
  operation: string,
  text: string | undefined,
  q: string
): CursorData | undefined => {
  if (text === undefined) return undefined
  const data = decodeCursor(text)
  if (typeof data === "string") throw fail(operation, "InvalidCursor", `the cursor is ${data}; pass a nextCursor this view returned`)
  if (data.q !== q) throw fail(operation, "InvalidCursor", "the cursor belongs to a different query; restart without --cursor")
  if (data.o > 0) {
    const at = c.get<{ readonly thread_id: string; readonly committed_at: string }>(SQL.recordAt, env, data.o)
    if (at === undefined || at.thread_id !== data.s || at.committed_at !== data.t) {
      throw fail(operation, "InvalidCursor", "the cursor does not match this history database; restart without --cursor")
    }
  }
  return data
}

/** The cursor just after record `r` (and position `p`, for views not ordered by ordinal). */
export const cursorAt = (q: string, r: PatchHistoryRecord, p?: string | number): string =>
  encodeCursor({ q, s: r.threadId, t: r.committedAt, o: r.commitOrdinal, ...(p === undefined ? {} : { p }) })

/** The `caps` block of a response. */
export const capsOf = (
  requested: number | undefined,
  lim: Limit,
  maxBytes: number,
  bytesCapApplied: boolean
): ViewCaps => ({
  ...(requested === undefined ? {} : { requestedLimit: Number.isFinite(requested) ? Math.trunc(requested) : 0 }),
  limit: lim.limit,
  limitClamped: lim.clamped,
  maxBytes,
  bytesCapApplied
})

/** Takes items while they fit in `maxBytes` (always at least one). */
export const fitBytes = <A>(items: ReadonlyArray<A>, sizeOf: (a: A) => number, maxBytes: number) => {
  let used = 0
  let n = 0
  for (const item of items) {
    const size = sizeOf(item)
    if (n > 0 && used + size > maxBytes) break
    used += size
    n++
  }
  return { taken: items.slice(0, n), capped: n < items.length }
}
