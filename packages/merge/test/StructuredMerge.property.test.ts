/**
 * Properties of the syntax-aware merge over generated edits of a JSON object and of a
 * TypeScript class and of a Python dict: disjoint edits merge and commute, a side merged with itself or with an
 * unchanged side is that side, and no accepted result contains an error node.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fc from "fast-check"
import { Grammars } from "../src/Grammars.ts"
import { mergeStructured } from "../src/StructuredMerge.ts"
import type { SyntaxParser } from "../src/Syntax.ts"
import { defaultLabels } from "../src/TextMerge.ts"

type Fate = "keep" | "change" | "delete"

interface Side {
  /** Per base element: what this side does with it. */
  readonly fates: ReadonlyArray<Fate>
  /** Elements added after base element `at - 1` (0: before the first). */
  readonly added: ReadonlyArray<{ readonly at: number; readonly name: string }>
}

interface Case {
  readonly n: number
  readonly ours: Side
  readonly theirs: Side
}

/** Edits of `n` elements where a base element is touched by one side at most (disjoint). */
const disjoint = fc.integer({ min: 1, max: 12 }).chain((n) =>
  fc.record({
    n: fc.constant(n),
    owner: fc.array(fc.constantFrom<"none" | "ours" | "theirs">("none", "ours", "theirs"), { minLength: n, maxLength: n }),
    fates: fc.array(fc.constantFrom<Fate>("change", "delete"), { minLength: n, maxLength: n }),
    oursAdded: fc.uniqueArray(fc.integer({ min: 0, max: n }), { maxLength: 4 }),
    theirsAdded: fc.uniqueArray(fc.integer({ min: 0, max: n }), { maxLength: 4 })
  }).map(({ n, owner, fates, oursAdded, theirsAdded }): Case => ({
    n,
    ours: {
      fates: owner.map((o, i) => o === "ours" ? fates[i]! : "keep"),
      added: oursAdded.map((at, i) => ({ at, name: `o${i}` }))
    },
    theirs: {
      fates: owner.map((o, i) => o === "theirs" ? fates[i]! : "keep"),
      added: theirsAdded.map((at, i) => ({ at, name: `t${i}` }))
    }
  }))
)

/** Any edits at all, overlapping or not. */
const anyEdits = fc.integer({ min: 1, max: 10 }).chain((n) => {
  const side = fc.record({
    fates: fc.array(fc.constantFrom<Fate>("keep", "keep", "change", "delete"), { minLength: n, maxLength: n }),
    added: fc.array(fc.record({ at: fc.integer({ min: 0, max: n }), name: fc.constantFrom("x", "y", "z") }), { maxLength: 3 })
  })
  return fc.record({ n: fc.constant(n), ours: side, theirs: side })
})

const noEdits = (n: number): Side => ({ fates: Array.from({ length: n }, () => "keep" as const), added: [] })

/** A JSON object of entries `"name": value`, one per line. */
const json = (entries: ReadonlyArray<readonly [string, string]>): string =>
  entries.length === 0 ? "{}\n" : `{\n${entries.map(([k, v]) => `  "${k}": ${v}`).join(",\n")}\n}\n`

/** A TypeScript class of methods `name(): number { return value }`, a blank line between. */
const cls = (entries: ReadonlyArray<readonly [string, string]>): string =>
  `export class K {\n${entries.map(([k, v]) => `  ${k}(): number {\n    return ${v}\n  }\n`).join("\n")}}\n`

/** A Python dict literal, one entry a line, each with its trailing comma. */
const dict = (entries: ReadonlyArray<readonly [string, string]>): string =>
  `D = {\n${entries.map(([k, v]) => `    "${k}": ${v},\n`).join("")}}\n`

const elements = (n: number, side: Side, who: string): Array<readonly [string, string]> => {
  const out: Array<readonly [string, string]> = []
  for (let i = 0; i <= n; i++) {
    for (const a of side.added) if (a.at === i) out.push([`${a.name}`, `${who === "ours" ? 100 : 200}${i}`])
    if (i === n) break
    const fate = side.fates[i]!
    if (fate !== "delete") out.push([`k${i}`, fate === "change" ? `${who === "ours" ? 1 : 2}${i}` : `${i}`])
  }
  return out
}

