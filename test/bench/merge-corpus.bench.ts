/**
 * `merge-corpus` bench: real three-way merges and the project's own order-insensitive cases,
 * each merged by `git merge-file -p` (the peer), forkjoin's line merge alone, forkjoin's full
 * merge, and the real join (child a = Base→Left, child b = Base→Right, b joined after a, each
 * child's file exported byte-exact by an overlay, joined by `Run.runPlan` in one scratch
 * workspace). Each result is equal to Expected, held (a conflict), or clean but different; a
 * clean JSON result that repeats a key in one object, where no input did, is counted as
 * `duplicateKey` (code files are not checked for repeated members: no reliable check without a
 * parser). The full merge is `mergeFile` with the parser of the file's language (by syntax tree
 * where the line merge conflicts or repeats a member); `structured` counts the clean results
 * merged that way; `grammar_load_ms` is the grammars' load, outside every merge's time.
 *
 * Sets: `corpus` (FORKJOIN_MERGE_CORPUS_DIR, default ../shared/merge-corpus beside the
 * checkout), `corpus_final_newline` (corpus cases whose four versions do not agree on ending
 * with a newline, apart from the rest), `own` (test/merge-cases). Per set, one `outcomes_*`
 * figure per language and one for the total (ours: the join's equal count, peer: git's, every
 * method's tally beside it), then the targets on the totals: `held_*` (ratio to git's <= 0.67),
 * `clean_different_*` (no more than git's), `duplicate_key_clean_*` (0), `join_vs_full_*`
 * (cases where the join's answer is not the library's full merge: 0) and `time_ms_*` (every
 * method's total and slowest case).
 *
 * Usage: `npm run bench -- merge-corpus [--json] [--cases] [--dir DIR]` (`--cases`: one figure
 * per case too; DIR: where the scratch workspace goes, default the OS temp directory).
 * Exit 1 when the corpus is absent or a case could not be merged by some method.
 */
import * as fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { emitJson, errorFigure, type Figure, note, printTable, repoRoot, round, wantsJson } from "./harness.ts"
import {
  type CaseResult,
  compareAll,
  METHODS,
  type Method,
  readCases,
  sameAnswer,
  type Tally,
  tally
} from "./mergeCorpus.ts"

const BENCH = "merge-corpus"
const PEER = "git merge-file -p (ours=Left, base=Base, theirs=Right)"
const HELD_RATIO_TARGET = 0.67

const argv = process.argv.slice(2)
const json = wantsJson(argv)
const perCase = argv.includes("--cases")
const dirFlag = argv.indexOf("--dir")
const scratchParent = dirFlag === -1 ? os.tmpdir() : argv[dirFlag + 1]
if (scratchParent === undefined) {
  process.stderr.write("usage: npm run bench -- merge-corpus [--json] [--cases] [--dir DIR]\n")
  process.exit(2)
}

const root = repoRoot()
const corpusDir = process.env["FORKJOIN_MERGE_CORPUS_DIR"] ?? path.resolve(root, "..", "shared", "merge-corpus")
const ownDir = path.join(root, "test", "merge-cases")
if (!fs.existsSync(corpusDir)) {
  process.stderr.write(
    `merge-corpus: no merge corpus at ${corpusDir}: set FORKJOIN_MERGE_CORPUS_DIR to its folder (or put shared/merge-corpus beside the checkout) and run again\n`
  )
  process.exit(1)
}

const figures: Array<Figure> = []
let failed = false
const report = (f: Figure): void => {
  const figure: Figure = { ...f, load1: round(os.loadavg()[0] ?? 0, 2) }
  figures.push(figure)
  if (figure.error !== undefined) failed = true
  if (json) emitJson(figure)
}

const rounded = (t: Tally) => ({ ...t, totalMs: round(t.totalMs), maxCaseMs: round(t.maxCaseMs) })
const tallies = (rs: ReadonlyArray<CaseResult>) =>
  Object.fromEntries(METHODS.map((m) => [m, rounded(tally(rs, m))])) as Record<Method, Tally>
