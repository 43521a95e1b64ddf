/**
 * Engine stage 4 (authorize): what the turn's grant allows — writing at all, replacing an
 * existing file, creating directories. The grant checks are pure; finding the directories a
 * plan would create reads the filesystem. Owns no resolution and no writing.
 */
import type { Plan } from "@forkjoin/patch"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Grant } from "../Grant.ts"

/** Refuses any change under a read-only grant. */
export const checkWriteGrant = (grant: Grant, rels: ReadonlyArray<string>): EngineError | undefined =>
  grant.write
    ? undefined
    : new EngineError({
      code: "permission_denied",
      stage: Stage.authorize,
      paths: rels,
      message: "This turn has a read-only grant; it may read files but not change them."
    })

/**
 * Refuses a precomputed plan that replaces an existing file (a `replace`, or a move onto a
 * file) without the overwrite grant. Patches are checked by the planner itself.
 */
export const authorizePlan = (plan: Plan, grant: Grant): EngineError | undefined => {
  if (grant.overwrite) return undefined
  const f = plan.files.find((f) => f.kind === "replace" || f.overwritten !== undefined)
  return f === undefined
    ? undefined
    : new EngineError({
      code: f.kind === "move" ? "unsafe_move" : "target_exists",
      stage: Stage.authorize,
      paths: [f.path],
      message: `'${f.path}' exists and this request's grant does not allow overwriting it.`
    })
}

/** The absolute directories missing above `absolutes`, each once, parents first per file. */
export const missingDirectories = (absolutes: ReadonlyArray<string>): ReadonlyArray<string> => {
  const out = new Set<string>()
  for (const abs of absolutes) {
    const chain: Array<string> = []
    let dir = path.dirname(abs)
    while (!fs.existsSync(dir) && dir !== path.dirname(dir)) {
      chain.push(dir)
      dir = path.dirname(dir)
    }
    for (const d of chain.reverse()) out.add(d)
  }
  return [...out]
}

/** Refuses new directories without the create-dirs grant; paths are relative to `root`. */
export const checkDirectories = (missingDirs: ReadonlyArray<string>, grant: Grant, root: string): EngineError | undefined => {
  if (missingDirs.length === 0 || grant.createDirs) return undefined
  const rels = missingDirs.map((d) => path.relative(root, d).split(path.sep).join("/"))
  return new EngineError({
    code: "directory_create_denied",
    stage: Stage.authorize,
    paths: rels,
    message: `The request needs new directories (${
      rels.join(", ")
    }) and this turn's grant does not allow creating directories.`
  })
}
