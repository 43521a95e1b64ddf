/** The structural checks of a clean merge: a key or member now repeated, a file that no longer parses. */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { Grammars } from "../src/Grammars.ts"
import { checkMerged } from "../src/StructuredMerge.ts"
import type { Language } from "../src/Syntax.ts"
import { mergeText } from "../src/TextMerge.ts"

const enc = (s: string): Uint8Array => new TextEncoder().encode(s)
const dec = (b: Uint8Array): string => new TextDecoder("utf-8", { ignoreBOM: true }).decode(b)

/** The line merge, which must be clean: these are the merges the checks look at. */
const lineMerged = (base: string, ours: string, theirs: string): string => {
  const r = mergeText(enc(base), enc(ours), enc(theirs))
  if (r._tag !== "Merged") throw new Error(`expected a clean line merge, got ${r._tag}`)
  return dec(r.bytes)
}

const check = (language: Language, base: string, ours: string, theirs: string, merged = lineMerged(base, ours, theirs)) =>
  Effect.gen(function*() {
    const parser = yield* (yield* Grammars).parser(language)
    return checkMerged({ base, ours, theirs, merged, parser, expired: () => false })
  })

const run = <A, E>(effect: Effect.Effect<A, E, Grammars>) => effect.pipe(Effect.provide(Grammars.layer))

const lines = (...xs: ReadonlyArray<string>) => xs.map((x) => `${x}\n`).join("")

