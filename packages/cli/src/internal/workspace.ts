/**
 * The workspace a command runs against: finding it (`--workspace`, else the nearest enclosing
 * one), reporting a move or copy its identity file noticed, the
 * default `--db` (`<workspace>/.forkjoin/history.db`), the state-folder check that runs
 * before any database is opened, and the one layer that wires the native engine to the
 * workspace's SQLite patch history.
 *
 * It does not own what the commands do with the engine, nor the history views' own layers.
 *
 * @since 0.1.0
 */
import { errnoOf } from "@forkjoin/patch/SystemError"
import { Engine } from "@forkjoin/engine/Engine"
import { openStateDirectory, STATE_DIRECTORY } from "@forkjoin/engine/Policy"
import { workspaceIdentityAt } from "@forkjoin/engine/WorkspaceIdentity"
import { layerSqlite } from "@forkjoin/history/HistoryStoreSqlite"
import type { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as path from "node:path"
import { fromHistoryOpen, UsageError } from "./errors.ts"
import { NEAREST_WORKSPACE } from "./flags.ts"
import { writeStderr } from "./output.ts"

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
 * Where a command's workspace is. Without `--workspace`: the nearest folder with `.forkjoin`
 * from the current one up, else the nearest git root, else the current folder. With it: that
 * folder, or the workspace enclosing it (`enclosing` is then that workspace), so no workspace
 * is ever nested inside another.
 *
 * @category constructors
 * @since 0.1.0
 */
export const locateWorkspace = (workspace: string): Effect.Effect<{ readonly root: string; readonly enclosing: boolean }, UsageError> =>
  Effect.try({
    try: () => {
      if (workspace === NEAREST_WORKSPACE) {
        const here = fs.realpathSync(process.cwd())
        return { root: findUp(here, STATE_DIRECTORY, true) ?? findUp(here, ".git", false) ?? here, enclosing: false }
      }
      const dir = fs.realpathSync(workspace)
      if (!fs.statSync(dir).isDirectory()) throw Object.assign(new Error("not a directory"), { code: "ENOTDIR" })
      const root = findUp(dir, STATE_DIRECTORY, true) ?? dir
      return { root, enclosing: root !== dir }
    },
    catch: (error) =>
      new UsageError({
        message: workspace === NEAREST_WORKSPACE
          ? `the current folder cannot be read (${errnoOf(error) ?? String(error)}); pass --workspace DIR.`
          : `workspace '${workspace}' is not a usable directory (${errnoOf(error) ?? String(error)}); pass an existing directory to --workspace.`,
        cause: error
      })
  })

/**
 * The workspace a command runs against (see `locateWorkspace`), with what its identity file
 * says about it: `moved` when the folder was moved since it was last opened (its history came
 * along), `copiedFrom` when it is a copy beside its original (it starts a history of its own).
 * Both, and a `--workspace` inside another workspace, are said once on stderr.
 *
 * @category constructors
 * @since 0.1.0
 */
export const openWorkspace = (workspace: string) =>
  Effect.gen(function*() {
    const { enclosing, root } = yield* locateWorkspace(workspace)
    if (enclosing) {
      yield* writeStderr(
        `forkjoin: '${workspace}' is inside the workspace '${root}'; using that workspace (patch paths are relative to it).\n`
      )
    }
    const identity = workspaceIdentityAt(root)
    if (identity.moved !== undefined) {
      yield* writeStderr(`forkjoin: workspace moved from ${identity.moved.from} to ${identity.moved.to}; its history came along.\n`)
    }
    if (identity.copiedFrom !== undefined) {
      yield* writeStderr(
        `forkjoin: this workspace is a copy of ${identity.copiedFrom}, which is still in place; the copy starts a history ` +
          "of its own (the original keeps its history, conflicts and runs).\n"
      )
    }
    return { root, moved: identity.moved, copiedFrom: identity.copiedFrom }
  })

/**
 * The real path of the workspace a command runs against (`openWorkspace`); a missing folder or
 * one that is not a directory is a `UsageError`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolveWorkspace = (workspace: string): Effect.Effect<string, UsageError> =>
  Effect.map(openWorkspace(workspace), (w) => w.root)

/**
 * The history database: `--db` when given, else `<root>/.forkjoin/history.db`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const historyDbOf = (root: string, db: string | undefined): string =>
  db ?? path.join(root, ".forkjoin", "history.db")

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
 * The engine on `root` recording into the history database `db`, after the state-folder
 * check. A database that cannot be opened fails the layer with an `EngineError` (busy or
 * corrupt: `history_unavailable`).
 *
 * @category layers
 * @since 0.1.0
 */
export const engineLayer = (
  root: string,
  db: string,
  options?: { readonly repairOnStart?: boolean; readonly resetHistory?: boolean }
): Layer.Layer<Engine, EngineError> =>
  afterStateCheck(
    root,
    Engine.layer({
      root,
      ...(options?.repairOnStart === undefined ? {} : { repairOnStart: options.repairOnStart }),
      ...(options?.resetHistory === undefined ? {} : { resetHistory: options.resetHistory })
    }).pipe(
      Layer.provide(layerSqlite(db)),
      Layer.catchTag("StoreError", (e) => Layer.effect(Engine, Effect.fail(fromHistoryOpen(e, db))))
    )
  )
