/**
 * The one mapping from a history-store failure to the engine's error. A busy or corrupt
 * history database is `history_unavailable` (the user must wait, restore or move it); any
 * other store failure is `commit_failed`. The stage number is kept and the store error stays
 * as the `cause`.
 *
 * @since 0.1.0
 */
import type { StoreError } from "@forkjoin/history/HistoryStore"
import { EngineError } from "@forkjoin/schema/EngineError"
import type { StageNumber } from "@forkjoin/schema/ErrorCode"

/**
 * Maps a `StoreError` met at `stage` (while doing `what`) to an `EngineError` with an
 * actionable message. `Busy` and `Corrupt` become `history_unavailable`.
 *
 * @category error handling
 * @since 0.1.0
 */
export const fromStoreError = (
  e: StoreError,
  stage: StageNumber,
  paths: ReadonlyArray<string>,
  what: string
): EngineError => {
  switch (e.reason) {
    case "Busy":
      return new EngineError({
        code: "history_unavailable",
        stage,
        paths,
        message: `${what}: the history database is locked by another process (${e.message}); wait for it to finish and retry.`,
        cause: e
      })
    case "Corrupt":
      return new EngineError({
        code: "history_unavailable",
        stage,
        paths,
        message:
          `${what}: the history database is damaged or not a forkjoin database (${e.message}); restore it from a backup or pass another one with --db.`,
        cause: e
      })
    default:
      return new EngineError({ code: "commit_failed", stage, paths, message: `${what}: ${e.message}`, cause: e })
  }
}