describe("checkMerged", () => {
  it.effect("both sides add the same JSON key at places far apart: the clean line merge repeats it, and the check says so with the key and its lines", () =>
    run(Effect.gen(function*() {
      const base = lines("{", "  \"name\": \"app\",", "  \"a\": 1,", "  \"b\": 2,", "  \"c\": 3,", "  \"d\": 4", "}")
      const ours = lines("{", "  \"name\": \"app\",", "  \"axios\": \"^1.7.4\",", "  \"a\": 1,", "  \"b\": 2,", "  \"c\": 3,", "  \"d\": 4", "}")
      const theirs = lines("{", "  \"name\": \"app\",", "  \"a\": 1,", "  \"b\": 2,", "  \"c\": 3,", "  \"d\": 4,", "  \"axios\": \"^1.7.4\"", "}")
      const merged = lineMerged(base, ours, theirs)
      expect(merged.split("axios").length - 1).toBe(2)
      const verdict = yield* check("json", base, ours, theirs, merged)
      expect(verdict).toEqual({
        _tag: "Broken",
        reason: "duplicate_member",
        detail: "the key \"axios\" appears twice in one object (lines 3 and 8), though neither side has it twice"
      })
    })))

  it.effect("a key one side already had twice is not the merge's doing", () =>
    run(Effect.gen(function*() {
      const base = lines("{", "  \"a\": 1,", "  \"b\": 2,", "  \"c\": 3,", "  \"d\": 4", "}")
      // Ours repeats "a" itself; theirs edits far away.
      const ours = lines("{", "  \"a\": 1,", "  \"a\": 1,", "  \"b\": 2,", "  \"c\": 3,", "  \"d\": 4", "}")
      const theirs = lines("{", "  \"a\": 1,", "  \"b\": 2,", "  \"c\": 3,", "  \"d\": 40", "}")
      expect(yield* check("json", base, ours, theirs)).toEqual({ _tag: "Sound" })
    })))

  it.effect("nested JSON objects are checked each on its own: one key in two objects is no repeat", () =>
    run(Effect.gen(function*() {
      const base = lines("{", "  \"x\": {", "    \"k\": 1", "  },", "  \"m\": 0,", "  \"y\": {", "    \"j\": 1", "  }", "}")
      const ours = lines("{", "  \"x\": {", "    \"k\": 1,", "    \"new\": 1", "  },", "  \"m\": 0,", "  \"y\": {", "    \"j\": 1", "  }", "}")
      const theirs = lines("{", "  \"x\": {", "    \"k\": 1", "  },", "  \"m\": 0,", "  \"y\": {", "    \"j\": 1,", "    \"new\": 2", "  }", "}")
      expect(yield* check("json", base, ours, theirs)).toEqual({ _tag: "Sound" })
    })))

  it.effect("a TypeScript class with a method added by both sides at different places is broken; overloads, a getter with its setter and static twins are not", () =>
    run(Effect.gen(function*() {
      const base = lines("export class A {", "  one(): number {", "    return 1", "  }", "", "  two(): number {", "    return 2", "  }", "", "  three(): number {", "    return 3", "  }", "}")
      const ours = lines("export class A {", "  size(): number {", "    return 0", "  }", "", "  one(): number {", "    return 1", "  }", "", "  two(): number {", "    return 2", "  }", "", "  three(): number {", "    return 3", "  }", "}")
      const theirs = lines("export class A {", "  one(): number {", "    return 1", "  }", "", "  two(): number {", "    return 2", "  }", "", "  three(): number {", "    return 3", "  }", "", "  size(): number {", "    return 0", "  }", "}")
      const verdict = yield* check("typescript", base, ours, theirs)
      expect(verdict._tag === "Broken" && verdict.reason).toBe("duplicate_member")
      expect(verdict._tag === "Broken" && verdict.detail).toContain("size")
      expect(verdict._tag === "Broken" && verdict.detail).toContain("class body (lines 2 and 18)")

      const legit = lines(
        "export class B {",
        "  f(a: string): void",
        "  f(a: number): void",
        "  f(a: unknown): void {}",
        "  get v(): number { return 1 }",
        "  set v(x: number) {}",
        "  static w = 1",
        "  w = 2",
        "}"
      )
      const withMore = legit.replace("  w = 2\n", "  w = 2\n  z = 3\n")
      const withOther = legit.replace("export class B {\n", "export class B {\n  y = 0\n")
      expect(yield* check("typescript", legit, withMore, withOther)).toEqual({ _tag: "Sound" })
    })))

  it.effect("interfaces, enums, object literals (JavaScript) and Python dicts and class bodies are checked", () =>
    run(Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [Language, string, string, string, string]> = [
        ["typescript", lines("interface I {", "  a: string", "  b: string", "  c: string", "  d: string", "}"), "  a: string\n", "  d: string\n", "  e?: number\n"],
        ["typescript", lines("enum E {", "  A,", "  B,", "  C,", "  D,", "}"), "  A,\n", "  D,\n", "  F,\n"],
        ["javascript", lines("const o = {", "  a: 1,", "  b: 2,", "  c: 3,", "  d: 4,", "}"), "  a: 1,\n", "  d: 4,\n", "  e: 5,\n"],
        ["python", lines("D = {", "    \"a\": 1,", "    \"b\": 2,", "    \"c\": 3,", "    \"d\": 4,", "}"), "    \"a\": 1,\n", "    \"d\": 4,\n", "    'e': 5,\n"],
        ["python", lines("class K:", "    def a(self):", "        pass", "", "    def b(self):", "        pass", "", "    def c(self):", "        pass"), "    def a(self):\n        pass\n", "    def c(self):\n        pass\n", "    def e(self):\n        pass\n\n"]
      ]
      for (const [language, base, first, last, added] of cases) {
        // Ours adds before the first element, theirs after the last: far apart, so the line merge is clean.
        const ours = base.replace(first, added + first)
        const theirs = base.replace(last, last + (language === "python" && added.startsWith("    def") ? `\n${added.trimEnd()}\n` : added))
        const verdict = yield* check(language, base, ours, theirs)
        expect(verdict._tag === "Broken" && verdict.reason, `${language}: ${base}`).toBe("duplicate_member")
      }
    })))

  it.effect("a merge that no longer parses although base, ours and theirs do is syntax_broken; when an input does not parse either, the check says nothing", () =>
    run(Effect.gen(function*() {
      const base = lines("[", "  1,", "  2,", "  3", "]")
      const ours = lines("[", "  1,", "  2", "]")
      const theirs = lines("[", "  0,", "  1,", "  2,", "  3", "]")
      const broken = lines("[", "  0,", "  1,", "  2", "  4", "]")
      const verdict = yield* check("json", base, ours, theirs, broken)
      expect(verdict).toEqual({
        _tag: "Broken",
        reason: "syntax_broken",
        detail: expect.stringContaining("the merged file no longer parses")
      })
      expect(yield* check("json", base, ours, lines("[", "  1,,"), broken)).toEqual({ _tag: "Sound" })
    })))

  it.effect("a merge with a byte order mark is checked like one without, and a spent budget says nothing", () =>
    run(Effect.gen(function*() {
      const base = "\uFEFF" + lines("{", "  \"a\": 1,", "  \"b\": 2,", "  \"c\": 3,", "  \"d\": 4", "}")
      const ours = base.replace("{\n", "{\n  \"z\": 0,\n")
      const theirs = base.replace("  \"d\": 4\n", "  \"d\": 4,\n  \"z\": 0\n")
      const verdict = yield* check("json", base, ours, theirs)
      expect(verdict._tag === "Broken" && verdict.detail).toContain("(lines 2 and 7)")
      const parser = yield* (yield* Grammars).parser("json")
      expect(checkMerged({ base, ours, theirs, merged: lineMerged(base, ours, theirs), parser, expired: () => true })).toEqual({ _tag: "Sound" })
    })))

  it.effect("a repeated key of any length is named in a detail of bounded length", () =>
    run(Effect.gen(function*() {
      const key = `"${"k".repeat(10_000)}"`
      const base = lines("{", "  \"a\": 1,", "  \"b\": 2,", "  \"c\": 3,", "  \"d\": 4", "}")
      const ours = base.replace("{\n", `{\n  ${key}: 0,\n`)
      const theirs = base.replace("  \"d\": 4\n", `  "d": 4,\n  ${key}: 0\n`)
      const verdict = yield* check("json", base, ours, theirs)
      expect(verdict._tag === "Broken" && verdict.detail.length).toBeLessThan(200)
      expect(verdict._tag === "Broken" && verdict.detail).toContain(`the key "${"k".repeat(60)}`)
    })))
})
