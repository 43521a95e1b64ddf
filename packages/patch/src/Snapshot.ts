/**
 * Snapshot facts computed from bytes (SPEC §4.2): content hash, size, encoding, line endings
 * and final newline, plus the permission bits for a full `Snapshot`. Every layer that
 * describes a file version (engine records, history views and gaps, provider aggregates,
 * overlay changesets) computes them here, so they always agree.
 *
 * @since 0.1.0
 */
import type { Sha256Hash, Snapshot } from "@forkjoin/schema"
import { isUtf8 } from "node:buffer"
import { sha256 } from "./Bytes.ts"
import { describeText } from "./TextInfo.ts"

/**
 * A snapshot without its permission bits: what the bytes alone say.
 *
 * @category models
 * @since 0.1.0
 */
export type SnapshotFacts = Omit<Snapshot, "mode">

/**
 * The facts of `bytes`; pass `hash` when it is already known, to hash each content once.
 *
 * @category constructors
 * @since 0.1.0
 */
export const factsOf = (bytes: Uint8Array, hash?: Sha256Hash): SnapshotFacts => {
  const info = describeText(bytes, isUtf8)
  return {
    hash: hash ?? sha256(bytes),
    bytes: bytes.length,
    encoding: info.encoding,
    lineEnding: info.lineEnding,
    finalNewline: info.finalNewline
  }
}

/**
 * The full snapshot of `bytes` with permission bits `mode`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const snapshotOf = (bytes: Uint8Array, mode: number, hash?: Sha256Hash): Snapshot => ({
  ...factsOf(bytes, hash),
  mode
})
