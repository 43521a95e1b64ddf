/**
 * The workspace a command runs against: resolving `--workspace` to its real directory, the
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
import { openStateDirectory } from "@forkjoin/engine/Policy"
import { layerSqlite } from "@forkjoin/history/HistoryStoreSqlite"
import type { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as path from "node:path"
import { fromHistoryOpen, UsageError } from "./errors.ts"

/**
 * The real path of the `--workspace` directory; missing or not a directory is a `UsageError`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolveWorkspace = (workspace: string): Effect.Effect<string, UsageError> =>
  Effect.try({
    try: () => {
      const root = fs.realpathSync(workspace)
      if (!fs.statSync(root).isDirectory()) throw Object.assign(new Error("not a directory"), { code: "ENOTDIR" })
      return root
    },
    catch: (error) =>
      new UsageError({
        message: `workspace '${workspace}' is not a usable directory (${
          errnoOf(error) ?? String(error)
        }); pass an existing directory to --workspace.`,
        cause: error
      })
  })

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
