/**
 * Incremental parsing: a parse given a previous tree gives the same tree as a full parse, on
 * random line edits (non-ASCII text, texts with and without a final newline), and the edits the
 * parser derives describe the change exactly, in UTF-16 code units as web-tree-sitter counts.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fc from "fast-check"
import { createRequire } from "node:module"
import type * as TreeSitter from "web-tree-sitter"
import { Grammars } from "../src/Grammars.ts"
import { editsBetween } from "../src/internal/edits.ts"
import type { Language, SyntaxNode, SyntaxParser, SyntaxTree } from "../src/Syntax.ts"

const pool: Record<"typescript" | "python", ReadonlyArray<string>> = {
  typescript: [
    "import { a } from \"./a.ts\"",
    "const x = 1",
    "let s = \"é😀\"; let t = 2",
    "class A {",
    "  m(): void {}",
    "  k = `t${x}`",
    "}",
    "// ünïcode 😀 comment",
    "function f(a: number) {",
    "  return a + 1",
    "}",
    "if (x) {",
    "} else {",
    "export type U = | { a: 1 } | { b: 2 }",
    "  x: number",
    "const o = { a: 1, b: [1, 2,"
  ],
  python: [
    "import os",
    "class A:",
    "    def f(self):",
    "        return \"é😀\"",
    "x = {\"a\": 1,",
    "  \"b\": 2}",
    "# ünïcode 😀",
    "def g(a, b):",
    "    pass",
    "if x:",
    "else:"
  ]
}

const textOf = (lines: ReadonlyArray<string>, finalNewline: boolean, crlf: boolean): string =>
  lines.join(crlf ? "\r\n" : "\n") + (finalNewline && lines.length > 0 ? crlf ? "\r\n" : "\n" : "")

/** Random splices of lines: delete a run, insert lines, replace a run. */
const edited = (language: "typescript" | "python") =>
  fc.record({
    base: fc.array(fc.constantFrom(...pool[language]), { maxLength: 30 }),
    edits: fc.array(
      fc.record({
        at: fc.nat(),
        remove: fc.nat({ max: 4 }),
        insert: fc.array(fc.constantFrom(...pool[language], "", "x"), { maxLength: 4 })
      }),
      { maxLength: 5 }
    ),
    finalNewline: fc.tuple(fc.boolean(), fc.boolean()),
    crlf: fc.boolean(),
    // An edit inside a line too: a character of the last line changed.
    tail: fc.constantFrom("", "é", "😀", "1")
  }).map(({ base, crlf, edits, finalNewline, tail }) => {
    const lines = [...base]
    for (const e of edits) lines.splice(e.at % (lines.length + 1), e.remove, ...e.insert)
    if (lines.length > 0) lines[lines.length - 1] += tail
    return { before: textOf(base, finalNewline[0], crlf), after: textOf(lines, finalNewline[1], crlf) }
  })

type Shape = [string, number, number, boolean, ReadonlyArray<Shape>]
const shapeOf = (node: SyntaxNode): Shape => [node.type, node.startIndex, node.endIndex, node.hasError, node.children.map(shapeOf)]

const run = <A, E>(effect: Effect.Effect<A, E, Grammars>) => effect.pipe(Effect.provide(Grammars.layer))

const parsed = (parser: SyntaxParser, text: string, previous?: SyntaxTree): SyntaxTree => {
  const tree = parser.parse(text, undefined, previous)
  if (tree === undefined) throw new Error("the parse was cancelled")
  return tree
}

/** Row and column (UTF-16 code units) of an offset. */
const pointAt = (text: string, index: number) => {
  const before = text.slice(0, index)
  const row = before.split("\n").length - 1
  return { row, column: index - (before.lastIndexOf("\n") + 1) }
}

