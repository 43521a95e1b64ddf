/**
 * The layer of the commands that join, resolve, roll back or report runs: the orchestrator's
 * workspace services (`@forkjoin/orchestrator/WorkspaceLayer`) with an unopenable database
 * worded as the CLI words it. Kept apart from `workspace.ts` so `apply` and `repair` never load
 * the orchestrator at start-up.
 */
import * as WorkspaceLayer from "@forkjoin/orchestrator/WorkspaceLayer"
import type { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { fromHistoryOpen } from "./errors.ts"

/**
 * The orchestrator's layer for `root` and the database `db` (with the grammars a join's
 * syntax-aware merges load on demand), after the state-folder check (a `.forkjoin` link is
 * refused before any database opens); an unusable database maps like `engineLayer`'s.
 */
export const orchestratorLayer = (root: string, db: string): Layer.Layer<WorkspaceLayer.Services, EngineError> =>
  WorkspaceLayer.checked(root, db).pipe(
    Layer.catchTag("StoreError", (e) => Layer.effectContext(Effect.fail(fromHistoryOpen(e, db))))
  )
