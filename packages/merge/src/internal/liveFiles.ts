/**
 * The live files a plan is checked against, each read once and hashed at most once: baselines
 * compare content addresses, and a path may be asked about several times.
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import type { FileState } from "@forkjoin/patch/Plan"
import type { RelativePath, Sha256Hash } from "@forkjoin/schema/Ids"

/** A path's live state and, for a file, its hash. */
export interface LiveFile {
  readonly state: FileState
  readonly hash: Sha256Hash | undefined
}

/** Memoises `live` per path, with the hash of a file computed once. */
export const liveFiles = (live: (path: RelativePath) => FileState): ((path: RelativePath) => LiveFile) => {
  const seen = new Map<RelativePath, LiveFile>()
  return (p) => {
    let s = seen.get(p)
    if (s === undefined) {
      const state = live(p)
      s = { state, hash: state._tag === "File" ? sha256(state.bytes) : undefined }
      seen.set(p, s)
    }
    return s
  }
}