const ids = (rs: ReadonlyArray<CaseResult>, keep: (r: CaseResult) => boolean) => rs.filter(keep).map((r) => r.case.id)
const common = { peerName: PEER }

const reportSet = (set: string, rs: ReadonlyArray<CaseResult>): void => {
  const languages = [...new Set(rs.map((r) => r.case.language))].sort()
  for (const language of [...languages, "total"]) {
    const subset = language === "total" ? rs : rs.filter((r) => r.case.language === language)
    const t = tallies(subset)
    report({
      bench: BENCH,
      metric: `outcomes_${set}_${language}`,
      ours: t.join.equal,
      peer: t.git.equal,
      ratio: t.git.equal === 0 ? null : round(t.join.equal / t.git.equal, 4),
      ...common,
      unit: "cases equal to Expected",
      n: subset.length,
      measures: "per method: equal to Expected, held, clean but different, clean with a repeated JSON key, clean JSON that no longer parses, clean by syntax tree, errors, time",
      methods: t,
      ...(set.startsWith("own") ? { mustHold: subset.filter((r) => r.case.mustHold).length } : {})
    })
  }
  const t = tallies(rs)
  const errors = METHODS.flatMap((m) => rs.flatMap((r) => (r.results[m].error === undefined ? [] : [`${r.case.id} (${m}): ${r.results[m].error}`])))
  if (errors.length > 0) report(errorFigure(BENCH, `errors_${set}`, errors.slice(0, 20).join("\n"), { n: errors.length }))
  report({
    bench: BENCH,
    metric: `held_${set}`,
    ours: t.join.held,
    peer: t.git.held,
    ratio: t.git.held === 0 ? null : round(t.join.held / t.git.held, 4),
    ...common,
    unit: "cases",
    n: rs.length,
    target: HELD_RATIO_TARGET,
    targetKind: "ratio_max",
    pass: t.join.held <= HELD_RATIO_TARGET * t.git.held,
    held: { line: t.line.held, full: t.full.held, join: t.join.held, git: t.git.held },
    heldByJoin: ids(rs, (r) => r.results.join.verdict === "held" && r.results.join.error === undefined),
    ...(set.startsWith("own") ? { mustHoldNotHeld: ids(rs, (r) => r.case.mustHold && r.results.join.verdict !== "held") } : {})
  })
  report({
    bench: BENCH,
    metric: `clean_different_${set}`,
    ours: t.join.different,
    peer: t.git.different,
    ratio: t.git.different === 0 ? null : round(t.join.different / t.git.different, 4),
    ...common,
    unit: "cases",
    n: rs.length,
    target: t.git.different,
    targetKind: "ours_max",
    pass: t.join.different <= t.git.different && t.full.different <= t.git.different,
    different: { line: t.line.different, full: t.full.different, join: t.join.different, git: t.git.different },
    differentByJoin: ids(rs, (r) => r.results.join.verdict === "different"),
    differentByGit: ids(rs, (r) => r.results.git.verdict === "different")
  })
  const dupJoin = t.join.duplicateKey
  report({
    bench: BENCH,
    metric: `duplicate_key_clean_${set}`,
    ours: dupJoin,
    peer: t.git.duplicateKey,
    ratio: null,
    ...common,
    unit: "clean merges repeating a JSON key (JSON files only)",
    n: rs.filter((r) => r.case.language === "json").length,
    target: 0,
    targetKind: "ours_max",
    pass: dupJoin === 0 && t.full.duplicateKey === 0,
    duplicateKey: { line: t.line.duplicateKey, full: t.full.duplicateKey, join: dupJoin, git: t.git.duplicateKey },
    brokenJson: { line: t.line.brokenJson, full: t.full.brokenJson, join: t.join.brokenJson, git: t.git.brokenJson },
    duplicateKeyByLine: ids(rs, (r) => r.results.line.duplicateKey),
    duplicateKeyByJoin: ids(rs, (r) => r.results.join.duplicateKey)
  })
  const mismatched = ids(rs, (r) => r.results.join.error === undefined && r.results.full.error === undefined && !sameAnswer(r.results.join, r.results.full))
  report({
    bench: BENCH,
    metric: `join_vs_full_${set}`,
    ours: mismatched.length,
    peer: null,
    ratio: null,
    peerName: null,
    unit: "cases where the join's answer differs from the library's full merge",
    n: rs.length,
    target: 0,
    targetKind: "ours_max",
    pass: mismatched.length === 0,
    mismatched
  })
  report({
    bench: BENCH,
    metric: `time_ms_${set}`,
    ours: round(t.join.totalMs),
    peer: round(t.git.totalMs),
    ratio: t.git.totalMs === 0 ? null : round(t.join.totalMs / t.git.totalMs, 4),
    ...common,
    unit: "ms, summed over the cases",
    n: rs.length,
    measures: "ours: the join (Run.runPlan of two changeset children per case, in process); peer: git merge-file as a process per case",
    totalMs: Object.fromEntries(METHODS.map((m) => [m, t[m].totalMs])),
    maxCaseMs: Object.fromEntries(METHODS.map((m) => [m, t[m].maxCaseMs]))
  })
  if (perCase) {
    for (const r of rs) {
      report({
        bench: BENCH,
        metric: `case_${set}`,
        ours: null,
        peer: null,
        ratio: null,
        peerName: null,
        case: r.case.id,
        language: r.case.language,
        ...Object.fromEntries(METHODS.map((m) => [m, { verdict: r.results[m].verdict, ms: round(r.results[m].ms), ...(r.results[m].duplicateKey ? { duplicateKey: true } : {}), ...(r.results[m].structured ? { structured: true } : {}) }]))
      })
    }
  }
}