describe("incremental parsing", () => {
  it("the derived edits, applied in order, turn the old text into the new one, with exact rows and columns", () =>
    fc.assert(
      fc.property(edited("typescript"), ({ after, before }) => {
        let text = before
        for (const e of editsBetween(before, after)) {
          expect(e.startPosition).toEqual(pointAt(text, e.startIndex))
          expect(e.oldEndPosition).toEqual(pointAt(text, e.oldEndIndex))
          text = text.slice(0, e.startIndex) + after.slice(e.startIndex, e.newEndIndex) + text.slice(e.oldEndIndex)
          expect(e.newEndPosition).toEqual(pointAt(text, e.newEndIndex))
        }
        expect(text).toBe(after)
      }),
      { numRuns: 300 }
    ))

  it.effect("web-tree-sitter counts indices and columns in UTF-16 code units for a string", () =>
    run(Effect.gen(function*() {
      // The runtime is initialised by loading a grammar through the service.
      yield* (yield* Grammars).parser("typescript")
      const ts = createRequire(import.meta.url)("web-tree-sitter") as typeof TreeSitter
      const path = createRequire(import.meta.url).resolve("tree-sitter-typescript/tree-sitter-typescript.wasm")
      const language = yield* Effect.promise(() => ts.Language.load(path))
      const parser = new ts.Parser()
      parser.setLanguage(language)
      const text = "const s = \"é😀\"; let t = 1"
      const tree = parser.parse(text)!
      const declaration = tree.rootNode.namedChildren.find((n) => n?.type === "lexical_declaration" && n.startIndex > 0)!
      expect(declaration.startIndex).toBe(text.indexOf("let"))
      expect(declaration.startPosition).toEqual({ row: 0, column: text.indexOf("let") })
      tree.delete()
      parser.delete()
    })))

  for (const language of ["typescript", "python"] as const satisfies ReadonlyArray<Language>) {
    it.effect(`${language}: a parse from the previous tree gives the same tree as a full parse, and leaves the previous tree as it was`, () =>
      run(Effect.gen(function*() {
        const parser = yield* (yield* Grammars).parser(language)
        fc.assert(
          fc.property(edited(language), ({ after, before }) => {
            const old = parsed(parser, before)
            const oldShape = shapeOf(old.root)
            const full = parsed(parser, after)
            const incremental = parsed(parser, after, old)
            // And once more from the incremental tree back to the old text.
            const back = parsed(parser, before, incremental)
            expect(shapeOf(incremental.root)).toEqual(shapeOf(full.root))
            expect(shapeOf(back.root)).toEqual(oldShape)
            expect(shapeOf(old.root)).toEqual(oldShape)
            for (const t of [old, full, incremental, back]) t.dispose()
          }),
          { numRuns: 150 }
        )
      })))
  }

  it.effect("an edit that leaves errors (unclosed blocks) gives the full parse's tree, not one shaped by the reused nodes", () =>
    run(Effect.gen(function*() {
      const parser = yield* (yield* Grammars).parser("typescript")
      const before = "import { a } from \"./a.ts\"\n"
      const after = "function f(a: number) {\nfunction f(a: number) {\nimport { a } from \"./a.ts\"\n"
      const old = parsed(parser, before)
      const incremental = parsed(parser, after, old)
      const full = parsed(parser, after)
      expect(incremental.root.hasError).toBe(true)
      expect(shapeOf(incremental.root)).toEqual(shapeOf(full.root))
      for (const t of [old, full, incremental]) t.dispose()
    })))

  it.effect("a previous tree of another parser's language, or one already disposed, is ignored: a full parse", () =>
    run(Effect.gen(function*() {
      const grammars = yield* Grammars
      const python = yield* grammars.parser("python")
      const typescript = yield* grammars.parser("typescript")
      const old = parsed(python, "x = 1\n")
      const tree = parsed(typescript, "const x = 1\n", old)
      expect(tree.root.type).toBe("program")
      expect(tree.root.hasError).toBe(false)
      old.dispose()
      // A disposed previous tree is not read either.
      const gone = parsed(typescript, "let y = 2\n", tree)
      tree.dispose()
      const again = parsed(typescript, "const x = 1\nlet y = 2\n", tree)
      expect(shapeOf(again.root)).toEqual(shapeOf(parsed(typescript, "const x = 1\nlet y = 2\n").root))
      gone.dispose()
      again.dispose()
    })))
})
