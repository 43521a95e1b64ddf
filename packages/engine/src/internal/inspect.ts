/**
 * What `Engine.inspect` reports for one resolved path: its state and mode as resolution read
 * them, where a write would land inside the workspace, and the snapshot facts of a file,
 * computed only when first read. Owns no resolution (`resolve.ts`).
 */
import { relativeUnder } from "@forkjoin/patch/RelativePath"
import { factsOf, type SnapshotFacts } from "@forkjoin/patch/Snapshot"
import type { Inspection } from "../Engine.ts"
import type { ResolvedTarget } from "./resolve.ts"

/** The inspection of a target resolved under the workspace real path `root`. */
export const inspectionOf = (root: string, target: ResolvedTarget): Inspection => {
  const state = target.state
  // Hashing a large file is the expensive part: only callers that read `facts` pay for it.
  let facts: SnapshotFacts | undefined
  return {
    path: target.path,
    state,
    mode: target.mode,
    landing: relativeUnder(root, target.absolute),
    get facts() {
      if (facts === undefined && state._tag === "File") facts = factsOf(state.bytes)
      return facts
    }
  }
}
