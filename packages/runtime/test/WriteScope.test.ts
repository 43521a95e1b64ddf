/** Write-scope normalization and membership (SPEC §6.1), including the Auto-Coding cases. */
import { normalizeRelativePath } from "@forkjoin/patch"
import * as fc from "fast-check"
import * as Result from "effect/Result"
import { describe, expect, it } from "vitest"
import * as WriteScope from "../src/WriteScope.ts"

const norm = (raw: string) => {
  const r = WriteScope.normalizePath(raw)
  return Result.isSuccess(r) ? r.success : r.failure.reason
}

describe("WriteScope.normalizePath", () => {
  it("normalizes backslashes, '.', duplicate and trailing slashes, and inner '..'", () => {
    expect(norm("./src//utils/./a.py")).toBe("src/utils/a.py")
    expect(norm("src/")).toBe("src")
    expect(norm("src\\api\\")).toBe("src/api")
    expect(norm("src/api/../lib")).toBe("src/lib")
    expect(norm("a///b//")).toBe("a/b")
    expect(norm("docs/readme.md")).toBe("docs/readme.md")
  })

  it("refuses absolute, escaping, blank and control-character paths with a reason", () => {
    expect(norm("/etc/passwd")).toBe("absolute_path")
    expect(norm("\\\\server\\share\\x")).toBe("absolute_path")
    expect(norm("C:\\Users\\x")).toBe("absolute_path")
    expect(norm("c:/x")).toBe("absolute_path")
    expect(norm("../outside")).toBe("escaping_path")
    expect(norm("src/../../outside")).toBe("escaping_path")
    expect(norm("")).toBe("empty_path")
    expect(norm(".")).toBe("empty_path")
    expect(norm("./")).toBe("empty_path")
    expect(norm("src/..")).toBe("empty_path")
    expect(norm("src/\u0000x")).toBe("invalid_character")
    expect(norm("src/\nx")).toBe("invalid_character")
  })

  it("errors name the path and say what to do", () => {
    const r = WriteScope.normalizePath("../x")
    expect(Result.isFailure(r) && r.failure.message).toMatch(/"\.\.\/x" escapes the workspace/)
    const e = WriteScope.make([])
    expect(Result.isFailure(e) && e.failure.message).toMatch(/non-empty writeScope/)
  })

  it("agrees with the engine's patch-path normalization on every input", () => {
    const segment = fc.constantFrom("a", "b", "src", ".", "..", "", "x.ts", "C:", "\\", "\u0001", " ")
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 6 }), fc.constantFrom("/", "\\"), (segments, sep) => {
        const raw = segments.join(sep)
        const ours = WriteScope.normalizePath(raw)
        const engine = normalizeRelativePath(raw)
        expect(Result.isSuccess(ours)).toBe(Result.isSuccess(engine))
        if (Result.isSuccess(ours) && Result.isSuccess(engine)) expect(ours.success).toBe(engine.success)
      }),
      { numRuns: 2000 }
    )
  })
})

describe("WriteScope.make", () => {
  it("normalizes, deduplicates and sorts; refuses an empty list or any bad path", () => {
    const scope = WriteScope.makeUnsafe(["src/", "./docs//readme.md", "src", "lib\\x"])
    expect([...scope]).toEqual(["docs/readme.md", "lib/x", "src"])
    const empty = WriteScope.make([])
    expect(Result.isFailure(empty) && empty.failure.reason).toBe("empty_scope")
    const bad = WriteScope.make(["src", "/abs"])
    expect(Result.isFailure(bad) && bad.failure).toMatchObject({ reason: "absolute_path", path: "/abs" })
    expect(() => WriteScope.makeUnsafe(["../x"])).toThrow(/escapes/)
  })
})

describe("WriteScope.covers / violations / isWithin", () => {
  const scope = WriteScope.makeUnsafe(["src/api", "docs/readme.md"])

  it("covers a directory subtree with a '/' boundary and exact files", () => {
    expect(WriteScope.covers(scope, "src/api")).toBe(true)
    expect(WriteScope.covers(scope, "src/api/x.ts")).toBe(true)
    expect(WriteScope.covers(scope, "src/api/deep/er/y.ts")).toBe(true)
    expect(WriteScope.covers(scope, "docs/readme.md")).toBe(true)
    expect(WriteScope.covers("src/api/x.ts")(scope)).toBe(true)
  })

  it("does not cover siblings sharing a prefix, parents, absolute or escaping paths", () => {
    expect(WriteScope.covers(scope, "src/api2/x.ts")).toBe(false)
    expect(WriteScope.covers(scope, "src/apix")).toBe(false)
    expect(WriteScope.covers(scope, "src")).toBe(false)
    expect(WriteScope.covers(scope, "docs/readme.md.bak")).toBe(false)
    expect(WriteScope.covers(scope, "docs/readme.md/x")).toBe(true) // below an exact path: still inside it
    expect(WriteScope.covers(scope, "/src/api/x.ts")).toBe(false)
    expect(WriteScope.covers(scope, "src/api/../secrets.ts")).toBe(false)
    expect(WriteScope.covers(scope, "../src/api/x.ts")).toBe(false)
    expect(WriteScope.covers(scope, "")).toBe(false)
  })

  it("normalizes candidate paths before testing them", () => {
    expect(WriteScope.covers(scope, "./src//api/x.ts")).toBe(true)
    expect(WriteScope.covers(scope, "src\\api\\x.ts")).toBe(true)
    expect(WriteScope.covers(scope, "src/api/sub/../x.ts")).toBe(true)
  })

  it("violations lists the uncovered paths as given, once each, in order", () => {
    expect(WriteScope.violations(scope, ["src/api/a.ts", "src/api2/b.ts", "README.md", "src/api2/b.ts"])).toEqual([
      "src/api2/b.ts",
      "README.md"
    ])
    expect(WriteScope.violations(scope, ["src/api/a.ts"])).toEqual([])
    expect(WriteScope.violations(["/etc/passwd"])(scope)).toEqual(["/etc/passwd"])
  })

  it("isWithin compares coverage, not strings", () => {
    const declared = WriteScope.makeUnsafe(["src"])
    expect(WriteScope.isWithin(WriteScope.makeUnsafe(["src/api", "src/b.ts"]), declared)).toBe(true)
    expect(WriteScope.isWithin(declared, declared)).toBe(true)
    expect(WriteScope.isWithin(WriteScope.makeUnsafe(["src", "lib"]), declared)).toBe(false)
    expect(WriteScope.isWithin(WriteScope.makeUnsafe(["src2"]), declared)).toBe(false)
    expect(WriteScope.isWithin(declared, WriteScope.makeUnsafe(["src/api"]))).toBe(false)
  })
})
