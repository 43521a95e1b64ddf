/** The syntax-aware merge: where the line merge conflicts (or repeats a key), merging by tree gives the file. */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { Grammars } from "../src/Grammars.ts"
import { maxBytes, mergeStructured, type StructuredMerge } from "../src/StructuredMerge.ts"
import type { Language } from "../src/Syntax.ts"
import { defaultLabels, mergeText } from "../src/TextMerge.ts"

const enc = (s: string): Uint8Array => new TextEncoder().encode(s)
const dec = (b: Uint8Array): string => new TextDecoder("utf-8", { ignoreBOM: true }).decode(b)
const lines = (...xs: ReadonlyArray<string>) => xs.map((x) => `${x}\n`).join("")

const run = <A, E>(effect: Effect.Effect<A, E, Grammars>) => effect.pipe(Effect.provide(Grammars.layer))

const structured = (language: Language, base: string, ours: string, theirs: string, expired: () => boolean = () => false) =>
  Effect.gen(function*() {
    const parser = yield* (yield* Grammars).parser(language)
    return mergeStructured({ base, ours, theirs, parser, labels: defaultLabels, expired })
  })

const textOf = (r: StructuredMerge): string => {
  if (r._tag !== "Merged") throw new Error(`expected Merged, got ${JSON.stringify(r)}`)
  return r.text
}

/** What the line merge makes of it: held, or a clean text (possibly wrong). */
const line = (base: string, ours: string, theirs: string): string | "conflict" => {
  const r = mergeText(enc(base), enc(ours), enc(theirs))
  return r._tag === "Merged" ? dec(r.bytes) : "conflict"
}

interface Shape {
  readonly language: Language
  readonly name: string
  readonly base: string
  readonly ours: string
  readonly theirs: string
  readonly expected: string
}

