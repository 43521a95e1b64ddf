/** Seeded file contents for the snapshot store's tests: source-like text, incompressible bytes, edits. */
import { prng } from "../../../test/support/random.ts"

/** Seeded source-like text of `n` bytes (compresses about as well as real code). */
export const text = (seed: number, n: number): Uint8Array => {
  const next = prng(seed).uint32
  let s = ""
  while (s.length < n) s += `  const item${next() % 5000} = compute(value${next() % 300}, ${next() % 100000})\n`
  return new TextEncoder().encode(s.slice(0, n))
}

/** Seeded incompressible bytes (nothing to share or compress: stored raw, in packs). */
export const noise = (seed: number, n: number): Uint8Array => prng(seed).bytes(n)

/** `bytes` with `inserted` replacing `removed` bytes at `at`. */
export const splice = (bytes: Uint8Array, at: number, removed: number, inserted: Uint8Array): Uint8Array =>
  Buffer.concat([bytes.subarray(0, at), inserted, bytes.subarray(Math.min(bytes.length, at + removed))])

/** UTF-8 bytes of a string. */
export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s)
