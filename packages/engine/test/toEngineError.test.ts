/** Thrown values become engine errors of their stage and keep their cause; engine errors pass through. */
import { EngineError } from "@forkjoin/schema/EngineError"
import { describe, expect, it } from "vitest"
import { toEngineError } from "../src/internal/toEngineError.ts"

describe("toEngineError", () => {
  it("passes an EngineError through unchanged", () => {
    const e = new EngineError({ code: "stale_file", stage: 6, paths: ["a"], message: "m" })
    expect(toEngineError(e, 3, ["b"])).toBe(e)
  })

  it("keeps a system error as the cause and names its code", () => {
    const thrown = Object.assign(new Error("disk on fire"), { code: "EIO" })
    const e = toEngineError(thrown, 7, ["a"])
    expect(e).toMatchObject({ code: "commit_failed", stage: 7, paths: ["a"], message: "Unexpected failure (EIO); nothing was written." })
    expect(e.cause).toBe(thrown)
  })

  it("describes a value without a code by its string form", () => {
    const e = toEngineError("boom", 5, [])
    expect(e.message).toBe("Unexpected failure (boom); nothing was written.")
    expect(e.cause).toBe("boom")
  })
})