const shapes: ReadonlyArray<Shape> = [
  {
    language: "json",
    name: "JSON keys appended by both after the last key (each needs the comma after it)",
    base: lines("{", "  \"name\": \"app\",", "  \"version\": \"1.0.0\"", "}"),
    ours: lines("{", "  \"name\": \"app\",", "  \"version\": \"1.0.0\",", "  \"license\": \"MIT\"", "}"),
    theirs: lines("{", "  \"name\": \"app\",", "  \"version\": \"1.0.0\",", "  \"private\": true", "}"),
    expected: lines("{", "  \"name\": \"app\",", "  \"version\": \"1.0.0\",", "  \"license\": \"MIT\",", "  \"private\": true", "}")
  },
  {
    language: "json",
    name: "JSON dependencies added at one place in a nested object, CRLF kept",
    base: "{\r\n  \"dependencies\": {\r\n    \"a\": \"1\",\r\n    \"c\": \"3\"\r\n  }\r\n}\r\n",
    ours: "{\r\n  \"dependencies\": {\r\n    \"a\": \"1\",\r\n    \"b\": \"2\",\r\n    \"c\": \"3\"\r\n  }\r\n}\r\n",
    theirs: "{\r\n  \"dependencies\": {\r\n    \"a\": \"1\",\r\n    \"bb\": \"2\",\r\n    \"c\": \"3\"\r\n  }\r\n}\r\n",
    expected: "{\r\n  \"dependencies\": {\r\n    \"a\": \"1\",\r\n    \"b\": \"2\",\r\n    \"bb\": \"2\",\r\n    \"c\": \"3\"\r\n  }\r\n}\r\n"
  },
  {
    language: "typescript",
    name: "TypeScript imports added by both at one place",
    base: lines("import { a } from \"./a.ts\"", "", "export const x = a"),
    ours: lines("import { a } from \"./a.ts\"", "import { b } from \"./b.ts\"", "", "export const x = a"),
    theirs: lines("import { a } from \"./a.ts\"", "import type { C } from \"./c.ts\"", "", "export const x = a"),
    expected: lines("import { a } from \"./a.ts\"", "import { b } from \"./b.ts\"", "import type { C } from \"./c.ts\"", "", "export const x = a")
  },
  {
    language: "typescript",
    name: "TypeScript class members added by both at the end of the class, each with its comment",
    base: lines("export class Cart {", "  items: Array<string> = []", "", "  add(x: string): void {", "    this.items.push(x)", "  }", "}"),
    ours: lines("export class Cart {", "  items: Array<string> = []", "", "  add(x: string): void {", "    this.items.push(x)", "  }", "", "  /** How many. */", "  size(): number {", "    return this.items.length", "  }", "}"),
    theirs: lines("export class Cart {", "  items: Array<string> = []", "", "  add(x: string): void {", "    this.items.push(x)", "  }", "", "  clear(): void {", "    this.items = []", "  }", "}"),
    expected: lines("export class Cart {", "  items: Array<string> = []", "", "  add(x: string): void {", "    this.items.push(x)", "  }", "", "  /** How many. */", "  size(): number {", "    return this.items.length", "  }", "", "  clear(): void {", "    this.items = []", "  }", "}")
  },
  {
    language: "typescript",
    name: "TypeScript interface fields, enum members and union arms added by both",
    base: lines("interface Config {", "  host: string", "}", "", "enum Level {", "  Low,", "}", "", "type Event =", "  | { kind: \"a\" }"),
    ours: lines("interface Config {", "  host: string", "  port?: number", "}", "", "enum Level {", "  Low,", "  Mid,", "}", "", "type Event =", "  | { kind: \"a\" }", "  | { kind: \"b\" }"),
    theirs: lines("interface Config {", "  host: string", "  tls: boolean", "}", "", "enum Level {", "  Low,", "  High,", "}", "", "type Event =", "  | { kind: \"a\" }", "  | { kind: \"c\" }"),
    expected: lines("interface Config {", "  host: string", "  port?: number", "  tls: boolean", "}", "", "enum Level {", "  Low,", "  Mid,", "  High,", "}", "", "type Event =", "  | { kind: \"a\" }", "  | { kind: \"b\" }", "  | { kind: \"c\" }")
  },
  {
    language: "javascript",
    name: "JavaScript object keys appended by both without a trailing comma",
    base: lines("export const defaults = {", "  timeout: 0", "}"),
    ours: lines("export const defaults = {", "  timeout: 0,", "  retries: 3", "}"),
    theirs: lines("export const defaults = {", "  timeout: 0,", "  proxy: false", "}"),
    expected: lines("export const defaults = {", "  timeout: 0,", "  retries: 3,", "  proxy: false", "}")
  },
  {
    language: "javascript",
    name: "JavaScript test cases added by both at the end of a suite",
    base: lines("describe('cart', () => {", "  it('adds', () => {", "    expect(1).toBe(1)", "  })", "})"),
    ours: lines("describe('cart', () => {", "  it('adds', () => {", "    expect(1).toBe(1)", "  })", "", "  it('removes', () => {", "    expect(2).toBe(2)", "  })", "})"),
    theirs: lines("describe('cart', () => {", "  it('adds', () => {", "    expect(1).toBe(1)", "  })", "", "  it('clears', () => {", "    expect(3).toBe(3)", "  })", "})"),
    expected: lines("describe('cart', () => {", "  it('adds', () => {", "    expect(1).toBe(1)", "  })", "", "  it('removes', () => {", "    expect(2).toBe(2)", "  })", "", "  it('clears', () => {", "    expect(3).toBe(3)", "  })", "})")
  },
  {
    language: "python",
    name: "Python imports added by both at one place",
    base: lines("import os", "", "print(os.sep)"),
    ours: lines("import os", "import re", "", "print(os.sep)"),
    theirs: lines("import os", "from typing import Any", "", "print(os.sep)"),
    expected: lines("import os", "import re", "from typing import Any", "", "print(os.sep)")
  },
  {
    language: "python",
    name: "Python methods added by both at the end of a class body",
    base: lines("class Cart:", "    def add(self, x):", "        self.items.append(x)", "", "", "def main():", "    pass"),
    ours: lines("class Cart:", "    def add(self, x):", "        self.items.append(x)", "", "    def size(self):", "        return len(self.items)", "", "", "def main():", "    pass"),
    theirs: lines("class Cart:", "    def add(self, x):", "        self.items.append(x)", "", "    def clear(self):", "        self.items = []", "", "", "def main():", "    pass"),
    expected: lines("class Cart:", "    def add(self, x):", "        self.items.append(x)", "", "    def size(self):", "        return len(self.items)", "", "    def clear(self):", "        self.items = []", "", "", "def main():", "    pass")
  },
  {
    language: "python",
    name: "Python dict keys added by both at one place",
    base: lines("LIMITS = {", "    \"cpu\": 1,", "}"),
    ours: lines("LIMITS = {", "    \"cpu\": 1,", "    \"memory\": 2,", "}"),
    theirs: lines("LIMITS = {", "    \"cpu\": 1,", "    \"disk\": 3,", "}"),
    expected: lines("LIMITS = {", "    \"cpu\": 1,", "    \"memory\": 2,", "    \"disk\": 3,", "}")
  },
  {
    language: "python",
    name: "Python statements next to each other, each changed by one side (ordered: they touch different statements)",
    base: lines("__license__ = \"Apache 2.0\"", "__copyright__ = \"Copyright 2022 K\""),
    ours: lines("__license__ = \"Apache-2.0\"", "__copyright__ = \"Copyright 2022 K\""),
    theirs: lines("__license__ = \"Apache 2.0\"", "__copyright__ = \"Copyright K\""),
    expected: lines("__license__ = \"Apache-2.0\"", "__copyright__ = \"Copyright K\"")
  },
  {
    language: "typescript",
    name: "one side renames what is assigned, the other changes the value, on one line",
    base: lines("function f(v: string) {", "  const parts = v.split(\".\")", "  return parts", "}"),
    ours: lines("function f(v: string) {", "  const list = v.split(\".\")", "  return list", "}"),
    theirs: lines("function f(v: string) {", "  const parts = v.split(\".\").slice(0, 3)", "  return parts", "}"),
    expected: lines("function f(v: string) {", "  const list = v.split(\".\").slice(0, 3)", "  return list", "}")
  },
  {
    language: "typescript",
    name: "one side exports a function (a node of another kind wrapping it), the other changes its first statement",
    base: lines("import { a } from \"./a.ts\"", "", "function total(xs: Array<number>): number {", "  let sum = 0", "  for (const x of xs) sum += x", "  return sum", "}"),
    ours: lines("import { a } from \"./a.ts\"", "", "export function total(xs: Array<number>): number {", "  let sum = 0", "  for (const x of xs) sum += x", "  return sum", "}"),
    theirs: lines("import { a } from \"./a.ts\"", "", "function total(xs: Array<number>): number {", "  let sum = a", "  for (const x of xs) sum += x", "  return sum", "}"),
    expected: lines("import { a } from \"./a.ts\"", "", "export function total(xs: Array<number>): number {", "  let sum = a", "  for (const x of xs) sum += x", "  return sum", "}")
  },
  {
    language: "typescript",
    name: "one side stops exporting a function (unwraps it), the other changes its first statement",
    base: lines("export function total(xs: Array<number>): number {", "  let sum = 0", "  return sum", "}"),
    ours: lines("export function total(xs: Array<number>): number {", "  let sum = 1", "  return sum", "}"),
    theirs: lines("function total(xs: Array<number>): number {", "  let sum = 0", "  return sum", "}"),
    expected: lines("function total(xs: Array<number>): number {", "  let sum = 1", "  return sum", "}")
  },
  {
    language: "python",
    name: "one side decorates a function, the other changes its signature",
    base: lines("import functools", "", "", "def total(xs):", "    return sum(xs)"),
    ours: lines("import functools", "", "", "@functools.cache", "def total(xs):", "    return sum(xs)"),
    theirs: lines("import functools", "", "", "def total(xs, start=0):", "    return sum(xs)"),
    expected: lines("import functools", "", "", "@functools.cache", "def total(xs, start=0):", "    return sum(xs)")
  },
  {
    language: "javascript",
    name: "one side wraps an arrow function in a condition, the other changes a statement inside it",
    base: lines("const adapter = async (config) => {", "  const url = config.url", "  return send(url)", "};"),
    ours: lines("const adapter = supported && (async (config) => {", "  const url = config.url", "  return send(url)", "});"),
    theirs: lines("const adapter = async (config) => {", "  const url = config.baseURL + config.url", "  return send(url)", "};"),
    expected: lines("const adapter = supported && (async (config) => {", "  const url = config.baseURL + config.url", "  return send(url)", "});")
  },
  {
    language: "javascript",
    name: "one side adds a statement before an if and changes inside it, the other changes its condition (the if is paired with its changed self)",
    base: lines("function upload(data, onProgress) {", "  if (onProgress && streams) {", "    const length = size(data)", "    data = track(data, reducer(onProgress))", "  }", "  return data", "}"),
    ours: lines("function upload(data, onProgress) {", "  const rate = 3", "  if (onProgress && streams) {", "    const length = size(data)", "    data = track(data, reducer(onProgress, rate))", "  }", "  return data", "}"),
    theirs: lines("function upload(data, onProgress) {", "  if (onProgress && supported) {", "    const length = size(data)", "    data = track(data, reducer(onProgress))", "  }", "  return data", "}"),
    expected: lines("function upload(data, onProgress) {", "  const rate = 3", "  if (onProgress && supported) {", "    const length = size(data)", "    data = track(data, reducer(onProgress, rate))", "  }", "  return data", "}")
  }
]

