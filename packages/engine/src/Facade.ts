/**
 * The promise API for non-Effect users: `openWorkspace(dir)` gives a handle whose methods
 * run the engine and resolve to records or reject with the engine's typed error (an `Error`
 * with `code`, `stage`, `paths`). The Effect API (`Engine`) stays the primary one.
 *
 * @since 0.1.0
 */
import type { StoreError } from "@forkjoin/history/HistoryStore"
import {
  type DiffRequest,
  type FileRequest,
  HistoryViews,
  type TimelineRequest,
  type TurnRequest,
  type ViewError
} from "@forkjoin/history/Views"
import type { Profile } from "@forkjoin/patch"
import type { PatchHistoryRecord } from "@forkjoin/schema"
import type { DiffPage, FilePage, TimelinePage, TurnPage } from "@forkjoin/schema/HistoryViews"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as fs from "node:fs"
import * as path from "node:path"
import { Engine, type EngineConfig, environmentIdOf, type Grant, Grants } from "./Engine.ts"
import * as Remote from "./Remote.ts"
import type { RepairReport } from "./internal/repair.ts"
import { decodeRequestIds } from "./RequestIds.ts"
import * as WorkspaceFiles from "./Workspace.ts"

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
  /**
   * A running `forkjoin serve` (its URL and a token from `forkjoin token create`): applies and
   * views go over HTTP to its resident engine, so no process start and no database open per
   * call; `repair` runs on the server's start, not here.
   */
  readonly server?: { readonly url: string; readonly token: string }
}

/**
 * Options of one `applyPatch` call.
 *
 * @category models
 * @since 0.1.0
 */
export interface ApplyOptions {
  /** The thread the change is recorded in (default `library`). */
  readonly threadId?: string
  /** The turn the change is recorded in (default `library`). */
  readonly turnId?: string
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
  applyPatch(text: string, options?: ApplyOptions): Promise<PatchHistoryRecord>
  /** Runs startup repair again (it already ran on open). */
  repair(): Promise<RepairReport>
  /** History views (SPEC §4.4); reject with a `ViewError` (`reason`) or `StoreError`. */
  readonly history: {
    timeline(request: TimelineRequest): Promise<TimelinePage>
    turn(request: TurnRequest): Promise<TurnPage>
    diff(request: DiffRequest): Promise<DiffPage>
    file(request: FileRequest): Promise<FilePage>
  }
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
  if (options.server !== undefined) return remoteWorkspace(path.resolve(dir), options.server)
  const root = path.resolve(dir)
  const db = WorkspaceFiles.databaseOf(root, options.db)
  let real = root
  try {
    real = fs.realpathSync(root)
  } catch {
    // the engine reports a missing workspace with its own error
  }
  if (options.db === undefined && fs.existsSync(real)) {
    // The history database opens before the engine: refuse a `.forkjoin` link first.
    await Effect.runPromise(WorkspaceFiles.ensureStateFolder(real))
  }
  // One connection serves the engine's store and the views.
  const storeAndViews = HistoryViews.layerWithStore(db, { environmentId: environmentIdOf(real), root: real })
  const runtime = ManagedRuntime.make(WorkspaceFiles.engineOver(root, storeAndViews, options))
  const run = <A>(f: (e: Engine["Service"]) => Effect.Effect<A, EngineError>): Promise<A> =>
    runtime.runPromise(Engine.use(f)).catch((e: unknown) => {
      throw unwrap(e)
    })
  const view = <A>(f: (v: HistoryViews["Service"]) => Effect.Effect<A, ViewError | StoreError>): Promise<A> =>
    runtime.runPromise(HistoryViews.use(f)).catch((e: unknown) => {
      throw unwrap(e)
    })
  const info = await run((e) => Effect.succeed({ root: e.root, environmentId: e.environmentId }))
  return {
    ...info,
    applyPatch: (text, o = {}) =>
      notPatchText(text) ?? run((e) =>
        Effect.flatMap(decodeRequestIds(idsOf(o)), (ids) =>
          e.applyPatch({
          patch: text,
          ...ids,
          profile: o.profile ?? "native",
          preserveLineEndings: o.preserveLineEndings ?? false,
          grant: o.grant ?? Grants.writeCreateDirs,
          ...(o.expect === undefined ? {} : { expect: o.expect })
        }))
      ),
    repair: () => run((e) => e.repair),
    history: {
      timeline: (request) => view((v) => v.timeline(request)),
      turn: (request) => view((v) => v.turn(request)),
      diff: (request) => view((v) => v.diff(request)),
      file: (request) => view((v) => v.file(request))
    },
    close: () => runtime.dispose()
  }
}

// Through a running gateway (`Remote`): the same surface, over HTTP to its resident engine.
const remoteWorkspace = (root: string, server: Remote.Server): Workspace => {
  const view = <A>(route: Remote.ViewRoute, query: Record<string, string | number | boolean | undefined>): Promise<A> =>
    Effect.runPromise(Remote.viewRemote(server, route, query)) as Promise<A>
  let real = root
  try {
    real = fs.realpathSync(root)
  } catch {
    // the server knows its own workspace; the id is only informative here
  }
  return {
    root,
    environmentId: environmentIdOf(real),
    applyPatch: (text, o = {}) =>
      notPatchText(text) ?? Effect.runPromise(Remote.applyRemote(server, {
        patch: text,
        thread: o.threadId ?? DEFAULT_ID,
        turn: o.turnId ?? DEFAULT_ID,
        invocation: o.invocationId,
        profile: o.profile,
        ...(o.grant?.overwrite === true ? { allowOverwrite: true } : {})
      })),
    repair: () => Promise.reject(new Error("repair runs in the server (on its start); it cannot be started through it")),
    history: {
      timeline: (r) => view("timeline", { thread: r.thread, turn: r.turn, descendants: r.descendants, cursor: r.cursor, limit: r.limit, maxBytes: r.maxBytes }),
      turn: (r) => view(`turns/${encodeURIComponent(r.turn)}`, { cursor: r.cursor, limit: r.limit, maxBytes: r.maxBytes }),
      diff: (r) => view("diff", { target: r.target ?? r.recordId, maxLines: r.maxLines, cursor: r.cursor, limit: r.limit, maxBytes: r.maxBytes }),
      file: (r) => view("files", { path: r.path, cursor: r.cursor, limit: r.limit, maxBytes: r.maxBytes })
    },
    close: () => Promise.resolve()
  }
}

// The thread and turn of a call that names none.
const DEFAULT_ID = "library"

const idsOf = (o: ApplyOptions) => ({
  threadId: o.threadId ?? DEFAULT_ID,
  turnId: o.turnId ?? DEFAULT_ID,
  invocationId: o.invocationId
})

// JavaScript callers are not type-checked: a missing or non-string patch is refused up front.
const notPatchText = (text: unknown): Promise<never> | undefined =>
  typeof text === "string"
    ? undefined
    : Promise.reject(
      new EngineError({
        code: "request_invalid",
        stage: Stage.normalize,
        paths: [],
        message: `applyPatch takes the patch text as its first argument, a string (got ${text === null ? "null" : typeof text}); pass the patch's contents.`
      })
    )

// runPromise may reject with a wrapper around the failure; surface the typed error itself.
const unwrap = (e: unknown): unknown =>
  typeof e === "object" && e !== null && !("_tag" in e) && "cause" in e && e.cause instanceof Error ? e.cause : e
