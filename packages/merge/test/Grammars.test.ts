import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { GrammarError, Grammars } from "../src/Grammars.ts"
import { type Language, languageOfPath, type SyntaxNode } from "../src/Syntax.ts"

const samples: Record<Language, { readonly good: string; readonly bad: string; readonly root: string }> = {
  typescript: { good: "import { a } from \"b\"\nclass A<T> { x: T; f(): void {} }\n", bad: "class A { f( {\n", root: "program" },
  tsx: { good: "const e = <div id=\"x\">{a}</div>\n", bad: "const e = <div>\n", root: "program" },
  javascript: { good: "import a from 'b'\nconst e = <A />\n", bad: "function (\n", root: "program" },
  python: { good: "import os\nclass A:\n    def f(self):\n        return 1\n", bad: "def f(:\n", root: "module" },
  json: { good: "{\"a\": [1, {\"b\": null}]}\n", bad: "{\"a\": }\n", root: "document" }
}

const languages = Object.keys(samples) as ReadonlyArray<Language>

const typesOf = (node: SyntaxNode): Array<string> => [node.type, ...node.children.flatMap(typesOf)]

describe("Grammars", () => {
  it.effect("loads nothing until a parser is asked for, then only that grammar", () =>
    Effect.gen(function*() {
      const grammars = yield* Grammars
      expect(yield* grammars.loaded).toEqual([])
      yield* grammars.parser("json")
      yield* grammars.parser("json")
      expect(yield* grammars.loaded).toEqual(["json"])
    }).pipe(Effect.provide(Grammars.layer)))

  for (const language of languages) {
    it.effect(`parses ${language}, marking text that does not parse`, () =>
      Effect.gen(function*() {
        const parser = yield* (yield* Grammars).parser(language)
        const good = parser.parse(samples[language].good)
        const bad = parser.parse(samples[language].bad)
        expect(good?.root.type).toBe(samples[language].root)
        expect(good?.root.hasError).toBe(false)
        expect(good?.root.endIndex).toBe(samples[language].good.length)
        expect(bad?.root.hasError).toBe(true)
        good?.dispose()
        bad?.dispose()
      }).pipe(Effect.provide(Grammars.layer)))
  }

  it.effect("offsets are UTF-16 code units of the parsed string", () =>
    Effect.gen(function*() {
      const parser = yield* (yield* Grammars).parser("json")
      const text = "{\"é😀\": 1, \"b\": 2}"
      const tree = parser.parse(text)
      const pairs = tree?.root.children[0]?.children.filter((c) => c.type === "pair") ?? []
      expect(pairs.map((p) => text.slice(p.startIndex, p.endIndex))).toEqual(["\"é😀\": 1", "\"b\": 2"])
      expect(tree?.root.children[0]?.fieldNameForChild(0)).toBeNull()
      expect(typesOf(pairs[1]!)).toContain("number")
      tree?.dispose()
    }).pipe(Effect.provide(Grammars.layer)))

  it.effect("a parse whose budget expires gives no tree, and the parser still works after", () =>
    Effect.gen(function*() {
      const parser = yield* (yield* Grammars).parser("json")
      const big = `[${Array.from({ length: 50_000 }, (_, i) => `{"k${i}": ${i}}`).join(",\n")}]`
      let asked = 0
      expect(parser.parse(big, () => ++asked > 0)).toBeUndefined()
      expect(asked).toBeGreaterThan(0)
      const tree = parser.parse("[1]")
      expect(tree?.root.hasError).toBe(false)
      expect(tree?.root.endIndex).toBe(3)
      tree?.dispose()
    }).pipe(Effect.provide(Grammars.layer)))

  it.effect("a missing or damaged grammar file is a GrammarError naming the grammar, and is asked again next time", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-grammar-"))
    const damaged = path.join(dir, "python.wasm")
    fs.writeFileSync(damaged, "not a grammar")
    let asked = 0
    const locate = (language: Language) => {
      asked++
      return language === "python" ? damaged : path.join(dir, "absent.wasm")
    }
    return Effect.gen(function*() {
      const grammars = yield* Grammars
      for (const language of ["python", "json"] as const) {
        const error = yield* Effect.flip(grammars.parser(language))
        expect(error).toBeInstanceOf(GrammarError)
        expect(error.language).toBe(language)
        expect(error.message).toContain(`the ${language} grammar could not be loaded`)
      }
      yield* Effect.flip(grammars.parser("json"))
      expect(asked).toBe(3)
      expect(yield* grammars.loaded).toEqual([])
    }).pipe(
      Effect.provide(Grammars.layerFrom(locate)),
      Effect.ensuring(Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
    )
  })

  it.effect("the layer without grammars refuses every language", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip((yield* Grammars).parser("typescript"))
      expect(error.language).toBe("typescript")
    }).pipe(Effect.provide(Grammars.none)))
})

describe("languageOfPath", () => {
  it("maps extensions case-insensitively and knows no others", () => {
    expect(languageOfPath("src/a.ts")).toBe("typescript")
    expect(languageOfPath("types/x.d.ts")).toBe("typescript")
    expect(languageOfPath("App.TSX")).toBe("tsx")
    expect(languageOfPath("lib/a.cjs")).toBe("javascript")
    expect(languageOfPath("setup.py")).toBe("python")
    expect(languageOfPath("package.json")).toBe("json")
    expect(languageOfPath("README.md")).toBeUndefined()
    expect(languageOfPath(".ts")).toBeUndefined()
    expect(languageOfPath("dir.ts/Makefile")).toBeUndefined()
  })
})
