/**
 * The parent's baseline as what a child's overlay reads on a runner (`Overlay.Base`): each path
 * resolved from the manifest (a file with its bytes, mode and snapshot facts, a folder, or
 * absent) and each folder listed from its node, fetched lazily and verified by hash
 * (`ObjectClient.baselineView`). The parent left links, denied names and anything not a file or
 * folder out of the manifest; a denied path is refused here with the engine's own code.
 *
 * Reaching the parent failing, or a node or blob that does not verify, dies rather than answer:
 * the attempt fails and is retried, and the child never sees a workspace that is not the run's.
 *
 * @since 0.1.0
 */
import type { Inspection } from "@forkjoin/engine/Engine"
import { factsOf, normalizeRelativePath } from "@forkjoin/patch"
import { deniedByDefault } from "@forkjoin/patch/PathPolicy"
import type { Overlay } from "@forkjoin/runtime"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type { ManifestEntry } from "./Manifest.ts"
import type { BaselineView } from "./ObjectClient.ts"

const refuse = (code: EngineError["code"], p: string, message: string) =>
  new EngineError({ code, stage: Stage.resolve, paths: [p], message })

/** Infrastructure failures are not answers about the workspace: they end the attempt. */
const orDie = <A, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E | EngineError>) =>
  Effect.catch(effect, (e) => (e instanceof EngineError ? Effect.fail(e) : Effect.die(e)))

/**
 * The baseline `view` as an overlay's base.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (view: BaselineView): Overlay.Base => {
  /** A path's entry (or why it has none), before any content is fetched. */
  const entryOf = (raw: string): Effect.Effect<Result.Result<{ readonly path: string; readonly entry: ManifestEntry | undefined }, EngineError>> =>
    Effect.gen(function*() {
      // As the engine's inspect: it takes normalized paths only (the overlay normalizes first).
      const normalized = normalizeRelativePath(raw)
      if (Result.isFailure(normalized) || normalized.success !== raw) {
        return Result.fail(refuse("path_invalid", raw, `Path '${raw}' is not a normalized relative path; give it like 'src/a.ts'.`))
      }
      const p = normalized.success
      const denied = deniedByDefault(p)
      if (denied !== undefined) {
        return Result.fail(refuse(
          "path_denied_by_policy",
          p,
          `Path '${p}' matches the denied pattern '${denied}' of the workspace policy, which forkjoin neither reads nor changes; use paths outside it.`
        ))
      }
      const entry = yield* orDie(view.entry(p)).pipe(Effect.result)
      return Result.map(entry, (e) => ({ path: p, entry: e }))
    })
  return {
    inspect: (paths) =>
      Effect.gen(function*() {
        const found = yield* Effect.forEach(paths, (p) => Effect.map(entryOf(p), (r) => [p, r] as const), { concurrency: 8 })
        // Every file's content in one batch: a child's patch of 8 files costs one request.
        const files = found.flatMap(([, r]) => (Result.isSuccess(r) && r.success.entry?.kind === "file" ? [r.success.entry] : []))
        const contents = yield* view.contents(files).pipe(Effect.orDie)
        return new Map(found.map(([raw, r]): readonly [string, Result.Result<Inspection, EngineError>] => {
          if (Result.isFailure(r)) return [raw, Result.fail(r.failure)]
          const { entry, path: p } = r.success
          if (entry === undefined) return [raw, Result.succeed({ path: p, state: { _tag: "Missing" }, mode: undefined, landing: p, facts: undefined })]
          if (entry.kind === "dir") return [raw, Result.succeed({ path: p, state: { _tag: "Directory" }, mode: undefined, landing: p, facts: undefined })]
          const bytes = contents.get(entry.hash)!
          return [raw, Result.succeed({ path: p, state: { _tag: "File", bytes }, mode: entry.mode, landing: p, facts: factsOf(bytes, entry.hash) })]
        }))
      }),
    listDir: (dir) =>
      Effect.gen(function*() {
        const entries = yield* orDie(view.list(dir))
        if (entries === undefined) {
          return yield* refuse("target_missing", dir === "" ? "." : dir, `Directory '${dir}' does not exist in the run's baseline.`)
        }
        return entries.map((e) => ({ name: e.name, kind: e.kind === "dir" ? "directory" as const : "file" as const }))
      })
  }
}