const scratch = fs.mkdtempSync(path.join(scratchParent, "forkjoin-bench-merge-corpus-"))
const started = Date.now()
try {
  const corpus = readCases(corpusDir)
  const own = fs.existsSync(ownDir) ? readCases(ownDir) : []
  note(`merging ${corpus.length} corpus cases from ${corpusDir} and ${own.length} own cases four ways (git, line, full, join)`)
  const all = [...corpus, ...own]
  const compared = await compareAll(scratch, all, (i) => {
    if ((i + 1) % 50 === 0) note(`joined ${i + 1}/${all.length}`)
  })
  const results = compared.results
  report({
    bench: BENCH,
    metric: "grammar_load_ms",
    ours: round(compared.grammarLoadMs),
    peer: null,
    ratio: null,
    peerName: null,
    unit: "ms",
    measures: "loading the runtime and the grammars of the cases' languages once, before the full merges (not in their times)",
    ...(compared.grammarFailures.length === 0 ? {} : { error: compared.grammarFailures.join("; ") })
  })
  const corpusResults = results.slice(0, corpus.length)
  reportSet("corpus", corpusResults.filter((r) => !r.case.finalNewlineChange))
  const newline = corpusResults.filter((r) => r.case.finalNewlineChange)
  if (newline.length > 0) reportSet("corpus_final_newline", newline)
  if (own.length === 0) report(errorFigure(BENCH, "outcomes_own_total", `no own cases in ${ownDir}`))
  else reportSet("own", results.slice(corpus.length))
} catch (e) {
  report(errorFigure(BENCH, "setup", `threw: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`))
} finally {
  fs.rmSync(scratch, { recursive: true, force: true })
}
note(`done in ${round((Date.now() - started) / 1000, 1)} s`)
if (!json) printTable(figures)
if (failed) {
  note("FAILED: at least one figure has an error (see above)")
  process.exitCode = 1
}
