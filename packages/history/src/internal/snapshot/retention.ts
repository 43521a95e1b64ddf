/**
 * The low level of retention in the snapshot store: marking snapshots pruned (their hash, size
 * and row stay) and dropping the chunks and bodies nothing unpruned needs.
 *
 * @since 0.1.0
 */
import type { Sha256Hash } from "@forkjoin/schema"
import * as Schema from "effect/Schema"
import { StoreError } from "../../HistoryStore.ts"
import type { Connection } from "../../Sqlite.ts"
import { CodecError, encodeManifest } from "../snapshotCodec.ts"
import { manifestOf, type SnapshotRow, snapshotSql } from "./rows.ts"

const SQL = {
  ...snapshotSql,
  snapshotLinks: "SELECT id, hash, base, pruned_at FROM snapshots",
  wholeManifest: "UPDATE snapshots SET base = NULL, depth = 0, manifest = ? WHERE id = ?",
  prune: "UPDATE snapshots SET pruned_at = ?, base = NULL, depth = 0, manifest = ? WHERE id = ?",
  chunkLinks: "SELECT id, base, pack FROM chunks",
  bodySizes: "SELECT id, length(data) AS bytes FROM chunk_bodies",
  deleteBody: "DELETE FROM chunk_bodies WHERE id = ?",
  deleteChunk: "DELETE FROM chunks WHERE id = ?"
} as const

const EMPTY = new Uint8Array(0)

/**
 * What a retention pass did: snapshots marked pruned, chunks removed and the bytes they held.
 *
 * @category models
 * @since 0.1.0
 */
export const PruneCounts = Schema.Struct({
  snapshots: Schema.Int,
  chunks: Schema.Int,
  bytes: Schema.Int
})

/**
 * @category models
 * @since 0.1.0
 */
export type PruneCounts = typeof PruneCounts.Type

/**
 * Marks the given stored snapshots pruned at `at` (their hash and size stay), then removes
 * every chunk no unpruned snapshot needs, directly or as the base of a delta it needs. An
 * unpruned snapshot whose manifest is an edit of a pruned one's gets a whole manifest first, so
 * pruned manifests are needed by nothing and are emptied. Call inside a transaction.
 *
 * @category constructors
 * @since 0.1.0
 */
export const prune = (c: Connection, operation: string, hashes: Iterable<Sha256Hash>, at: string): PruneCounts => {
  const rows = c.all<{ readonly id: number; readonly hash: string; readonly base: number | null; readonly pruned_at: string | null }>(
    SQL.snapshotLinks
  )
  const byHash = new Map(rows.map((r) => [r.hash, r]))
  const baseOf = new Map(rows.map((r) => [r.id, r.base]))
  const going = new Set<number>()
  for (const hash of hashes) {
    const r = byHash.get(hash)
    if (r !== undefined && r.pruned_at === null) going.add(r.id)
  }
  // Bases are mostly the snapshots just before: a few hundred recent manifests spare most chains.
  const memo = new Map<number, ReadonlyArray<number>>()
  const readManifest = (id: number): Array<number> => {
    const row = c.get<SnapshotRow>(SQL.snapshotById, id)!
    try {
      const ids = manifestOf(c, row, memo)
      memo.set(id, ids)
      if (memo.size > 512) memo.delete(memo.keys().next().value!)
      return ids
    } catch (e) {
      // Never delete what an unreadable manifest might need: stop and say which one.
      if (e instanceof CodecError) throw new StoreError({ operation, reason: "Corrupt", detail: `snapshot #${id}: ${e.detail}`, cause: e })
      throw e
    }
  }
  const live = new Set<number>()
  const links = new Map<number, { readonly base: number | null; readonly pack: number | null }>()
  for (const l of c.all<{ readonly id: number; readonly base: number | null; readonly pack: number | null }>(SQL.chunkLinks)) {
    links.set(l.id, { base: l.base, pack: l.pack })
  }
  for (const r of rows) {
    if (r.pruned_at !== null || going.has(r.id)) continue
    const ids = readManifest(r.id)
    let chain = r.base
    while (chain !== null && !going.has(chain)) chain = baseOf.get(chain) ?? null
    if (chain !== null) c.run(SQL.wholeManifest, encodeManifest(ids), r.id)
    for (const id of ids) {
      for (let k: number | null = id; k !== null && !live.has(k); k = links.get(k)?.base ?? null) live.add(k)
    }
  }
  for (const id of going) c.run(SQL.prune, at, EMPTY, id)
  let chunks = 0
  for (const id of links.keys()) if (!live.has(id)) chunks += c.run(SQL.deleteChunk, id)
  // A body row goes when no live chunk reads it (a pack stays while one of its chunks lives).
  const liveBodies = new Set([...live].map((id) => links.get(id)?.pack ?? id))
  let bytes = 0
  for (const b of c.all<{ readonly id: number; readonly bytes: number }>(SQL.bodySizes)) {
    if (liveBodies.has(b.id)) continue
    c.run(SQL.deleteBody, b.id)
    bytes += b.bytes
  }
  return { snapshots: going.size, chunks, bytes }
}
