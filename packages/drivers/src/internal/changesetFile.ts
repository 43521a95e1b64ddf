/**
 * The confinement of a `changesetFile` that a model or an MCP client names in `run_subagents`:
 * a workspace-relative path (the patch engine's normalisation) to a regular file, resolved by
 * the engine's own walk (lstat on every component, no link leading out, `.git` and `.forkjoin`
 * denied by its policy), never opened unless it is a regular file, so a named pipe or a device
 * cannot block the server. One exception: changesets forkjoin exported itself under
 * `.forkjoin/runs/` stay usable (read only), through real folders and no link at all. The
 * `blobs/sha256` folder beside the file, copied with it, must be a real folder or absent.
 * A plan file's own `changesetFile` (`forkjoin run PLAN.json`) is the plan author's and is not
 * checked here.
 */
import { Engine } from "@forkjoin/engine/Engine"
import { deniedByDefault, STATE_DIRECTORY } from "@forkjoin/engine/Policy"
import { normalizeRelativePath } from "@forkjoin/patch/RelativePath"
import { describeEntry } from "@forkjoin/patch/SafeRead"
import { errnoOf } from "@forkjoin/patch/SystemError"
import { type Observation, refused } from "@forkjoin/runtime/Action"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"

/** Where forkjoin exports run artifacts, changesets included (workspace-relative). */
const RUNS = `${STATE_DIRECTORY}/runs/`

const NOT_REGULAR = "changeset_not_regular_file"

const notRegular = (taskId: string, rel: string, what: string): Observation =>
  refused(
    NOT_REGULAR,
    `run_subagents: task '${taskId}': changesetFile '${rel}' is ${what}; give the workspace-relative path of a regular ` +
      "changeset file (a changeset.json a run exported). Nothing was started.",
    { taskId, path: rel }
  )

/** What lstat finds at `abs`, in words, or undefined for what `wanted` accepts. */
const kindOf = (stat: fs.Stats | undefined, wanted: "file" | "directory"): string | undefined =>
  stat === undefined
    ? "missing"
    : (wanted === "file" ? stat.isFile() : stat.isDirectory())
    ? undefined
    : describeEntry(stat)

/**
 * A path under `.forkjoin/runs/`: every component a real folder (lstat, no link), the last one
 * of `wanted` kind; `undefined` when it is, else what was found.
 */
const ownArtifact = (root: string, rel: string, wanted: "file" | "directory", optional: boolean): string | undefined => {
  const segments = rel.split("/")
  let current = root
  for (let i = 0; i < segments.length; i++) {
    current = path.join(current, segments[i]!)
    const last = i === segments.length - 1
    let stat: fs.Stats | undefined
    try {
      stat = fs.lstatSync(current, { throwIfNoEntry: false })
    } catch (error) {
      return `unreadable (${errnoOf(error) ?? String(error)})`
    }
    if (stat === undefined && optional) return undefined
    const problem = kindOf(stat, last ? wanted : "directory")
    if (problem !== undefined) return last ? problem : `under '${segments.slice(0, i + 1).join("/")}', which is ${problem}`
  }
  return undefined
}

const checkOne = (taskId: string, raw: string) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const normalized = normalizeRelativePath(raw)
    if (Result.isFailure(normalized)) {
      const e = normalized.failure
      return refused(e.code, `run_subagents: task '${taskId}': changesetFile: ${e.message}`, { taskId, path: raw })
    }
    const rel: string = normalized.success
    const parent = path.posix.dirname(rel)
    const blobs = parent === "." ? "blobs/sha256" : `${parent}/blobs/sha256`
    if (rel.startsWith(RUNS)) {
      const inside = rel.slice(RUNS.length)
      const hit = deniedByDefault(inside)
      if (hit !== undefined) {
        return refused("path_denied_by_policy", `run_subagents: task '${taskId}': changesetFile '${rel}' matches the denied pattern '${hit}'.`, { taskId, path: rel })
      }
      const file = yield* Effect.sync(() => ownArtifact(engine.root, rel, "file", false))
      if (file !== undefined) return notRegular(taskId, rel, file)
      const folder = yield* Effect.sync(() => ownArtifact(engine.root, blobs, "directory", true))
      return folder === undefined ? undefined : notRegular(taskId, blobs, folder)
    }
    // The engine's walk: policy, links leading out, and the file's kind from lstat (a regular
    // file is the only kind it opens).
    const found = yield* engine.inspect([rel]).pipe(Effect.result)
    if (Result.isFailure(found)) return refused(found.failure.code, found.failure.message, { taskId, path: rel })
    const one = found.success.get(rel)
    if (one === undefined) return notRegular(taskId, rel, "missing")
    if (Result.isFailure(one)) {
      return refused(one.failure.code, `run_subagents: task '${taskId}': changesetFile: ${one.failure.message}`, { taskId, path: rel })
    }
    const state = one.success.state
    if (state._tag !== "File") return notRegular(taskId, rel, state._tag === "Other" ? state.description : state._tag === "Missing" ? "missing" : "a folder")
    const beside = yield* engine.inspect([blobs]).pipe(Effect.result)
    if (Result.isFailure(beside)) return refused(beside.failure.code, beside.failure.message, { taskId, path: blobs })
    const folder = beside.success.get(blobs)
    if (folder !== undefined && Result.isFailure(folder)) {
      return refused(folder.failure.code, `run_subagents: task '${taskId}': ${folder.failure.message}`, { taskId, path: blobs })
    }
    const kind = folder === undefined ? "Missing" : folder.success.state._tag
    return kind === "Missing" || kind === "Directory" ? undefined : notRegular(taskId, blobs, "not a folder")
  })

/**
 * The refusal for the first task whose `changesetFile` is not confined as above, or
 * `undefined` when every one is (or none names a file).
 */
export const confineChangesetFiles = (
  tasks: ReadonlyArray<{ readonly id: string; readonly changesetFile?: string | undefined }>
): Effect.Effect<Observation | undefined, never, Engine> =>
  Effect.gen(function*() {
    for (const t of tasks) {
      if (t.changesetFile === undefined) continue
      const refusal = yield* checkOne(t.id, t.changesetFile)
      if (refusal !== undefined) return refusal
    }
    return undefined
  })
