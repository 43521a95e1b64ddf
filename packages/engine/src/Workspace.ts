/**
 * What a workspace is on disk, for every caller that opens one (the command line, the library
 * facade, the gateway, the probe, the orchestrator): finding its root (the nearest enclosing
 * workspace), its state folder `<root>/.forkjoin` and the check that runs before any database
 * in it opens, its default history database, and the engine layered over the workspace's
 * history stores. Orchestrator services are added on top by `@forkjoin/orchestrator/WorkspaceLayer`.
 *
 * It does not own the state folder's rule (`Policy`), the engine itself, the stores, nor how a
 * caller words a failure (each keeps its own error type).
 *
 * @since 0.1.0
 */
import type { HistoryStore, StoreError } from "@forkjoin/history/HistoryStore"
import { layerSqlite } from "@forkjoin/history/HistoryStoreSqlite"
import type { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as path from "node:path"
import { Engine, type EngineConfig } from "./Engine.ts"
import { DEFAULT_DB_KEY } from "./internal/identity.ts"
import { openStateDirectory, STATE_DIRECTORY } from "./Policy.ts"

/**
 * The nearest of `start` and its parents holding an entry named `marker` (a folder or a link for
 * `.forkjoin`). The walk never climbs out of a state folder: a scratch workspace forkjoin keeps
 * inside `.forkjoin/` (the probe's) is its own workspace, never the one whose state it sits in.
 */
const findUp = (start: string, marker: string, folderOnly: boolean): string | undefined => {
  for (let dir = start;; dir = path.dirname(dir)) {
    if (path.basename(dir) === STATE_DIRECTORY) return undefined
    const stat = fs.lstatSync(path.join(dir, marker), { throwIfNoEntry: false })
    if (stat !== undefined && (!folderOnly || stat.isDirectory() || stat.isSymbolicLink())) return dir
    if (path.dirname(dir) === dir) return undefined
  }
}

/**
 * Where a workspace is, and whether the folder asked for sat inside it (`enclosing`).
 *
 * @category models
 * @since 0.1.0
 */
export interface WorkspaceLocation {
  readonly root: string
  readonly enclosing: boolean
}

/**
 * The workspace to work on. Without `dir`: the nearest folder with `.forkjoin` from `cwd` (the
 * current folder) up, else the nearest git root, else `cwd` itself. With it: that folder, or the
 * workspace enclosing it (`enclosing` is then true), so no workspace is ever nested inside
 * another. The root is a real path. Throws the file system's error for a folder that cannot be
 * read or is not a directory (`ENOTDIR`); callers word it for their users.
 *
 * @category constructors
 * @since 0.1.0
 */
export const locateWorkspace = (dir: string | undefined, cwd: string = process.cwd()): WorkspaceLocation => {
  if (dir === undefined) {
    const here = fs.realpathSync(cwd)
    return { root: findUp(here, STATE_DIRECTORY, true) ?? findUp(here, ".git", false) ?? here, enclosing: false }
  }
  const real = fs.realpathSync(dir)
  if (!fs.statSync(real).isDirectory()) throw Object.assign(new Error("not a directory"), { code: "ENOTDIR" })
  const root = findUp(real, STATE_DIRECTORY, true) ?? real
  return { root, enclosing: root !== real }
}

/**
 * The workspace's default history database, `<root>/.forkjoin/history.db`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const defaultDatabaseOf = (root: string): string => path.join(root, STATE_DIRECTORY, DEFAULT_DB_KEY)

/**
 * The history database: `db` when given, else the default one (`defaultDatabaseOf`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const databaseOf = (root: string, db: string | undefined): string => db ?? defaultDatabaseOf(root)

/**
 * The workspace's state folder `<root>/.forkjoin`, created (with its `.gitignore`) when
 * missing. A link or a file there is refused (`path_denied_by_policy`, stage 3), so run it
 * before opening any database: nothing is then ever created where a link points.
 *
 * @category constructors
 * @since 0.1.0
 */
export const ensureStateFolder = (root: string): Effect.Effect<string, EngineError> =>
  Effect.suspend(() => Effect.fromResult(openStateDirectory(root)))

/**
 * `layer`, built only after the state folder of `root` passed `ensureStateFolder`.
 *
 * @category layers
 * @since 0.1.0
 */
export const afterStateCheck = <A, E, R>(root: string, layer: Layer.Layer<A, E, R>): Layer.Layer<A, E | EngineError, R> =>
  Layer.unwrap(Effect.as(ensureStateFolder(root), layer))

/**
 * The engine on `root` over `stores` (which hold the `HistoryStore`, and may add more services
 * over the same connection: views, the merge store), with the stores' services kept beside it.
 *
 * @category layers
 * @since 0.1.0
 */
export const engineOver = <A, E, R>(
  root: string,
  stores: Layer.Layer<A | HistoryStore, E, R>,
  options: Omit<EngineConfig, "root"> = {}
): Layer.Layer<Engine | A | HistoryStore, E | EngineError, R> =>
  Engine.layer({ ...options, root }).pipe(Layer.provideMerge(stores))

/**
 * The engine on `root` recording into the history database `db` (a connection of its own,
 * which nothing else sees).
 *
 * @category layers
 * @since 0.1.0
 */
export const engineLayer = (
  root: string,
  db: string,
  options: Omit<EngineConfig, "root"> = {}
): Layer.Layer<Engine, EngineError | StoreError> => Engine.layer({ ...options, root }).pipe(Layer.provide(layerSqlite(db)))
