/**
 * `mergeFile` with a parser: which merges go to the syntax-aware merge and the structural
 * checks, what each result says about how it was made, and that bytes keep the file's BOM
 * and line endings. Real grammars (the packaged .wasm files).
 */
import { type FileMergeOutcome, mergeFile, type SyntaxContext } from "@forkjoin/merge/FileMerge"
import { Grammars } from "@forkjoin/merge/Grammars"
import type { Language, SyntaxParser } from "@forkjoin/merge/Syntax"
import * as Effect from "effect/Effect"
import { beforeAll, describe, expect, it } from "vitest"

const enc = (s: string): Uint8Array => new TextEncoder().encode(s)
const dec = (b: Uint8Array): string => new TextDecoder("utf-8", { ignoreBOM: true }).decode(b)

const parsers = new Map<Language, SyntaxParser>()
beforeAll(async () => {
  for (const language of ["json", "typescript"] as const) {
    parsers.set(language, await Effect.runPromise(Effect.flatMap(Grammars, (g) => g.parser(language)).pipe(Effect.provide(Grammars.layer))))
  }
})

const syntax = (language: Language, expired: () => boolean = () => false): SyntaxContext => ({ parser: parsers.get(language)!, expired })

const sides = (base: string, ours: string, theirs: string) => ({ base: enc(base), ours: enc(ours), theirs: enc(theirs) })

const autoMerged = (r: FileMergeOutcome) => {
  if (r._tag !== "AutoMerged") throw new Error(`expected AutoMerged, got ${r._tag}${r._tag === "Conflict" ? `: ${r.text}` : ""}`)
  return r
}
const conflictOf = (r: FileMergeOutcome) => {
  if (r._tag !== "Conflict") throw new Error(`expected Conflict, got ${r._tag}`)
  return r
}

// Both sides add a key at places far apart: the line merge is clean and names "k" twice.
const jsonBase = "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3,\n  \"d\": 4,\n  \"e\": 5\n}\n"
const jsonOurs = "{\n  \"a\": 1,\n  \"k\": 11,\n  \"b\": 2,\n  \"c\": 3,\n  \"d\": 4,\n  \"e\": 5\n}\n"
const jsonTheirs = (value: number) => `{\n  "a": 1,\n  "b": 2,\n  "c": 3,\n  "d": 4,\n  "k": ${value},\n  "e": 5\n}\n`

// Both sides add an import at the same place: the line merge conflicts.
const tsBase = "import { a } from \"./a\"\n\nexport const x = a\n"
const tsOurs = "import { a } from \"./a\"\nimport { b } from \"./b\"\n\nexport const x = a\n"
const tsTheirs = "import { a } from \"./a\"\nimport { c } from \"./c\"\n\nexport const x = a\n"

describe("mergeFile without a parser merges by lines, as before", () => {
  it("the duplicated key stays a clean line merge and the import conflict a line conflict", () => {
    expect(autoMerged(mergeFile(sides(jsonBase, jsonOurs, jsonTheirs(11))))).toEqual({
      _tag: "AutoMerged",
      bytes: expect.any(Uint8Array),
      method: "line"
    })
    expect(conflictOf(mergeFile(sides(tsBase, tsOurs, tsTheirs))).reason).toBe("overlapping_edits")
  })
})

describe("mergeFile: a clean line merge must pass the structural checks", () => {
  it("a clean merge that passes keeps the line result", () => {
    const base = "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3,\n  \"d\": 4\n}\n"
    const ours = "{\n  \"a\": 10,\n  \"b\": 2,\n  \"c\": 3,\n  \"d\": 4\n}\n"
    const theirs = "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3,\n  \"d\": 40\n}\n"
    const line = autoMerged(mergeFile(sides(base, ours, theirs)))
    expect(mergeFile(sides(base, ours, theirs), undefined, { syntax: syntax("json") })).toEqual(line)
  })

  it("the same key added on both sides with the same value: never a clean merge naming it twice", () => {
    const r = mergeFile(sides(jsonBase, jsonOurs, jsonTheirs(11)), undefined, { syntax: syntax("json") })
    if (r._tag === "AutoMerged") {
      // Merged by syntax: the key once.
      expect(r).toMatchObject({ method: "structured", language: "json" })
      expect(JSON.parse(dec(r.bytes))).toEqual({ a: 1, k: 11, b: 2, c: 3, d: 4, e: 5 })
      expect(dec(r.bytes).split("\"k\"").length - 1).toBe(1)
    } else expect(conflictOf(r).reason).toBe("duplicate_member")
  })

  it("the same key added with different values: held as duplicate_member, explained on one line", () => {
    const c = conflictOf(mergeFile(sides(jsonBase, jsonOurs, jsonTheirs(12)), undefined, { syntax: syntax("json") }))
    expect(c.reason).toBe("duplicate_member")
    expect(c.hunks).toEqual([])
    expect(c.text).not.toContain("\n")
    expect(c.text).toMatch(/twice/)
    expect(c.text).toMatch(/apply.*discard/)
  })
})

