/**
 * Reading the snapshot store: whether a hash's bytes are here, and the verified bytes of a
 * snapshot, each chunk written into its place in one buffer and hashed ahead.
 *
 * @since 0.1.0
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import type { Sha256Hash } from "@forkjoin/schema"
import * as Schema from "effect/Schema"
import { type HashAhead, hashAhead } from "../hashAhead.ts"
import { CodecError, renderSpans, writeSpans } from "../snapshotCodec.ts"
import type { Connection } from "../../Sqlite.ts"
import type { ChunkCache } from "./cache.ts"
import { type Resolved, resolve, rootOf } from "./chunks.ts"
import { chunkKey, corrupt, manifestOf, type SnapshotRow, snapshotSql, view } from "./rows.ts"

const SQL = {
  ...snapshotSql,
  legacyBlob: "SELECT size, bytes FROM blobs WHERE hash = ?"
} as const

/**
 * What the store holds for a hash: the verified bytes, the fact that retention pruned them,
 * or nothing.
 *
 * @category models
 * @since 0.1.0
 */
export type Lookup =
  | { readonly _tag: "Stored"; readonly bytes: Uint8Array }
  | { readonly _tag: "Pruned"; readonly prunedAt: string }
  | { readonly _tag: "Missing" }

/**
 * Whether the store can give a hash's bytes (`stored`), had them until retention dropped them
 * (`pruned`), or never had them (`missing`).
 *
 * @category models
 * @since 0.1.0
 */
export const SnapshotState = Schema.Literals(["stored", "pruned", "missing"])

/**
 * @category models
 * @since 0.1.0
 */
export type SnapshotState = typeof SnapshotState.Type

/** A snapshot read whose manifest, chunk rows and bodies are in memory. */
interface Gathered {
  readonly operation: string
  readonly hash: Sha256Hash
  readonly size: number
  readonly ids: ReadonlyArray<number>
  readonly resolved: Resolved
}

/** The manifest, rows and bodies of one stored (unpruned) snapshot; throws `StoreError` Corrupt. */
const gather = (
  c: Connection,
  operation: string,
  hash: Sha256Hash,
  row: SnapshotRow,
  cache: ChunkCache | undefined
): Gathered => {
  try {
    const ids = manifestOf(c, row)
    return { operation, hash, size: row.size, ids, resolved: resolve(c, ids, cache, true) }
  } catch (e) {
    if (e instanceof CodecError) throw corrupt(operation, hash, e.detail, e)
    throw e
  }
}

/**
 * The rebuilt bytes if they are the snapshot's (size and hash), else `StoreError` Corrupt naming
 * the first chunk that does not match its own hash when one does not. Verified as a whole, each
 * of its chunks holds the bytes its hash names: the compressed whole chunks it contains as they
 * are enter the cache (not a patch's base: a damaged stretch the patch replaced would go
 * unnoticed by this read).
 */
const verified = (g: Gathered, out: Uint8Array, digest: Sha256Hash, cache: ChunkCache | undefined): Uint8Array => {
  if (out.length !== g.size || digest !== g.hash) {
    let at = 0
    const bad = g.ids.find((id) => {
      const meta = g.resolved.metas.get(id)!
      const got = out.subarray(at, at + meta.size)
      at += meta.size
      return got.length !== meta.size || !chunkKey(sha256(got)).equals(view(meta.hash))
    })
    throw corrupt(
      g.operation,
      g.hash,
      bad === undefined
        ? `its chunks reassemble to bytes that do not match its hash or size (${out.length} of ${g.size} bytes)`
        : `chunk ${bad} does not match its hash`
    )
  }
  if (cache !== undefined) {
    for (const id of new Set(g.ids)) {
      const key = g.resolved.decompressed.get(id)
      if (key !== undefined) cache.set(key, g.resolved.roots.get(id)!)
    }
  }
  return view(out)
}

/**
 * Rebuilds and verifies a gathered snapshot: each chunk written into its place in one buffer,
 * and hashed ahead (see `hashAhead`) while the next ones are decompressed and written.
 */
const finish = (g: Gathered, cache: ChunkCache | undefined): Uint8Array => {
  const { metas, plans } = g.resolved
  const only = g.ids.length === 1 ? plans.get(g.ids[0]!)! : undefined
  let out: Uint8Array
  let hashing: HashAhead | undefined
  try {
    if (only !== undefined) out = renderSpans(rootOf(g.resolved, only.root), only.spans)
    else {
      out = Buffer.allocUnsafe(g.ids.reduce((n, id) => n + metas.get(id)!.size, 0))
      hashing = hashAhead(out.length)
      let at = 0
      for (const id of g.ids) {
        const plan = plans.get(id)!
        at = writeSpans(out, at, rootOf(g.resolved, plan.root), plan.spans)
        hashing.advance(out, at)
      }
    }
  } catch (e) {
    if (e instanceof CodecError) throw corrupt(g.operation, g.hash, e.detail, e)
    throw e
  }
  return verified(g, out, hashing === undefined ? sha256(out) : hashing.digest(out), cache)
}

/**
 * Whether a snapshot's bytes are here, pruned, or unknown (no content is read). A row of the
 * first release's `blobs` table not moved yet counts as stored.
 *
 * @category constructors
 * @since 0.1.0
 */
export const stateOf = (c: Connection, hash: Sha256Hash): SnapshotState => {
  const row = c.get<{ readonly pruned_at: string | null }>(SQL.snapshotState, hash)
  if (row !== undefined) return row.pruned_at === null ? "stored" : "pruned"
  return c.get(SQL.legacyBlob, hash) === undefined ? "missing" : "stored"
}

/**
 * Reads one snapshot, verified: its bytes, `Pruned`, or `Missing`. Throws a `StoreError`
 * (`Corrupt`, naming the snapshot and, when it can tell, the chunk) when the stored content
 * does not rebuild the bytes its hash names. With a `cache`, chunks it holds are not read or
 * decompressed again, and the chunks of a verified read enter it.
 *
 * @category constructors
 * @since 0.1.0
 */
export const read = (c: Connection, operation: string, hash: Sha256Hash, cache?: ChunkCache): Lookup => {
  const row = c.get<SnapshotRow>(SQL.snapshot, hash)
  if (row !== undefined) {
    return row.pruned_at === null
      ? { _tag: "Stored", bytes: finish(gather(c, operation, hash, row, cache), cache) }
      : { _tag: "Pruned", prunedAt: row.pruned_at }
  }
  // Not moved yet (a database of the first release being migrated, or read by a process that
  // does not migrate): the old row, checked the same way.
  const legacy = c.get<{ readonly size: number; readonly bytes: Uint8Array }>(SQL.legacyBlob, hash)
  if (legacy === undefined) return { _tag: "Missing" }
  const bytes = view(legacy.bytes)
  if (bytes.byteLength !== legacy.size || sha256(bytes) !== hash) {
    throw corrupt(operation, hash, "its bytes do not match its hash or size")
  }
  return { _tag: "Stored", bytes }
}
