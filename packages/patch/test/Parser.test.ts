import { describe, expect, it } from "vitest"
import * as Result from "effect/Result"
import { parsePatch } from "../src/index.ts"
import { patchOf } from "./helpers.ts"

const parseErr = (text: string, profile: "codex" | "native" = "codex") => {
  const r = parsePatch(text, { profile })
  if (Result.isSuccess(r)) throw new Error("expected a parse error")
  return r.failure
}
const parseOk = (text: string, profile: "codex" | "native" = "codex") => {
  const r = parsePatch(text, { profile })
  if (Result.isFailure(r)) throw new Error(r.failure.message)
  return r.success
}

describe("parsePatch", () => {
  it("parses the three operations, a move and EOF-anchored chunks", () => {
    const p = parseOk(patchOf(
      "*** Add File: a.txt",
      "+hello",
      "+",
      "*** Delete File: b.txt",
      "*** Update File: c.txt",
      "*** Move to: d/c.txt",
      "@@ def f():",
      " ctx",
      "-old",
      "+new",
      "*** End of File"
    ))
    expect(p.operations).toEqual([
      { _tag: "AddFile", path: "a.txt", contents: "hello\n\n", line: 2 },
      { _tag: "DeleteFile", path: "b.txt", line: 5 },
      {
        _tag: "UpdateFile",
        path: "c.txt",
        moveTo: "d/c.txt",
        line: 6,
        chunks: [{
          contexts: ["def f():"],
          endOfFile: true,
          line: 8,
          lines: [{ op: " ", text: "ctx" }, { op: "-", text: "old" }, { op: "+", text: "new" }]
        }]
      }
    ])
  })

  it("accepts CRLF patch text, padded markers and padded hunk headers", () => {
    const p = parseOk(" *** Begin Patch \r\n  *** Update File: f.txt  \r\n@@\r\n-a\r\n+b\r\n *** End Patch \r\n")
    expect(p.operations[0]).toMatchObject({ _tag: "UpdateFile", path: "f.txt" })
    const chunk = (p.operations[0] as { chunks: ReadonlyArray<{ lines: unknown }> }).chunks[0]
    expect(chunk?.lines).toEqual([{ op: "-", text: "a" }, { op: "+", text: "b" }])
  })

  it("drops a literal heredoc wrapper (all three quote styles)", () => {
    for (const opener of ["<<EOF", "<<'EOF'", "<<\"EOF\""]) {
      const p = parseOk([opener, "*** Begin Patch", "*** Delete File: x", "*** End Patch", "EOF"].join("\n"))
      expect(p.operations).toEqual([{ _tag: "DeleteFile", path: "x", line: 2 }])
    }
    expect(parseErr(["<<\"EOF'", "*** Begin Patch", "*** Delete File: x", "*** End Patch", "EOF"].join("\n")).message)
      .toBe("Invalid patch: The first line of the patch must be '*** Begin Patch'")
  })

  it("reports upstream messages with 1-based line numbers", () => {
    const cases: ReadonlyArray<readonly [string, string, number | undefined]> = [
      ["nothing", "Invalid patch: The first line of the patch must be '*** Begin Patch'", undefined],
      ["*** Begin Patch\n*** Delete File: x", "Invalid patch: The last line of the patch must be '*** End Patch'", undefined],
      [patchOf("*** Frobnicate File: foo"), "Invalid patch hunk on line 2: '*** Frobnicate File: foo' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'", 2],
      [patchOf("*** Update File: foo.txt"), "Invalid patch hunk on line 2: Update file hunk for path 'foo.txt' is empty", 2],
      [patchOf("*** Update File: f", "@@"), "Invalid patch hunk on line 4: Update hunk does not contain any lines", 4],
      [patchOf("*** Update File: f", "@@", "*** End of File"), "Invalid patch hunk on line 4: Update hunk does not contain any lines", 4],
      [patchOf("*** Update File: f", "@@", "x"), "Invalid patch hunk on line 4: Unexpected line found in update hunk: 'x'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)", 4],
      [patchOf("*** Update File: f", "-a", "+b", "x"), "Invalid patch hunk on line 5: Expected update hunk to start with a @@ context marker, got: 'x'", 5],
      [patchOf("*** Add File: a", "+x", "", "*** Delete File: b"), "Invalid patch hunk on line 4: '' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'", 4]
    ]
    for (const [text, message, line] of cases) {
      const e = parseErr(text)
      expect(e.code).toBe("patch_syntax")
      expect(e.stage).toBe(2)
      expect(e.message).toBe(message)
      expect(e.line).toBe(line)
    }
  })

  it("treats an empty line in a chunk as empty context and skips blank lines between chunks", () => {
    const p = parseOk(patchOf("*** Update File: f", "  ", "@@", " a", "", "-b", "*** End of File", "\t", "@@", "-c"))
    const op = p.operations[0] as { chunks: ReadonlyArray<{ lines: ReadonlyArray<unknown>; line: number }> }
    expect(op.chunks.length).toBe(2)
    expect(op.chunks[0]?.lines).toEqual([{ op: " ", text: "a" }, { op: " ", text: "" }, { op: "-", text: "b" }])
    expect(op.chunks[1]?.line).toBe(10)
  })

  it("trims like Rust: U+0085 is whitespace, U+FEFF is not", () => {
    expect(parseOk(`\u0085${patchOf("*** Delete File: x")}\u0085`).operations.length).toBe(1)
    expect(parseErr(`\uFEFF${patchOf("*** Delete File: x")}`).message).toContain("first line")
  })

  it("keeps a move path's trailing spaces (matched untrimmed, like upstream)", () => {
    const p = parseOk(patchOf("*** Update File: a", "*** Move to: b ", "@@", "-x"))
    expect(p.operations[0]).toMatchObject({ moveTo: "b " })
  })

  it("stacked @@ headers: codex rejects them, native seeks them in order", () => {
    const text = patchOf("*** Update File: f", "@@ class A", "@@ def m():", "-x", "+y")
    expect(parseErr(text, "codex").message).toContain("Unexpected line found in update hunk: '@@ def m():'")
    const p = parseOk(text, "native")
    expect(p.operations[0]).toMatchObject({ chunks: [{ contexts: ["class A", "def m():"] }] })
  })

  it("parses a begin/end-only patch into zero operations", () => {
    expect(parseOk(patchOf()).operations).toEqual([])
  })
})
