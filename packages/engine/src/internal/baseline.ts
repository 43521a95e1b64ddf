/**
 * The baseline of a precomputed plan (changeset merge, rollback, conflict resolution): each
 * file's planned `before` (and a move's `overwritten` destination) must still be the live
 * content, else `stale_file` at stage 5. Pure; the live states come from stage 3.
 */
import type { FileState, Plan } from "@forkjoin/patch"
import { sameBytes } from "@forkjoin/patch/Bytes"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Result from "effect/Result"

/** The plan itself when every baseline matches the live `files`, else the first mismatch. */
export const checkBaseline = (plan: Plan, files: ReadonlyMap<string, FileState>): Result.Result<Plan, EngineError> => {
  for (const f of plan.files) {
    const checks: Array<readonly [string, Uint8Array | undefined]> = [[f.moveFrom ?? f.path, f.before]]
    if (f.moveFrom !== undefined) checks.push([f.path, f.overwritten])
    for (const [p, expected] of checks) {
      const s = files.get(p)
      const ok = expected === undefined
        ? s?._tag === "Missing"
        : s?._tag === "File" && sameBytes(s.bytes, expected)
      if (!ok) {
        return Result.fail(
          new EngineError({
            code: "stale_file",
            stage: Stage.plan,
            paths: [p],
            message: `'${p}' is not in the state this plan was computed against; nothing was written. Recompute the plan from the live file.`
          })
        )
      }
      if (s !== undefined && s._tag !== "File" && s._tag !== "Missing") {
        return Result.fail(
          new EngineError({ code: "unsupported_file_type", stage: Stage.plan, paths: [p], message: `'${p}' is not a regular file.` })
        )
      }
    }
  }
  return Result.succeed(plan)
}