const texts = (render: (e: ReadonlyArray<readonly [string, string]>) => string, c: Case) => ({
  base: render(elements(c.n, noEdits(c.n), "base")),
  ours: render(elements(c.n, c.ours, "ours")),
  theirs: render(elements(c.n, c.theirs, "theirs"))
})

/** The merged elements as a set: both sides' changes, deletions and additions. */
const expectedSet = (c: Case): Array<string> => {
  const set = new Set<string>()
  for (let i = 0; i < c.n; i++) {
    const o = c.ours.fates[i]!
    const t = c.theirs.fates[i]!
    if (o === "delete" || t === "delete") continue
    set.add(`k${i}=${o === "change" ? `1${i}` : t === "change" ? `2${i}` : `${i}`}`)
  }
  for (const a of c.ours.added) set.add(`${a.name}=100${a.at}`)
  for (const a of c.theirs.added) set.add(`${a.name}=200${a.at}`)
  return [...set].sort()
}

/**
 * Whether the two sides' edits meet at one place: both add at one place, or one adds right
 * before or after an element the other changes or deletes. Only there does the order of
 * the two sides' texts in the result depend on which side is ours.
 */
const meet = (c: Case): boolean => {
  const touches = (side: Side, other: Side) =>
    side.added.some((a) => other.added.some((b) => a.at === b.at) || other.fates[a.at] !== undefined && other.fates[a.at] !== "keep" || a.at > 0 && other.fates[a.at - 1] !== "keep")
  return touches(c.ours, c.theirs) || touches(c.theirs, c.ours)
}

const jsonSet = (text: string): Array<string> =>
  Object.entries(JSON.parse(text) as Record<string, number>).map(([k, v]) => `${k}=${v}`).sort()

const dictSet = (text: string): Array<string> =>
  [...text.matchAll(/ {4}"(\w+)": (\d+),?\n/g)].map((m) => `${m[1]}=${m[2]}`).sort()

