/**
 * The stored form of a snapshot as the other snapshot modules read it: the row shapes of
 * `snapshots` and `chunks`, the statements that find a snapshot's row, a chunk's address, and
 * the chunk ids of a snapshot (its manifest, following the base chain).
 *
 * @since 0.1.0
 */
import type { Sha256Hash } from "@forkjoin/schema"
import { StoreError } from "../../HistoryStore.ts"
import type { Connection } from "../../Sqlite.ts"
import { applyManifestDelta, CodecError, decodeManifest } from "../snapshotCodec.ts"

// Manifest edits of manifest edits, up to this many: reading a manifest then costs at most this
// many row reads of a few bytes; past it a manifest is stored whole again. Chunks written by
// the first chunked release were deltas of deltas bounded the same way (read, never written).
export const MAX_CHUNK_DEPTH = 64
export const MAX_MANIFEST_DEPTH = 64

/** The statements that find a snapshot's row, which reads, writes and retention share. */
export const snapshotSql = {
  snapshot: "SELECT id, size, base, depth, manifest, pruned_at FROM snapshots WHERE hash = ?",
  snapshotById: "SELECT id, size, base, depth, manifest, pruned_at FROM snapshots WHERE id = ?",
  snapshotState: "SELECT id, pruned_at FROM snapshots WHERE hash = ?"
} as const

/** A `snapshots` row. */
export interface SnapshotRow {
  readonly id: number
  readonly size: number
  readonly base: number | null
  readonly depth: number
  readonly manifest: Uint8Array
  readonly pruned_at: string | null
}

/** A `chunks` row (without its body). */
export interface ChunkMeta {
  readonly id: number
  readonly hash: Uint8Array
  readonly size: number
  readonly codec: number
  readonly base: number | null
  readonly depth: number
  /** The `chunk_bodies` row holding a raw chunk's bytes with others', at byte `pack_at`; null: its own row. */
  readonly pack: number | null
  readonly pack_at: number
}

/** A chunk's address: the 32 bytes of its sha256 (the shared `sha256`, hex decoded). */
export const chunkKey = (hash: Sha256Hash): Buffer => Buffer.from(hash.slice("sha256:".length), "hex")

/** The same bytes as a plain `Uint8Array` view (a row's `Buffer` as read). */
export const view = (b: Uint8Array): Uint8Array => new Uint8Array(b.buffer, b.byteOffset, b.byteLength)

/** A `StoreError` Corrupt naming the snapshot. */
export const corrupt = (operation: string, hash: string, detail: string, cause?: unknown): StoreError =>
  new StoreError({ operation, reason: "Corrupt", detail: `snapshot ${hash}: ${detail}`, cause })

/**
 * The chunk ids of a snapshot, following its manifest's base chain (down to a snapshot `memo`
 * already holds, when given).
 */
export const manifestOf = (c: Connection, row: SnapshotRow, memo?: ReadonlyMap<number, ReadonlyArray<number>>): Array<number> => {
  const chain: Array<SnapshotRow> = [row]
  let known = memo?.get(row.id)
  let at = row
  while (known === undefined && at.base !== null) {
    if (chain.length > MAX_MANIFEST_DEPTH + 1) throw new CodecError({ detail: "a manifest's base chain is longer than allowed" })
    known = memo?.get(at.base)
    if (known !== undefined) break
    const base = c.get<SnapshotRow>(snapshotSql.snapshotById, at.base)
    if (base === undefined) throw new CodecError({ detail: `the manifest's base snapshot #${at.base} is missing` })
    chain.push(base)
    at = base
  }
  if (known !== undefined && memo?.has(row.id) === true) return [...known]
  let ids = known !== undefined ? [...known] : decodeManifest(view(chain.pop()!.manifest))
  for (let i = chain.length - 1; i >= 0; i--) ids = applyManifestDelta(ids, view(chain[i]!.manifest))
  return ids
}
