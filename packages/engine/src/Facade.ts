/**
 * The promise API for non-Effect users: `openWorkspace(dir)` gives a handle whose methods
 * run the engine and resolve to records or reject with the engine's typed error (an `Error`
 * with `code`, `stage`, `paths`). The Effect API (`Engine`) stays the primary one.
 *
 * @since 0.1.0
 */
import { layerSqlite } from "@forkjoin/history/HistoryStoreSqlite"
import type { Profile } from "@forkjoin/patch"
import type { PatchHistoryRecord } from "@forkjoin/schema"
import { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as path from "node:path"
import { Engine, type EngineConfig, type Grant, Grants } from "./Engine.ts"
import type { RepairReport } from "./internal/repair.ts"

export { EngineError }

/**
 * Options of `openWorkspace`: the history database (default `<dir>/.forkjoin/history.db`)
 * and the engine settings.
 *
 * @category models
 * @since 0.1.0
 */
export interface OpenOptions extends Omit<EngineConfig, "root"> {
  readonly db?: string
}

/**
 * Options of one `applyPatch` call.
 *
 * @category models
 * @since 0.1.0
 */
export interface ApplyOptions {
  readonly threadId: string
  readonly turnId: string
  readonly invocationId?: string
  readonly profile?: Profile
  readonly preserveLineEndings?: boolean
  readonly grant?: Grant
  readonly expect?: Readonly<Record<string, string | null>>
}

/**
 * An open workspace.
 *
 * @category models
 * @since 0.1.0
 */
export interface Workspace {
  readonly root: string
  readonly environmentId: string
  /** Applies a patch; resolves to the PatchHistoryRecord, rejects with an `EngineError`. */
  applyPatch(text: string, options: ApplyOptions): Promise<PatchHistoryRecord>
  /** Runs startup repair again (it already ran on open). */
  repair(): Promise<RepairReport>
  /** Releases the database and the workspace lock. */
  close(): Promise<void>
}

/**
 * Opens a workspace: builds the engine over its history database and runs startup repair.
 *
 * @category constructors
 * @since 0.1.0
 */
export const openWorkspace = async (dir: string, options: OpenOptions = {}): Promise<Workspace> => {
  const root = path.resolve(dir)
  const db = options.db ?? path.join(root, ".forkjoin", "history.db")
  const runtime = ManagedRuntime.make(Engine.layer({ ...options, root }).pipe(Layer.provide(layerSqlite(db))))
  const run = <A>(f: (e: Engine["Service"]) => Effect.Effect<A, EngineError>): Promise<A> =>
    runtime.runPromise(Engine.use(f)).catch((e: unknown) => {
      throw unwrap(e)
    })
  const info = await run((e) => Effect.succeed({ root: e.root, environmentId: e.environmentId }))
  return {
    ...info,
    applyPatch: (text, o) =>
      run((e) =>
        e.applyPatch({
          patch: text,
          threadId: o.threadId,
          turnId: o.turnId,
          ...(o.invocationId === undefined ? {} : { invocationId: o.invocationId }),
          profile: o.profile ?? "native",
          preserveLineEndings: o.preserveLineEndings ?? false,
          grant: o.grant ?? Grants.writeCreateDirs,
          ...(o.expect === undefined ? {} : { expect: o.expect })
        })
      ),
    repair: () => run((e) => e.repair),
    close: () => runtime.dispose()
  }
}

// runPromise rejects with a FiberFailure-like wrapper in some versions; surface the typed error.
const unwrap = (e: unknown): unknown => {
  if (e instanceof EngineError) return e
  if (typeof e === "object" && e !== null && "cause" in e && e.cause instanceof EngineError) return e.cause
  return e
}
