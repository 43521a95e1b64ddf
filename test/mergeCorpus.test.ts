/**
 * Regression guard over real merges (the shared corpus, FORKJOIN_MERGE_CORPUS_DIR) and the own
 * order-insensitive cases (test/merge-cases): the comparison of the `merge-corpus` bench, with
 * its invariants asserted instead of its counts. The join (the real orchestrator, two exported
 * children per case) gives the library's full merge on every case; forkjoin is never clean but
 * different more often than `git merge-file`; no clean merge repeats a JSON key; the cases made
 * to stay held stay held; every own case defeats the line merge alone. Absent corpus: skipped with a message, a failure under CI.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type CaseResult,
  compareAll,
  duplicateJsonKeys,
  type MergeCase,
  readCases,
  sameAnswer,
  tally
} from "./bench/mergeCorpus.ts"
import { withSharedFixture } from "./support/fixtures.ts"
import { projectRoot, sharedDir } from "./support/tree.ts"

const JOIN_TIMEOUT_MS = 900_000

const corpus = sharedDir("FORKJOIN_MERGE_CORPUS_DIR", "merge-corpus")
const ownDir = path.join(projectRoot, "test", "merge-cases")

const describeCase = (r: CaseResult, what: string): string => `${r.case.id}: ${what}`

/** The invariants of one set of cases, merged four ways once in `beforeAll`. */
const invariants = (load: () => ReadonlyArray<MergeCase>) => {
  let scratch = ""
  let results: ReadonlyArray<CaseResult> = []
  beforeAll(async () => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), "fj-merge-corpus-"))
    const compared = await compareAll(scratch, load())
    expect(compared.grammarFailures).toEqual([])
    results = compared.results
  }, JOIN_TIMEOUT_MS)
  afterAll(() => {
    if (scratch !== "") fs.rmSync(scratch, { recursive: true, force: true })
  })

  it("merges every case every way without an error", () => {
    expect(results.length).toBeGreaterThan(0)
    const errors = results.flatMap((r) => Object.entries(r.results).flatMap(([m, x]) => (x.error === undefined ? [] : [describeCase(r, `${m}: ${x.error}`)])))
    expect(errors).toEqual([])
  })

  it("joins each case to exactly the library's full merge (held, or the same bytes)", () => {
    const mismatched = results.filter((r) => !sameAnswer(r.results.join, r.results.full)).map((r) =>
      describeCase(r, `join ${r.results.join.verdict}, full merge ${r.results.full.verdict}`)
    )
    expect(mismatched).toEqual([])
  })

  it("is clean but different from Expected no more often than git merge-file", () => {
    const git = tally(results, "git").different
    const worse = (["line", "full", "join"] as const)
      .filter((m) => tally(results, m).different > git)
      .map((m) => `${m}: ${tally(results, m).different} (${results.filter((r) => r.results[m].verdict === "different").map((r) => r.case.id).join(", ")})`)
    expect(worse, `git merge-file is clean but different on ${git}`).toEqual([])
  })

  it("holds every case built to stay held (the same member changed two ways)", () => {
    const notHeld = results.filter((r) => r.case.mustHold && (r.results.full.verdict !== "held" || r.results.join.verdict !== "held")).map((r) =>
      describeCase(r, `full merge ${r.results.full.verdict}, join ${r.results.join.verdict}`)
    )
    expect(notHeld).toEqual([])
  })

  it("never merges cleanly into a repeated JSON key or broken JSON (full merge and join)", () => {
    const damaged = results.flatMap((r) =>
      (["full", "join"] as const).flatMap((m) =>
        r.results[m].duplicateKey || r.results[m].brokenJson ? [describeCase(r, `${m}: ${r.results[m].duplicateKey ? "a repeated key" : "no longer JSON"}`)] : []
      )
    )
    expect(damaged).toEqual([])
  })

  return () => results
}

describe("duplicateJsonKeys", () => {
  it("finds a key repeated in one object, at any depth, and only there", () => {
    expect([...duplicateJsonKeys(`{"a": 1, "b": {"c": 1, "c": 2}, "a": [{"x": 1, "x": 2}]}`)!].sort()).toEqual(["/ \"a\"", "/a/0 \"x\"", "/b \"c\""])
    expect([...duplicateJsonKeys(`{"a": {"k": 1}, "b": {"k": 1}, "c": [{"k": 1}, {"k": 2}]}`)!]).toEqual([])
  })

  it("reads keys as JSON strings: escapes name the same key, strings that look like keys are values", () => {
    expect([...duplicateJsonKeys(`{"\\u0061": 1, "a": 2}`)!]).toEqual(["/ \"a\""])
    expect([...duplicateJsonKeys(`{"a": "b", "b": "a,\\"a\\": 1", "c": ["a", "a"]}`)!]).toEqual([])
  })

  it("says a text that is not JSON has no answer", () => {
    expect(duplicateJsonKeys(`{"a": 1,, }`)).toBeUndefined()
    expect(duplicateJsonKeys("<<<<<<< ours\n{}\n")).toBeUndefined()
  })
})

describe("own merge cases (test/merge-cases)", () => {
  const cases = readCases(ownDir)
  const results = invariants(() => cases)

  it("cover every order-insensitive shape of each language, and elements wrapped or changed in place, each with cases to merge", () => {
    const shapes = new Set(cases.filter((c) => !c.mustHold).map((c) => `${c.language}/${c.id.split("/")[1]!.replace(/-\d+$/, "")}`))
    expect([...shapes].sort()).toEqual([
      "javascript/changed-in-place",
      "javascript/class-members",
      "javascript/imports",
      "javascript/object-keys",
      "javascript/wrapped-element",
      "json/nested-objects",
      "json/object-keys",
      "python/class-members",
      "python/dict-keys",
      "python/imports",
      "python/wrapped-element",
      "typescript/class-members",
      "typescript/enum-members",
      "typescript/imports",
      "typescript/interface-fields",
      "typescript/object-keys",
      "typescript/union-arms",
      "typescript/wrapped-element"
    ])
  })

  it("each defeat the line merge alone: it holds the case or repeats a key", () => {
    const easy = results().filter((r) => !r.case.mustHold && r.results.line.verdict !== "held" && !r.results.line.duplicateKey).map((r) =>
      describeCase(r, `line merge ${r.results.line.verdict}`)
    )
    expect(easy).toEqual([])
  })
})

describe("merge corpus (real merges)", () =>
  withSharedFixture(corpus, "FORKJOIN_MERGE_CORPUS_DIR", () => {
    invariants(() => readCases(corpus.dir))
  }))
