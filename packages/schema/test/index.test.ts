import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import * as S from "../src/index.ts"

describe("@forkjoin/schema index", () => {
  it("re-exports every module, including the engine errors", () => {
    for (const name of ["ThreadId", "TransactionId", "RelativePath", "Sha256Hash", "Snapshot", "PatchHistoryRecord", "PatchHistoryRecordFromJson", "UtcTimestamp", "EngineError", "EngineErrorCode", "StageNumber"]) {
      expect(S, name).toHaveProperty(name)
    }
  })

  it("EngineError body decodes through the shared vocabulary", () => {
    const body = Schema.decodeUnknownSync(S.EngineErrorBody)({ code: "stale_file", stage: 6, paths: ["a.ts"], message: "a.ts changed" })
    expect(body.stage).toBe(S.Stage.lock)
  })
})
