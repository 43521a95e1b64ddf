/**
 * The workspace view of a `direct` session: reads and listings of the live workspace through
 * the engine's resolution rules, and model-managed batches staged in memory and committed as
 * one engine transaction.
 */
import { Engine } from "@forkjoin/engine/Engine"
import {
  type FileState,
  NetChange,
  parsePatch,
  patchTargets,
  type Plan,
  type PlannedFile,
  planPatch,
  sameBytes
} from "@forkjoin/patch"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type { DirEntry } from "../Overlay.ts"
import { compileGlob, DEFAULT_DENIED_GLOBS } from "./glob.ts"
import { listedDirectory, normalize, readDirectory, visibleEntries } from "./listing.ts"
import { MISSING, type Staged } from "./overlayState.ts"

// Case-insensitive on purpose, as in the overlay: hiding `.GIT` too never exposes more.
const DENIED = DEFAULT_DENIED_GLOBS.map((g) => compileGlob(g, true))

const viewError = (code: EngineError["code"], p: string, message: string, cause?: unknown) =>
  new EngineError({ code, stage: Stage.resolve, paths: [p], message, ...(cause === undefined ? {} : { cause }) })

/** Patches staged by an open batch: first-touch baselines, last staged states, and the staged changes in order. */
export interface Batch {
  readonly base: Map<string, FileState>
  readonly staged: Map<string, Staged>
  readonly steps: Array<NetChange.Step<Uint8Array, number>>
  patches: number
}

/** A fresh, empty batch. */
export const emptyBatch = (): Batch => ({ base: new Map(), staged: new Map(), steps: [], patches: 0 })

/** Reads `paths` as the batch sees them (staged, else the first-touch baseline via `Engine.read`). */
const batchView = (engine: Engine["Service"], batch: Batch, paths: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const unknown = paths.filter((p) => !batch.base.has(p) && !batch.staged.has(p))
    if (unknown.length > 0) {
      const read = yield* engine.read(unknown)
      for (const p of unknown) batch.base.set(p, read.get(p) ?? MISSING)
    }
    return new Map(paths.map((p) => [p, batch.staged.get(p) ?? batch.base.get(p) ?? MISSING] as const)) as ReadonlyMap<string, FileState>
  })

/** The bytes of a file in the live workspace, or in `batch` when one is open. */
export const readFile = (engine: Engine["Service"], batch: Batch | undefined, raw: string) =>
  Effect.gen(function*() {
    const p = yield* normalize(raw)
    const state = batch === undefined ? (yield* engine.read([p])).get(p) ?? MISSING : (yield* batchView(engine, batch, [p])).get(p)!
    switch (state._tag) {
      case "File":
        return { path: p, bytes: state.bytes }
      case "Missing":
        return yield* viewError("target_missing", p, `'${p}' does not exist.`)
      case "Directory":
        return yield* viewError("unsupported_file_type", p, `'${p}' is a directory; list it with list_dir.`)
      case "Other":
        return yield* viewError("unsupported_file_type", p, `'${p}' is ${state.description}, not a regular file.`)
    }
  })

/**
 * The entries of a live directory (denied globs hidden, resolution checked by `Engine.read`
 * first), overlaid with an open batch's staged files directly inside it.
 */
export const listDir = (engine: Engine["Service"], batch: Batch | undefined, raw: string) =>
  Effect.gen(function*() {
    const dir = yield* listedDirectory(raw)
    const names = new Map<string, DirEntry["kind"]>()
    const prefix = dir === "" ? "" : `${dir}/`
    const stagedHere = batch === undefined ? [] : [...batch.staged].filter(([p]) => p.startsWith(prefix))
    let liveMissing = false
    if (dir !== "") {
      const state = (yield* engine.read([dir])).get(dir) ?? MISSING
      liveMissing = state._tag === "Missing"
      if (state._tag === "File") return yield* viewError("unsupported_file_type", dir, `'${dir}' is a file; read it with read_file.`)
      if (state._tag === "Other") return yield* viewError("unsupported_file_type", dir, `'${dir}' is ${state.description}.`)
      if (state._tag === "Missing" && !stagedHere.some(([, s]) => s._tag === "File")) {
        return yield* viewError("target_missing", dir, `Directory '${dir}' does not exist.`)
      }
    }
    // A directory that exists only in the batch has no live listing.
    if (!liveMissing) {
      const read = readDirectory(engine.root, dir)
      if (Result.isFailure(read)) return yield* read.failure
      for (const e of read.success) names.set(e.name, e.kind)
    }
    for (const [p, s] of stagedHere) {
      const rest = p.slice(prefix.length)
      const slash = rest.indexOf("/")
      if (slash === -1) {
        if (s._tag === "File") names.set(rest, "file")
        else names.delete(rest)
      } else if (s._tag === "File") names.set(rest.slice(0, slash), "directory")
    }
    return { path: dir === "" ? "." : dir, entries: visibleEntries(names, dir, DENIED) }
  })

/**
 * Plans a patch against the batch's view with the engine's pure core (profile `native`, no
 * overwrite, as the default grant) and stages the result. Nothing touches the workspace.
 */
export const stagePatch = (engine: Engine["Service"], batch: Batch, text: string) =>
  Effect.gen(function*() {
    const parsed = parsePatch(text, { profile: "native" })
    if (Result.isFailure(parsed)) return yield* parsed.failure
    const targets = patchTargets(parsed.success)
    if (Result.isFailure(targets)) return yield* targets.failure
    const files = yield* batchView(engine, batch, targets.success)
    const plan = planPatch(parsed.success, files, { profile: "native", allowOverwrite: false })
    if (Result.isFailure(plan)) return yield* plan.failure
    for (const f of plan.success.files) {
      if (f.moveFrom !== undefined) batch.staged.set(f.moveFrom, { _tag: "Missing" })
      batch.staged.set(f.path, f.after === undefined ? { _tag: "Missing" } : { _tag: "File", bytes: f.after })
      batch.steps.push({ ...f, tag: batch.patches })
    }
    batch.patches += 1
    return plan.success
  })

/**
 * The batch's net effect as one plan: per path, the first-touch baseline as `before` and the
 * last staged state as `after`; unchanged paths drop. A move becomes a delete plus an add,
 * which the engine checks and applies in the same transaction.
 */
export const netPlan = (batch: Batch): Plan => {
  const files: Array<PlannedFile> = NetChange.pathChanges(NetChange.fold(batch.steps, "path"), sameBytes, { moves: false, replace: false })
    .map((c) => ({ kind: c.kind, path: c.path, before: c.before, after: c.after }))
  return {
    files,
    summary: files.map((f) => ({ status: f.kind === "add" ? "A" : f.kind === "delete" ? "D" : "M", path: f.path }))
  }
}
