/** A precomputed plan's baseline must be the live state (stage 5 `stale_file`). */
import { RelativePath } from "@forkjoin/schema/Ids"
import type { FileState, Plan } from "@forkjoin/patch"
import * as Result from "effect/Result"
import { describe, expect, it } from "vitest"
import { checkBaseline } from "../src/internal/baseline.ts"

const b = (s: string): Uint8Array => new TextEncoder().encode(s)
const file = (s: string): FileState => ({ _tag: "File", bytes: b(s) })

describe("checkBaseline", () => {
  const plan: Plan = {
    files: [
      { kind: "update", path: RelativePath.make("a"), before: b("1"), after: b("2") },
      { kind: "add", path: RelativePath.make("n"), before: undefined, after: b("x") },
      { kind: "move", path: RelativePath.make("d"), moveFrom: RelativePath.make("s"), before: b("s"), after: b("s"), overwritten: b("old") }
    ],
    summary: []
  }
  const live = new Map<string, FileState>([["a", file("1")], ["n", { _tag: "Missing" }], ["s", file("s")], ["d", file("old")]])

  it("passes the plan through when every baseline is live", () => {
    expect(checkBaseline(plan, live)).toEqual(Result.succeed(plan))
  })

  it("refuses the first path whose live state differs", () => {
    const changed = (p: string, s: FileState) => {
      const r = checkBaseline(plan, new Map([...live, [p, s]]))
      return Result.isFailure(r) ? { code: r.failure.code, stage: r.failure.stage, paths: r.failure.paths } : undefined
    }
    expect(changed("a", file("other"))).toEqual({ code: "stale_file", stage: 5, paths: ["a"] })
    expect(changed("n", file("appeared"))).toEqual({ code: "stale_file", stage: 5, paths: ["n"] })
    expect(changed("d", { _tag: "Missing" })).toEqual({ code: "stale_file", stage: 5, paths: ["d"] })
    expect(changed("s", file("moved on"))).toEqual({ code: "stale_file", stage: 5, paths: ["s"] })
  })
})
