/**
 * The move of the first release's `blobs` table into the snapshot store, in place and in
 * steps (history migration 4, finished at every store open).
 *
 * @since 0.1.0
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import type { Sha256Hash } from "@forkjoin/schema"
import type { Connection } from "../../Sqlite.ts"
import { stateOf } from "./read.ts"
import { view } from "./rows.ts"
import { put } from "./write.ts"

const SQL = {
  legacyAny: "SELECT 1 AS present FROM blobs LIMIT 1",
  legacyAfter: "SELECT rowid AS row, hash, size FROM blobs WHERE rowid > ? ORDER BY rowid LIMIT ?",
  legacyBytes: "SELECT bytes FROM blobs WHERE rowid = ?",
  legacyDelete: "DELETE FROM blobs WHERE rowid = ?"
} as const

/**
 * How much of the first release's `blobs` table one step moved (`moved`), left in place
 * because the bytes do not match their hash (`damaged`: reads keep reporting them corrupt), and
 * the last rowid it looked at (undefined when nothing was left after `after`).
 *
 * @category models
 * @since 0.1.0
 */
export interface MoveStep {
  readonly moved: number
  readonly damaged: number
  readonly last: number | undefined
}

/**
 * Whether the first release's `blobs` table still holds rows (a read: cheap at every open).
 *
 * @category constructors
 * @since 0.1.0
 */
export const hasLegacyBlobs = (c: Connection): boolean => c.get(SQL.legacyAny) !== undefined

/**
 * One step of the in-place migration: moves the `blobs` rows after rowid `after` (up to
 * `limits.rows` rows and about `limits.bytes` bytes) into the snapshot store and deletes them.
 * `bases` maps a snapshot to the one it was edited from (from the records), used when that one
 * has moved already. A row whose bytes do not match its hash stays where it is. Call inside a
 * transaction: a step is all or nothing, so a killed process leaves whole steps done and the
 * next open continues.
 *
 * @category constructors
 * @since 0.1.0
 */
export const moveLegacyBlobs = (
  c: Connection,
  bases: ReadonlyMap<string, Sha256Hash>,
  after: number,
  limits: { readonly rows: number; readonly bytes: number }
): MoveStep => {
  const rows = c.all<{ readonly row: number; readonly hash: Sha256Hash; readonly size: number }>(SQL.legacyAfter, after, limits.rows)
  let moved = 0
  let damaged = 0
  let last: number | undefined
  let taken = 0
  for (const r of rows) {
    if (last !== undefined && taken + r.size > limits.bytes) break
    const blob = c.get<{ readonly bytes: Uint8Array }>(SQL.legacyBytes, r.row)
    last = r.row
    if (blob === undefined) continue
    const bytes = view(blob.bytes)
    taken += bytes.byteLength
    if (bytes.byteLength !== r.size || sha256(bytes) !== r.hash) {
      damaged++
      continue
    }
    const base = bases.get(r.hash)
    put(c, bytes, r.hash, { base: base !== undefined && stateOf(c, base) === "stored" ? base : undefined })
    c.run(SQL.legacyDelete, r.row)
    moved++
  }
  return { moved, damaged, last }
}