const classSet = (text: string): Array<string> =>
  [...text.matchAll(/ {2}(\w+)\(\): number \{\n {4}return (\d+)\n/g)].map((m) => `${m[1]}=${m[2]}`).sort()

const merge = (parser: SyntaxParser, base: string, ours: string, theirs: string) =>
  mergeStructured({ base, ours, theirs, parser, labels: defaultLabels, expired: () => false })

const run = <A, E>(effect: Effect.Effect<A, E, Grammars>) => effect.pipe(Effect.provide(Grammars.layer))

const languages = [
  { language: "json" as const, render: json, set: jsonSet },
  { language: "typescript" as const, render: cls, set: classSet },
  { language: "python" as const, render: dict, set: dictSet }
]

describe("mergeStructured properties", () => {
  for (const { language, render, set } of languages) {
    it.effect(`${language}: disjoint edits merge to both sides' elements, and swapping ours and theirs gives the same elements (the same text when the sides' edits do not meet at one place)`, () =>
      run(Effect.gen(function*() {
        const parser = yield* (yield* Grammars).parser(language)
        fc.assert(
          fc.property(disjoint, (c) => {
            const { base, ours, theirs } = texts(render, c)
            const r = merge(parser, base, ours, theirs)
            const swapped = merge(parser, base, theirs, ours)
            expect(r._tag).toBe("Merged")
            expect(swapped._tag).toBe("Merged")
            if (r._tag !== "Merged" || swapped._tag !== "Merged") return
            expect(set(r.text)).toEqual(expectedSet(c))
            expect(set(swapped.text)).toEqual(set(r.text))
            if (!meet(c)) expect(swapped.text).toBe(r.text)
          }),
          { numRuns: 150 }
        )
      })))

    it.effect(`${language}: merging a side with itself is that side, and with an unchanged side the other side`, () =>
      run(Effect.gen(function*() {
        const parser = yield* (yield* Grammars).parser(language)
        fc.assert(
          fc.property(anyEdits, (c) => {
            const { base, ours } = texts(render, c)
            expect(merge(parser, base, ours, ours)).toEqual({ _tag: "Merged", text: ours })
            expect(merge(parser, base, base, ours)).toEqual({ _tag: "Merged", text: ours })
            expect(merge(parser, base, ours, base)).toEqual({ _tag: "Merged", text: ours })
          }),
          { numRuns: 100 }
        )
      })))

    it.effect(`${language}: no accepted result contains an error node, whatever the edits`, () =>
      run(Effect.gen(function*() {
        const parser = yield* (yield* Grammars).parser(language)
        fc.assert(
          fc.property(anyEdits, (c) => {
            const { base, ours, theirs } = texts(render, c)
            const r = merge(parser, base, ours, theirs)
            if (r._tag !== "Merged") return
            const tree = parser.parse(r.text)
            expect(tree?.root.hasError).toBe(false)
            tree?.dispose()
            // And nothing either side kept is lost.
            const merged = new Set(set(r.text))
            for (const side of [ours, theirs]) {
              for (const e of set(side)) {
                if (set(base).includes(e)) continue
                expect(merged.has(e) || [...merged].some((m) => m.split("=")[0] === e.split("=")[0])).toBe(true)
              }
            }
          }),
          { numRuns: 200 }
        )
      })))
  }
})

// ---- Elements wrapped, unwrapped and changed in place among insertions ----

/**
 * What one side does to one function: `wrap` exports it (TypeScript) or decorates it (Python),
 * or the reverse where base has it so; `first` changes its first statement; `cond` changes the
 * condition of its `if`; `guard` inserts a statement before the `if` and changes inside it. Two
 * different edits of one function touch different parts of it; `cond2` changes the condition
 * another way than `cond` (a conflict with it).
 */
type Edit = "wrap" | "first" | "cond" | "guard" | "cond2"

interface Body {
  readonly n: number
  /** Per function: exported or decorated in base. */
  readonly wrapped: ReadonlyArray<boolean>
  readonly ours: ReadonlyArray<ReadonlyArray<Edit>>
  readonly theirs: ReadonlyArray<ReadonlyArray<Edit>>
}

const compatible: ReadonlyArray<Edit> = ["wrap", "first", "cond", "guard"]

/** Per function, an edit on each side or none, never two that touch one part (equal edits converge). */
const disjointBodies = fc.integer({ min: 1, max: 6 }).chain((n) =>
  fc.record({
    n: fc.constant(n),
    wrapped: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
    pairs: fc.array(
      fc.tuple(fc.option(fc.constantFrom(...compatible), { nil: undefined }), fc.option(fc.constantFrom(...compatible), { nil: undefined })),
      { minLength: n, maxLength: n }
    )
  }).map(({ n, wrapped, pairs }): Body => ({
    n,
    wrapped,
    ours: pairs.map(([o]) => o === undefined ? [] : [o]),
    theirs: pairs.map(([, t]) => t === undefined ? [] : [t])
  }))
)

/** Any edits, overlapping or not: several per function and side, `cond2` against `cond`. */
const anyBodies = fc.integer({ min: 1, max: 5 }).chain((n) => {
  const edits = fc.array(fc.uniqueArray(fc.constantFrom<Edit>("wrap", "first", "cond", "guard", "cond2"), { maxLength: 3 }), { minLength: n, maxLength: n })
  return fc.record({ n: fc.constant(n), wrapped: fc.array(fc.boolean(), { minLength: n, maxLength: n }), ours: edits, theirs: edits })
})

const typescriptFunction = (i: number, wrapped: boolean, edits: ReadonlyArray<Edit>): string => {
  const has = (e: Edit) => edits.includes(e)
  const exported = wrapped !== has("wrap")
  const condition = has("cond") ? `a >= ${i}` : has("cond2") ? `a !== ${i}` : `a > ${i}`
  return [
    `${exported ? "export " : ""}function f${i}(x: number): number {`,
    `  const a = ${has("first") ? `x * ${i}` : `x + ${i}`}`,
    "  log(a)",
    ...(has("guard") ? [`  const g = ${i}`] : []),
    `  if (${condition}) {`,
    `    return ${has("guard") ? "a + g" : "a"}`,
    "  }",
    "  return 0",
    "}",
    ""
  ].join("\n")
}

const pythonFunction = (i: number, wrapped: boolean, edits: ReadonlyArray<Edit>): string => {
  const has = (e: Edit) => edits.includes(e)
  const decorated = wrapped !== has("wrap")
  const condition = has("cond") ? `a >= ${i}` : has("cond2") ? `a != ${i}` : `a > ${i}`
  return [
    ...(decorated ? ["@cache"] : []),
    `def f${i}(x):`,
    `    a = ${has("first") ? `x * ${i}` : `x + ${i}`}`,
    "    log(a)",
    ...(has("guard") ? [`    g = ${i}`] : []),
    `    if ${condition}:`,
    `        return ${has("guard") ? "a + g" : "a"}`,
    "    return 0",
    ""
  ].join("\n")
}

const bodyLanguages = [
  { language: "typescript" as const, header: "import { log } from \"./log.ts\"\n\n", render: typescriptFunction, gap: "\n" },
  { language: "python" as const, header: "from functools import cache\n\n\n", render: pythonFunction, gap: "\n\n" }
]

describe("mergeStructured properties: wrapped and unwrapped elements, elements changed in place among insertions", () => {
  for (const { language, header, render, gap } of bodyLanguages) {
    const file = (b: Body, edits: (i: number) => ReadonlyArray<Edit>) =>
      header + Array.from({ length: b.n }, (_, i) => render(i, b.wrapped[i]!, edits(i))).join(gap)
    const sides = (b: Body) => ({
      base: file(b, () => []),
      ours: file(b, (i) => b.ours[i]!),
      theirs: file(b, (i) => b.theirs[i]!)
    })

    it.effect(`${language}: disjoint edits of functions (wrap or unwrap, a statement, the if's condition, a statement added before the if with a change inside it) merge to every edit, the same text either way round`, () =>
      run(Effect.gen(function*() {
        const parser = yield* (yield* Grammars).parser(language)
        fc.assert(
          fc.property(disjointBodies, (b) => {
            const { base, ours, theirs } = sides(b)
            const expected = file(b, (i) => [...new Set([...b.ours[i]!, ...b.theirs[i]!])])
            expect(merge(parser, base, ours, theirs)).toEqual({ _tag: "Merged", text: expected })
            expect(merge(parser, base, theirs, ours)).toEqual({ _tag: "Merged", text: expected })
          }),
          { numRuns: 120 }
        )
      })))

    it.effect(`${language}: a side merged with itself, or with an unchanged side, is that side, whatever it wrapped or changed`, () =>
      run(Effect.gen(function*() {
        const parser = yield* (yield* Grammars).parser(language)
        fc.assert(
          fc.property(anyBodies, (b) => {
            const { base, ours } = sides(b)
            expect(merge(parser, base, ours, ours)).toEqual({ _tag: "Merged", text: ours })
            expect(merge(parser, base, base, ours)).toEqual({ _tag: "Merged", text: ours })
            expect(merge(parser, base, ours, base)).toEqual({ _tag: "Merged", text: ours })
          }),
          { numRuns: 80 }
        )
      })))

    it.effect(`${language}: no accepted result contains an error node, and none takes a condition changed two ways`, () =>
      run(Effect.gen(function*() {
        const parser = yield* (yield* Grammars).parser(language)
        fc.assert(
          fc.property(anyBodies, (b) => {
            const { base, ours, theirs } = sides(b)
            const r = merge(parser, base, ours, theirs)
            if (r._tag !== "Merged") return
            const tree = parser.parse(r.text)
            expect(tree?.root.hasError).toBe(false)
            tree?.dispose()
            // Every function once; a condition both sides changed differently is never merged.
            for (let i = 0; i < b.n; i++) {
              expect(r.text.split(`f${i}(x`).length - 1).toBe(1)
              const condition = (edits: ReadonlyArray<Edit>) => edits.includes("cond") ? "cond" : edits.includes("cond2") ? "cond2" : "base"
              const o = condition(b.ours[i]!)
              const t = condition(b.theirs[i]!)
              expect(o !== "base" && t !== "base" && o !== t).toBe(false)
            }
          }),
          { numRuns: 150 }
        )
      })))
  }
})
