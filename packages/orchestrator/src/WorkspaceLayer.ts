/**
 * The orchestrator's services over a workspace, built on `@forkjoin/engine/Workspace`: the
 * engine with the history and merge stores over ONE connection to the workspace's history
 * database (a join records patch history and merge outcomes in the same database), and the
 * grammars of syntax-aware merges (each loaded only when a merge needs it). Used by runs,
 * conflicts, rollbacks, the gateway, the probe and the command line.
 *
 * It does not own finding the workspace, its state folder or its default database (the
 * engine's `Workspace`), nor how a caller words a database that cannot be opened.
 *
 * @since 0.1.0
 */
import type { Engine } from "@forkjoin/engine/Engine"
import * as Workspace from "@forkjoin/engine/Workspace"
import type { HistoryServices, StoreError } from "@forkjoin/history/HistoryStore"
import type { MergeStore } from "@forkjoin/history/MergeStore"
import * as MergeStoreSqlite from "@forkjoin/history/MergeStoreSqlite"
import type { Sqlite } from "@forkjoin/history/Sqlite"
import { Grammars } from "@forkjoin/merge/Grammars"
import type { EngineError } from "@forkjoin/schema/EngineError"
import * as Layer from "effect/Layer"

/**
 * What the orchestrator needs of a workspace.
 *
 * @category models
 * @since 0.1.0
 */
export type Services = Engine | HistoryServices | MergeStore | Sqlite | Grammars

/**
 * The orchestrator's services for the workspace `root` and the history database `db`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (root: string, db: string): Layer.Layer<Services, EngineError | StoreError> =>
  Workspace.engineOver(root, MergeStoreSqlite.layerWithHistory(db)).pipe(Layer.merge(Grammars.layer))

/**
 * `layer` after the state-folder check (`Workspace.afterStateCheck`), over `db` or else the
 * workspace's default database: a `.forkjoin` link is refused before any database opens.
 *
 * @category layers
 * @since 0.1.0
 */
export const checked = (root: string, db?: string): Layer.Layer<Services, EngineError | StoreError> =>
  Workspace.afterStateCheck(root, layer(root, Workspace.databaseOf(root, db)))
