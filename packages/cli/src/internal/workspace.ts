/**
 * The workspace a command runs against, in the command line's terms: `--workspace` (else the
 * nearest enclosing workspace) as a `UsageError` when unusable, reporting a move or copy its
 * identity file noticed, and the engine layer whose unopenable database is an `EngineError`.
 * Finding the root, the default `--db` (`<workspace>/.forkjoin/history.db`), the state-folder
 * check and the layers themselves are the engine's `Workspace` module; these are its CLI faces.
 *
 * It does not own what the commands do with the engine, nor the history views' own layers.
 *
 * @since 0.1.0
 */
import { Engine } from "@forkjoin/engine/Engine"
import * as Workspace from "@forkjoin/engine/Workspace"
import { workspaceIdentityAt } from "@forkjoin/engine/WorkspaceIdentity"
import { errnoOf } from "@forkjoin/patch/SystemError"
import type { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { fromHistoryOpen, UsageError } from "./errors.ts"
import { NEAREST_WORKSPACE } from "./flags.ts"
import { writeStderr } from "./output.ts"

/**
 * Where a command's workspace is (`Workspace.locateWorkspace`): without `--workspace` the
 * nearest enclosing workspace, else the git root, else the current folder; with it that folder
 * or the workspace enclosing it (`enclosing` is then true). An unusable folder is a `UsageError`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const locateWorkspace = (workspace: string): Effect.Effect<Workspace.WorkspaceLocation, UsageError> =>
  Effect.try({
    try: () => Workspace.locateWorkspace(workspace === NEAREST_WORKSPACE ? undefined : workspace),
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
export const historyDbOf: (root: string, db: string | undefined) => string = Workspace.databaseOf

/**
 * The workspace's state folder `<root>/.forkjoin`, created when missing; a link or a file there
 * is refused (`Workspace.ensureStateFolder`). Run it before opening any database.
 *
 * @category constructors
 * @since 0.1.0
 */
export const ensureStateFolder: (root: string) => Effect.Effect<string, EngineError> = Workspace.ensureStateFolder

/**
 * `layer`, built only after the state folder of `root` passed `ensureStateFolder`.
 *
 * @category layers
 * @since 0.1.0
 */
export const afterStateCheck = Workspace.afterStateCheck

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
    Workspace.engineLayer(root, db, options).pipe(
      Layer.catchTag("StoreError", (e) => Layer.effect(Engine, Effect.fail(fromHistoryOpen(e, db))))
    )
  )
