/** Stage 2 version guards: their form, then the live state they pin. */
import { sha256 } from "@forkjoin/patch/Bytes"
import type { FileState } from "@forkjoin/patch"
import { describe, expect, it } from "vitest"
import { checkGuardForm, checkGuards, guardsOf } from "../src/internal/guards.ts"

const text = (s: string): FileState => ({ _tag: "File", bytes: new TextEncoder().encode(s) })

describe("version guards", () => {
  it("accepts sha256:<64 lowercase hex> or null and refuses anything else", () => {
    expect(checkGuardForm(guardsOf({ a: sha256("x"), b: null }))).toBeUndefined()
    expect(checkGuardForm(guardsOf({ a: sha256("x"), b: `sha256:${"A".repeat(64)}` }))).toMatchObject({
      code: "version_guard_failed",
      stage: 2,
      paths: ["b"]
    })
    expect(guardsOf(undefined)).toEqual([])
  })

  it("compares each guard with the live state: a hash for a file, null for absence", () => {
    const files = new Map<string, FileState>([["a", text("x")], ["gone", { _tag: "Missing" }]])
    expect(checkGuards(guardsOf({ a: sha256("x"), gone: null }), files)).toBeUndefined()
    expect(checkGuards(guardsOf({ a: sha256("y") }), files)).toMatchObject({
      code: "version_guard_failed",
      paths: ["a"],
      message: expect.stringContaining(`is at ${sha256("x")}`)
    })
    expect(checkGuards(guardsOf({ gone: sha256("x") }), files)?.message).toContain("'gone' is absent")
    expect(checkGuards(guardsOf({ a: null }), files)?.paths).toEqual(["a"])
  })
})
