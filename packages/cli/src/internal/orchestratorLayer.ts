/**
 * The layer of the commands that join, resolve, roll back or report runs: the engine with the
 * history and merge stores over one connection. Kept apart from `workspace.ts` so `apply` and
 * `repair` never load the orchestrator at start-up.
 */
import type { Engine } from "@forkjoin/engine/Engine"
import type { HistoryServices } from "@forkjoin/history/HistoryStore"
import type { MergeStore } from "@forkjoin/history/MergeStore"
import type { Sqlite } from "@forkjoin/history/Sqlite"
import type { Grammars } from "@forkjoin/merge/Grammars"
import * as OrchestratorRun from "@forkjoin/orchestrator/Run"
import type { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { fromHistoryOpen } from "./errors.ts"
import { afterStateCheck } from "./workspace.ts"

/**
 * The orchestrator's layer for `root` and the database `db` (with the grammars a join's
 * syntax-aware merges load on demand); an unusable database maps like `engineLayer`'s.
 */
export const orchestratorLayer = (
  root: string,
  db: string
): Layer.Layer<Engine | HistoryServices | MergeStore | Sqlite | Grammars, EngineError> =>
  // The state folder is checked before any database opens: a `.forkjoin` symlink is refused.
  afterStateCheck(
    root,
    OrchestratorRun.layer(root, db).pipe(
      Layer.catchTag("StoreError", (e) => Layer.effectContext(Effect.fail(fromHistoryOpen(e, db))))
    )
  )
