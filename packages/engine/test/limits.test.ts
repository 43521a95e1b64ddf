/** Stage 1 limits: patch bytes, file count and per-file size, with request overrides. */
import { RelativePath } from "@forkjoin/schema/Ids"
import type { Plan } from "@forkjoin/patch"
import { describe, expect, it } from "vitest"
import { checkFileCount, checkFileSizes, checkPatchSize, DEFAULT_LIMITS, limitsOf } from "../src/internal/limits.ts"

const bytes = (n: number): Uint8Array => new Uint8Array(n)

describe("limits", () => {
  it("request overrides engine overrides defaults", () => {
    expect(limitsOf(undefined, undefined)).toEqual(DEFAULT_LIMITS)
    expect(limitsOf({ maxFiles: 5, maxFileBytes: 7 }, { maxFiles: 2 })).toEqual({ ...DEFAULT_LIMITS, maxFiles: 2, maxFileBytes: 7 })
  })

  it("counts the patch in UTF-8 bytes", () => {
    const limits = { ...DEFAULT_LIMITS, maxPatchBytes: 4 }
    expect(checkPatchSize("abcd", limits)).toBeUndefined()
    expect(checkPatchSize("abé", limits)).toBeUndefined()
    expect(checkPatchSize("abcé", limits)).toMatchObject({ code: "input_too_large", stage: 1, paths: [], message: expect.stringContaining("5 bytes") })
  })

  it("refuses too many files and the first file over the size limit", () => {
    const limits = { ...DEFAULT_LIMITS, maxFiles: 1, maxFileBytes: 3 }
    expect(checkFileCount(["a"], limits)).toBeUndefined()
    expect(checkFileCount(["a", "b"], limits)).toMatchObject({ code: "input_too_large", stage: 1 })
    const plan: Plan = {
      files: [
        { kind: "delete", path: RelativePath.make("gone"), before: bytes(10), after: undefined },
        { kind: "add", path: RelativePath.make("ok"), before: undefined, after: bytes(3) },
        { kind: "add", path: RelativePath.make("big"), before: undefined, after: bytes(4) },
        { kind: "add", path: RelativePath.make("bigger"), before: undefined, after: bytes(5) }
      ],
      summary: []
    }
    expect(checkFileSizes(plan, limits)).toMatchObject({ code: "input_too_large", stage: 1, paths: ["big"] })
    expect(checkFileSizes({ files: plan.files.slice(0, 2), summary: [] }, limits)).toBeUndefined()
  })
})
