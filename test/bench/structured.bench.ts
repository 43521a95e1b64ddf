/**
 * `structured` bench: the syntax-aware merge (`@forkjoin/merge/StructuredMerge`) in process.
 *
 * 1. `grammar_load_ms`        loading the web-tree-sitter runtime and the TypeScript grammar,
 *                             once (apart from every merge's time).
 * 2. `structured_5k_ts_ms`    a 5,000-line TypeScript file (imports, then one large class) where
 *                             each side adds 20 imports after the last import and 20 members at
 *                             the end of the class: the line merge conflicts (checked), the
 *                             structured merge gives both sides' 40 imports and 40 members
 *                             (checked) — median of the runs, target <= 150 ms. Peer: the line
 *                             merge (`mergeText`) of the same inputs, for scale.
 *                             Each side, and the re-parse of the result, is parsed
 *                             incrementally from a tree already parsed.
 * 3. `parse_5k_ts_ms`         one full parse of base, in the same runs: `structured_5k_ts_ms`
 *                             over it is the figure a loaded machine does not distort.
 * 4. `structured_5k_ts_full_parses_ms` the same merge with every parse a full one (the parser
 *                             ignoring the previous tree), for the gain of incremental parsing.
 * 5. `check_5k_ts_ms`         the structural check (`checkMerged`) of the structured result.
 *
 * Usage: `npm run bench -- structured [--json]`.
 */
import * as Effect from "effect/Effect"
import os from "node:os"
import { Grammars } from "../../packages/merge/src/Grammars.ts"
import { checkMerged, mergeStructured } from "../../packages/merge/src/StructuredMerge.ts"
import type { SyntaxParser } from "../../packages/merge/src/Syntax.ts"
import { defaultLabels, mergeText } from "../../packages/merge/src/TextMerge.ts"
import { emitJson, errorFigure, type Figure, median, note, printTable, round, timed, wantsJson, gc } from "./harness.ts"

const BENCH = "structured"
const TARGET_MS = 150
const WARMUP = 3
const RUNS = 15
const ADDED = 20

const json = wantsJson(process.argv.slice(2))
const figures: Array<Figure> = []
const report = (figure: Figure): void => {
  const f: Figure = { ...figure, load1: round(os.loadavg()[0] ?? 0, 2) }
  figures.push(f)
  if (json) emitJson(f)
}

const importLine = (name: string) => `import { ${name} } from "./lib/${name}.ts"`
const member = (name: string) => [
  `  /** Returns the ${name} of the order. */`,
  `  ${name}(order: Order): number {`,
  `    const total = order.lines.reduce((sum, line) => sum + line.price * line.quantity, 0)`,
  `    return total > 100 ? total - ${name.length} : total`,
  "  }",
  ""
]

/** Base, ours and theirs of about `lines` lines: 40 imports, then a class of members. */
const workload = (lines: number) => {
  const imports = Array.from({ length: 40 }, (_, i) => importLine(`dep${i}`))
  const members = Array.from({ length: Math.ceil((lines - 45) / 6) }, (_, i) => member(`m${i}`)).flat()
  const file = (extraImports: ReadonlyArray<string>, extraMembers: ReadonlyArray<string>) =>
    [...imports, ...extraImports, "", "export class Service {", ...members, ...extraMembers, "}", ""].join("\n")
  const oursNames = Array.from({ length: ADDED }, (_, i) => `ours${i}`)
  const theirsNames = Array.from({ length: ADDED }, (_, i) => `theirs${i}`)
  return {
    base: file([], []),
    ours: file(oursNames.map(importLine), oursNames.flatMap(member)),
    theirs: file(theirsNames.map(importLine), theirsNames.flatMap(member)),
    names: [...oursNames, ...theirsNames]
  }
}

const enc = (s: string) => new TextEncoder().encode(s)

