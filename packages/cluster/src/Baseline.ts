/**
 * The run's baseline as the parent ships it: the workspace as a child sees it (listed through
 * the runtime's `Overlay`, so the same names are hidden; files resolved through
 * `Engine.inspect`, so the same resolution rules apply and the same snapshot facts are hashed), turned
 * into a manifest tree. File bytes are not kept: a blob is read again from the workspace when a
 * runner asks for it, and served only while it still hashes to what the manifest says.
 *
 * Links, pipes, sockets and anything else that is not a regular file or a folder are left
 * out: the engine reads none of them (a child's read of one fails in the workspace too).
 *
 * @since 0.1.0
 */
import { Engine } from "@forkjoin/engine/Engine"
import { sha256 } from "@forkjoin/patch"
import type { Sha256Hash } from "@forkjoin/schema"
import type { EngineError } from "@forkjoin/schema/EngineError"
import { Overlay, WriteScope } from "@forkjoin/runtime"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { type BaselineFile, buildTree, type Tree } from "./Manifest.ts"

/**
 * A baseline: its manifest tree, one workspace path per blob hash (where to read it again),
 * and how many files and content bytes it holds.
 *
 * @category models
 * @since 0.1.0
 */
export interface Baseline {
  readonly tree: Tree
  readonly blobPaths: ReadonlyMap<Sha256Hash, string>
  readonly files: number
  readonly bytes: number
}

// Files inspected per engine call: bounds the bytes held at once.
const INSPECT_BATCH = 256

/**
 * Lists and hashes the engine's workspace into a `Baseline`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const snapshot: Effect.Effect<Baseline, EngineError, Engine> = Effect.gen(function*() {
  const engine = yield* Engine
  const view = yield* Overlay.make({ writeScope: WriteScope.none })
  const candidates: Array<string> = []
  const dirs: Array<string> = []
  const pending = [""]
  while (pending.length > 0) {
    const dir = pending.pop()!
    dirs.push(dir)
    const listed = yield* view.listDir(dir).pipe(Effect.catchTag("OverlayClosed", Effect.die))
    for (const e of listed) {
      const p = dir === "" ? e.name : `${dir}/${e.name}`
      if (e.kind === "directory") pending.push(p)
      else if (e.kind === "file") candidates.push(p)
    }
  }
  yield* view.discard
  const files: Array<BaselineFile> = []
  const blobPaths = new Map<Sha256Hash, string>()
  let bytes = 0
  for (let i = 0; i < candidates.length; i += INSPECT_BATCH) {
    const batch = candidates.slice(i, i + INSPECT_BATCH)
    const answers = yield* engine.inspect(batch)
    for (const p of batch) {
      const answer = answers.get(p)
      if (answer === undefined || Result.isFailure(answer)) continue
      const facts = answer.success.facts
      if (answer.success.state._tag !== "File" || facts === undefined) continue
      files.push({ path: p, hash: facts.hash, size: facts.bytes, mode: answer.success.mode })
      if (!blobPaths.has(facts.hash)) blobPaths.set(facts.hash, p)
      bytes += facts.bytes
    }
  }
  return { tree: buildTree(files, dirs), blobPaths, files: files.length, bytes }
})

/**
 * The bytes of baseline blob `hash`, read again from the workspace; undefined when the
 * baseline has no such blob or its file no longer holds those bytes (never other bytes).
 *
 * @category constructors
 * @since 0.1.0
 */
export const readBlob = (baseline: Baseline, hash: Sha256Hash): Effect.Effect<Uint8Array | undefined, never, Engine> =>
  Effect.gen(function*() {
    const p = baseline.blobPaths.get(hash)
    if (p === undefined) return undefined
    const engine = yield* Engine
    const read = yield* Effect.result(engine.read([p]))
    if (Result.isFailure(read)) return undefined
    const state = read.success.get(p)
    return state?._tag === "File" && sha256(state.bytes) === hash ? state.bytes : undefined
  })