describe("mergeStructured", () => {
  for (const shape of shapes) {
    it.effect(`${shape.language}: ${shape.name}: the line merge conflicts, the structured merge gives the file`, () =>
      run(Effect.gen(function*() {
        expect(line(shape.base, shape.ours, shape.theirs)).toBe("conflict")
        expect(textOf(yield* structured(shape.language, shape.base, shape.ours, shape.theirs))).toBe(shape.expected)
      })))
  }

  it.effect("the same JSON key added by both at places far apart: the line merge repeats it, the structured merge keeps ours' once", () =>
    run(Effect.gen(function*() {
      const base = lines("{", "  \"a\": 1,", "  \"b\": 2,", "  \"c\": 3,", "  \"d\": 4", "}")
      const ours = lines("{", "  \"axios\": \"^1\",", "  \"a\": 1,", "  \"b\": 2,", "  \"c\": 3,", "  \"d\": 4", "}")
      const theirs = lines("{", "  \"a\": 1,", "  \"b\": 2,", "  \"c\": 3,", "  \"d\": 4,", "  \"axios\": \"^1\"", "}")
      expect(line(base, ours, theirs)).toContain("\"d\": 4,\n  \"axios\"")
      expect(textOf(yield* structured("json", base, ours, theirs))).toBe(ours)
      // With different values it is no merge: the caller keeps the line merge's verdict.
      const other = theirs.replace("\"axios\": \"^1\"", "\"axios\": \"^2\"")
      expect((yield* structured("json", base, ours, other))._tag).toBe("Fallback")
    })))

  it.effect("one key changed two ways stays a conflict narrowed to that key, with the labels; the other keys' changes merge", () =>
    run(Effect.gen(function*() {
      const base = lines("{", "  \"a\": 1,", "  \"version\": \"1.0\",", "  \"z\": 0", "}")
      const ours = lines("{", "  \"a\": 1,", "  \"version\": \"1.1\",", "  \"z\": 0,", "  \"o\": true", "}")
      const theirs = lines("{", "  \"a\": 2,", "  \"version\": \"2.0\",", "  \"z\": 0", "}")
      const parser = yield* (yield* Grammars).parser("json")
      const r = mergeStructured({ base, ours, theirs, parser, labels: { ours: "live", base: "before", theirs: "child" }, expired: () => false })
      expect(r).toEqual({
        _tag: "Conflict",
        elements: 1,
        text: lines(
          "{",
          "  \"a\": 2,",
          "<<<<<<< live",
          "  \"version\": \"1.1\",",
          "||||||| before",
          "  \"version\": \"1.0\",",
          "=======",
          "  \"version\": \"2.0\",",
          ">>>>>>> child",
          "  \"z\": 0,",
          "  \"o\": true",
          "}"
        )
      })
    })))

  it.effect("an element one side deleted and the other changed is a conflict over that element", () =>
    run(Effect.gen(function*() {
      const base = lines("class A {", "  a(): number {", "    return 1", "  }", "", "  b(): number {", "    return 2", "  }", "}")
      const ours = lines("class A {", "  b(): number {", "    return 2", "  }", "}")
      const theirs = lines("class A {", "  a(): number {", "    return 10", "  }", "", "  b(): number {", "    return 2", "  }", "}")
      const r = yield* structured("typescript", base, ours, theirs)
      expect(r._tag).toBe("Conflict")
      expect(r._tag === "Conflict" && r.text).toContain("=======\n  a(): number {\n    return 10\n  }\n>>>>>>> theirs\n")
    })))

  it.effect("two adjacent statements, one binding a name the other reads, each changed by one side: a conflict over the two; an unchanged statement between them: merged", () =>
    run(Effect.gen(function*() {
      const body = (first: string, between: ReadonlyArray<string>, second: string) =>
        lines("function request(config) {", `  const url = ${first}`, ...between, `  const parsed = new URL(url, ${second})`, "  return parsed", "}")
      const before = "resolve(config.base, config.url)"
      const after = "resolve(config.base, config.url, config.absolute)"
      const adjacent = yield* structured("javascript", body(before, [], "'http://localhost'"), body(after, [], "'http://localhost'"), body(before, [], "origin"))
      expect(adjacent._tag).toBe("Conflict")
      expect(adjacent._tag === "Conflict" && adjacent.text).toBe(lines(
        "function request(config) {",
        "<<<<<<< ours",
        `  const url = ${after}`,
        "  const parsed = new URL(url, 'http://localhost')",
        "||||||| base",
        `  const url = ${before}`,
        "  const parsed = new URL(url, 'http://localhost')",
        "=======",
        `  const url = ${before}`,
        "  const parsed = new URL(url, origin)",
        ">>>>>>> theirs",
        "  return parsed",
        "}"
      ))
      const kept = ["  log(config)"]
      const separated = yield* structured("javascript", body(before, kept, "'http://localhost'"), body(after, kept, "'http://localhost'"), body(before, kept, "origin"))
      expect(textOf(separated)).toBe(body(after, kept, "origin"))
    })))

  it.effect("a binding changed by one side, next to a statement reading it that both sides changed: a conflict over the two", () =>
    run(Effect.gen(function*() {
      const body = (init: string, header: string, step: string, name = "acc") =>
        lines("def total(xs):", `    ${name} = ${init}`, `    for x in ${header}:`, `        ${name} += ${step}`, `    return ${name}`)
      const r = yield* structured("python", body("0", "xs", "x"), body("0", "xs", "x * 2"), body("0.0", "sorted(xs)", "x"))
      expect(r._tag === "Conflict" && r.text).toBe(lines(
        "def total(xs):",
        "<<<<<<< ours",
        "    acc = 0",
        "    for x in xs:",
        "        acc += x * 2",
        "    return acc",
        "||||||| base",
        "    acc = 0",
        "    for x in xs:",
        "        acc += x",
        "    return acc",
        "=======",
        "    acc = 0.0",
        "    for x in sorted(xs):",
        "        acc += x",
        "    return acc",
        ">>>>>>> theirs"
      ))
      // The binding changed by both sides (one renames it everywhere, one changes its value) merges pairwise.
      const renamed = yield* structured("python", body("0", "xs", "x"), body("0", "xs", "x", "total"), body("0.0", "sorted(xs)", "x"))
      expect(textOf(renamed)).toBe(body("0.0", "sorted(xs)", "x", "total"))
    })))

  it.effect("a wrapper holding two nodes of the element's kind, or nothing of base's, is no wrap: a conflict", () =>
    run(Effect.gen(function*() {
      const base = lines("const handler = (e) => {", "  log(e)", "}")
      const theirs = lines("const handler = (e) => {", "  log(e, 1)", "}")
      const twoArrows = lines("const handler = debug ? (e) => {", "  log(e)", "} : (e) => {", "  skip(e)", "}")
      expect((yield* structured("javascript", base, twoArrows, theirs))._tag).not.toBe("Merged")
      const rewritten = lines("const handler = once((ev) => {", "  track(ev)", "})")
      expect((yield* structured("javascript", base, rewritten, theirs))._tag).not.toBe("Merged")
      // One arrow that keeps base's body: a wrap, merged.
      const wrapped = lines("const handler = once((e) => {", "  log(e)", "})")
      expect(textOf(yield* structured("javascript", base, wrapped, theirs))).toBe(lines("const handler = once((e) => {", "  log(e, 1)", "})"))
    })))

  it.effect("an unwrap where the other side changed the wrapper too is a conflict", () =>
    run(Effect.gen(function*() {
      const base = lines("export function total() {", "  return 0", "}")
      const ours = lines("export default function total() {", "  return 1", "}")
      const theirs = lines("function total() {", "  return 0", "}")
      expect((yield* structured("typescript", base, ours, theirs))._tag).not.toBe("Merged")
    })))

  it.effect("a statement rewritten among insertions (no line of it kept) is not paired with its base: a conflict", () =>
    run(Effect.gen(function*() {
      const base = lines("function f(a) {", "  if (a) {", "    x()", "    y()", "  }", "}")
      const ours = lines("function f(a) {", "  const b = g(a)", "  if (b) {", "    z()", "    w()", "  }", "}")
      const theirs = lines("function f(a) {", "  if (a) {", "    x(1)", "    y()", "  }", "}")
      expect((yield* structured("javascript", base, ours, theirs))._tag).not.toBe("Merged")
    })))

  it.effect("a changed statement similar to two of base's is paired with neither: a conflict", () =>
    run(Effect.gen(function*() {
      const block = (cond: string, ...calls: ReadonlyArray<string>) => [`  if (${cond}) {`, ...calls.map((c) => `    ${c}`), "  }"]
      const fn = (...statements: ReadonlyArray<ReadonlyArray<string>>) => lines("function f(a, b) {", ...statements.flat(), "}")
      const base = fn(block("a", "p()", "q()", "r()"), block("b", "p()", "q()", "t()"))
      // Ours' first `if` is like base's first (4 of 5 lines) and like its second (3 of 5).
      const ours = fn(block("a", "p()", "q()", "s()"), block("b", "t()", "u()", "v()"), ["  done()"])
      const theirs = fn(block("a || b", "p()", "q()", "r()"), block("b", "p()", "q()", "t()"))
      expect((yield* structured("javascript", base, ours, theirs))._tag).not.toBe("Merged")
    })))

  it.effect("statements inserted by both at one place of a function body are not reordered: that stays a conflict", () =>
    run(Effect.gen(function*() {
      const base = lines("function f() {", "  a()", "}")
      const ours = lines("function f() {", "  a()", "  b()", "}")
      const theirs = lines("function f() {", "  a()", "  c()", "}")
      const r = yield* structured("javascript", base, ours, theirs)
      expect(r._tag).toBe("Conflict")
    })))

  it.effect("a byte order mark on ours is kept; the text is parsed without it", () =>
    run(Effect.gen(function*() {
      const shape = shapes[0]!
      const r = yield* structured("json", `\uFEFF${shape.base}`, `\uFEFF${shape.ours}`, `\uFEFF${shape.theirs}`)
      expect(textOf(r)).toBe(`\uFEFF${shape.expected}`)
      expect(textOf(yield* structured("json", shape.base, `\uFEFF${shape.ours}`, shape.theirs))).toBe(`\uFEFF${shape.expected}`)
    })))

  it.effect("bounded: an input over 1 MiB, an input that does not parse and a spent budget fall back to the line merge", () =>
    run(Effect.gen(function*() {
      const shape = shapes[0]!
      const big = `{"pad": "${"x".repeat(maxBytes)}"}\n`
      expect(yield* structured("json", shape.base, big, shape.theirs)).toEqual({ _tag: "Fallback", why: "too_large" })
      // Multi-byte text counts in UTF-8 bytes: fewer than maxBytes characters, more bytes.
      const wide = `{"pad": "${"é".repeat(maxBytes / 2 + 8)}"}\n`
      expect(yield* structured("json", shape.base, shape.ours, wide)).toEqual({ _tag: "Fallback", why: "too_large" })
      expect(yield* structured("json", shape.base, shape.ours, "{\"a\": }\n")).toEqual({ _tag: "Fallback", why: "parse_error" })
      expect(yield* structured("json", shape.base, shape.ours, shape.theirs, () => true)).toEqual({ _tag: "Fallback", why: "timeout" })
      let asked = 0
      const large = (extra: string) => `{\n${Array.from({ length: 20_000 }, (_, i) => `  "k${i}": ${i},`).join("\n")}\n  ${extra}\n}\n`
      const slow = yield* structured("json", large("\"end\": 0"), large("\"end\": 1"), large("\"end\": 2"), () => ++asked > 3)
      expect(slow).toEqual({ _tag: "Fallback", why: "timeout" })
    })))

  it.effect("deep nesting and long chains never exhaust the stack: a change deep inside falls back, a union of thousands of arms merges", () =>
    run(Effect.gen(function*() {
      const depth = 5_000
      const nested = (inner: string) => `${"[".repeat(depth)}${inner}${"]".repeat(depth)}\n`
      const deep = yield* structured("json", nested("1, 2"), nested("10, 2"), nested("1, 20"))
      expect(deep).toEqual({ _tag: "Fallback", why: "unsupported" })
      const arms = Array.from({ length: 3_000 }, (_, i) => `  | "a${i}"`)
      const union = (extra: string) => `type U =\n${arms.join("\n")}${extra}\n`
      expect(textOf(yield* structured("typescript", union(""), union("\n  | \"o\""), union("\n  | \"t\"")))).toBe(union("\n  | \"o\"\n  | \"t\""))
    })))

  it.effect("a narrowed conflict in a CRLF file has CRLF marker lines, and TSX components' imports merge like TypeScript's", () =>
    run(Effect.gen(function*() {
      const crlf = (...xs: ReadonlyArray<string>) => xs.map((x) => `${x}\r\n`).join("")
      const base = crlf("class A {", "  x = 1", "  y = 2", "}")
      const r = yield* structured("typescript", base, crlf("class A {", "  x = 10", "  y = 2", "  z = 3", "}"), crlf("class A {", "  x = 20", "  y = 2", "}"))
      expect(r).toEqual({
        _tag: "Conflict",
        elements: 1,
        text: crlf("class A {", "<<<<<<< ours", "  x = 10", "||||||| base", "  x = 1", "=======", "  x = 20", ">>>>>>> theirs", "  y = 2", "  z = 3", "}")
      })
      const tsx = (...imports: ReadonlyArray<string>) => lines(...imports, "", "export const App = () => <div className=\"app\" />")
      const merged = yield* structured("tsx", tsx("import a from \"a\""), tsx("import a from \"a\"", "import b from \"b\""), tsx("import a from \"a\"", "import c from \"c\""))
      expect(textOf(merged)).toBe(tsx("import a from \"a\"", "import b from \"b\"", "import c from \"c\""))
    })))
})