const main = async () => {
  const loaded = await Effect.runPromise(Effect.provide(Effect.gen(function*() {
    const grammars = yield* Grammars
    return yield* Effect.tryPromise(async () => {
      const t0 = process.hrtime.bigint()
      const parser = await Effect.runPromise(grammars.parser("typescript"))
      return { parser, ms: Number(process.hrtime.bigint() - t0) / 1e6 }
    })
  }), Grammars.layer))
  const parser: SyntaxParser = loaded.parser
  report({ bench: BENCH, metric: "grammar_load_ms", ours: round(loaded.ms), peer: null, ratio: null, peerName: null, unit: "ms", n: 1 })

  const w = workload(5_000)
  note(`structured_5k_ts_ms: ${w.base.split("\n").length} base lines, ${ADDED} imports and ${ADDED} members added per side`)
  const line = mergeText(enc(w.base), enc(w.ours), enc(w.theirs))
  if (line._tag !== "Conflict") {
    report(errorFigure(BENCH, "structured_5k_ts_ms", `the line merge should conflict, got ${line._tag}`))
    return
  }
  const merge = () => mergeStructured({ base: w.base, ours: w.ours, theirs: w.theirs, parser, labels: defaultLabels, expired: () => false })
  const first = merge()
  const missing = first._tag === "Merged"
    ? w.names.filter((n) => !first.text.includes(importLine(n)) || !first.text.includes(`  ${n}(order: Order): number {`))
    : w.names
  if (first._tag !== "Merged" || missing.length > 0) {
    report(errorFigure(BENCH, "structured_5k_ts_ms", `expected both sides' imports and members merged, got ${first._tag}, missing ${missing.slice(0, 3).join(", ")}`))
    return
  }
  for (let i = 0; i < WARMUP; i++) merge()
  const fullParser: SyntaxParser = { language: parser.language, parse: (text, expired) => parser.parse(text, expired) }
  const mergeFull = () => mergeStructured({ base: w.base, ours: w.ours, theirs: w.theirs, parser: fullParser, labels: defaultLabels, expired: () => false })
  const runs: Array<number> = []
  const lineRuns: Array<number> = []
  const checkRuns: Array<number> = []
  const parseRuns: Array<number> = []
  const fullRuns: Array<number> = []
  for (let i = 0; i < RUNS; i++) {
    gc()
    runs.push(timed(merge).ms)
    parseRuns.push(timed(() => parser.parse(w.base)?.dispose()).ms)
    fullRuns.push(timed(mergeFull).ms)
    lineRuns.push(timed(() => mergeText(enc(w.base), enc(w.ours), enc(w.theirs))).ms)
    checkRuns.push(timed(() => checkMerged({ base: w.base, ours: w.ours, theirs: w.theirs, merged: first.text, parser, expired: () => false })).ms)
  }
  const ours = round(median(runs))
  const peer = round(median(lineRuns))
  report({
    bench: BENCH,
    metric: "structured_5k_ts_ms",
    ours,
    peer,
    ratio: round(ours / peer, 2),
    peerName: "mergeText (line merge, conflicts)",
    unit: "ms",
    n: RUNS,
    target: TARGET_MS,
    targetKind: "ours_max",
    pass: ours <= TARGET_MS,
    min: round(Math.min(...runs)),
    max: round(Math.max(...runs))
  })
  const parse = round(median(parseRuns))
  report({ bench: BENCH, metric: "parse_5k_ts_ms", ours: parse, peer: null, ratio: null, peerName: null, unit: "ms", n: RUNS })
  report({
    bench: BENCH,
    metric: "structured_5k_ts_per_parse",
    ours: round(ours / parse, 2),
    peer: round(median(fullRuns) / parse, 2),
    ratio: round(ours / median(fullRuns), 2),
    peerName: "the same merge with full parses only",
    unit: "full parses of base",
    n: RUNS
  })
  report({ bench: BENCH, metric: "structured_5k_ts_full_parses_ms", ours: round(median(fullRuns)), peer: null, ratio: null, peerName: null, unit: "ms", n: RUNS })
  report({ bench: BENCH, metric: "check_5k_ts_ms", ours: round(median(checkRuns)), peer: null, ratio: null, peerName: null, unit: "ms", n: RUNS })
}

await main()
if (!json) printTable(figures)
if (figures.some((f) => f.error !== undefined)) process.exitCode = 1
