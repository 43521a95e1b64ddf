/**
 * The one mapping from a value thrown inside an engine stage to the engine's error. Engine
 * errors pass through unchanged; anything else is an unexpected `commit_failed` of that stage
 * that keeps the thrown value as its `cause`. Store failures are `HistoryFailure.ts`.
 */
import { errnoOf } from "@forkjoin/patch/SystemError"
import { EngineError } from "@forkjoin/schema/EngineError"
import type { StageNumber } from "@forkjoin/schema/ErrorCode"

/** Maps a thrown value to an `EngineError` of `stage` (engine errors pass through). */
export const toEngineError = (e: unknown, stage: StageNumber, paths: ReadonlyArray<string>): EngineError =>
  e instanceof EngineError
    ? e
    : new EngineError({
      code: "commit_failed",
      stage,
      paths,
      message: `Unexpected failure (${errnoOf(e) ?? String(e)}); nothing was written.`,
      cause: e
    })
