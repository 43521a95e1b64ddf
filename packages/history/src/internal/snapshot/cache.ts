/**
 * The chunk cache of the snapshot store: chunk bytes a store keeps in memory by chunk hash, so
 * reading versions of a file one after another decompresses only the chunks that differ.
 *
 * @since 0.1.0
 */
import { byteView } from "@forkjoin/patch/Bytes"

/**
 * Chunk bytes kept in memory by chunk hash, within a byte budget (least recently used go
 * first). A chunk's hash names the same bytes in every database, so an entry never goes stale;
 * only bytes a read verified enter it.
 *
 * @category models
 * @since 0.1.0
 */
export interface ChunkCache {
  readonly get: (key: string) => Uint8Array | undefined
  readonly set: (key: string, bytes: Uint8Array) => void
}

/**
 * An empty `ChunkCache` holding at most `budgetBytes` of chunk bytes.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeChunkCache = (budgetBytes: number): ChunkCache => {
  const entries = new Map<string, Uint8Array>()
  let held = 0
  return {
    get: (key) => {
      const bytes = entries.get(key)
      if (bytes !== undefined) {
        // Map order is insertion order: re-inserting marks it most recently used.
        entries.delete(key)
        entries.set(key, bytes)
      }
      return bytes
    },
    set: (key, bytes) => {
      if (bytes.byteLength > budgetBytes || entries.has(key)) return
      // A view into a larger buffer (a chunk of a new file's bytes) would keep all of it alive.
      entries.set(key, bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice())
      held += bytes.byteLength
      for (const [k, v] of entries) {
        if (held <= budgetBytes) break
        entries.delete(k)
        held -= v.byteLength
      }
    }
  }
}

/** The cache key of a chunk: its 32-byte hash in hex. */
export const cacheKey = (hash: Uint8Array): string => byteView(hash).toString("hex")