describe("mergeFile: the checks of a clean merge do not depend on the time budget", () => {
  it("with the budget spent, a clean line merge naming a key twice is still held, never accepted", () => {
    const c = conflictOf(mergeFile(sides(jsonBase, jsonOurs, jsonTheirs(12)), undefined, { syntax: syntax("json", () => true) }))
    expect(c.reason).toBe("duplicate_member")
  })

  it("with the budget spent, a clean line merge that passes the checks stays the line result", () => {
    const base = "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3,\n  \"d\": 4\n}\n"
    const ours = "{\n  \"a\": 10,\n  \"b\": 2,\n  \"c\": 3,\n  \"d\": 4\n}\n"
    const theirs = "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3,\n  \"d\": 40\n}\n"
    expect(mergeFile(sides(base, ours, theirs), undefined, { syntax: syntax("json", () => true) })).toEqual(mergeFile(sides(base, ours, theirs)))
  })
})

describe("mergeFile: a line conflict goes to the syntax-aware merge", () => {
  it("two imports added at one place merge by syntax tree", () => {
    const r = autoMerged(mergeFile(sides(tsBase, tsOurs, tsTheirs), undefined, { syntax: syntax("typescript") }))
    expect(r).toMatchObject({ method: "structured", language: "typescript" })
    const text = dec(r.bytes)
    expect(text).toContain("import { b } from \"./b\"\n")
    expect(text).toContain("import { c } from \"./c\"\n")
    expect(text).toContain("export const x = a\n")
  })

  it("the result keeps the file's byte order mark and CRLF line endings", () => {
    const crlf = (s: string) => "\uFEFF" + s.replaceAll("\n", "\r\n")
    const r = autoMerged(mergeFile(sides(crlf(tsBase), crlf(tsOurs), crlf(tsTheirs)), undefined, { syntax: syntax("typescript") }))
    expect(r.method).toBe("structured")
    expect([...r.bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf])
    const text = dec(r.bytes.subarray(3))
    expect(text.replaceAll("\r\n", "")).not.toContain("\n")
    expect(text).toContain("import { c } from \"./c\"\r\n")
  })

  it("an element changed two ways stays a conflict with the line merge's hunks and markers", () => {
    const base = "export const x = 1\n"
    const ours = "export const x = 2\n"
    const theirs = "export const x = 3\n"
    const line = conflictOf(mergeFile(sides(base, ours, theirs)))
    expect(mergeFile(sides(base, ours, theirs), undefined, { syntax: syntax("typescript") })).toEqual(line)
  })

  it("a spent budget falls back to the line merge", () => {
    const line = conflictOf(mergeFile(sides(tsBase, tsOurs, tsTheirs)))
    expect(mergeFile(sides(tsBase, tsOurs, tsTheirs), undefined, { syntax: syntax("typescript", () => true) })).toEqual(line)
  })

  it("a parser that throws falls back to the line merge, never a crash", () => {
    const broken: SyntaxContext = {
      parser: {
        language: "typescript",
        parse: () => {
          throw new Error("out of memory")
        }
      },
      expired: () => false
    }
    expect(mergeFile(sides(tsBase, tsOurs, tsTheirs), undefined, { syntax: broken })).toEqual(conflictOf(mergeFile(sides(tsBase, tsOurs, tsTheirs))))
    expect(mergeFile(sides(jsonBase, jsonOurs, jsonTheirs(11)), undefined, { syntax: broken })).toMatchObject({ _tag: "AutoMerged", method: "line" })
  })
})
