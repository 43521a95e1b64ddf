/**
 * The comparison behind the `merge-corpus` bench and its regression test: every three-way merge
 * case of a folder in the corpus layout (`<group>/<case>/{Base,Left,Right,Expected}.<ext>` and
 * `meta.json`) merged four ways, `git merge-file -p`, forkjoin's line merge (`mergeFile` without
 * syntax), forkjoin's full merge (`mergeFile` with the parser of the file's language, loaded from
 * the packaged grammars) and the real orchestrator join of two children (a = Base→Left,
 * b = Base→Right, b joined after a, each exported byte-exact from an overlay), each result
 * classified against Expected.
 *
 * Owns reading cases, classifying results and the JSON duplicate-key check. Does not own any
 * merge: it only calls git, `@forkjoin/merge` and the orchestrator.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import path from "node:path"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { openStateDirectory } from "../../packages/engine/src/Policy.ts"
import { type FileMergeOutcome, mergeFile, syntaxContext } from "../../packages/merge/src/FileMerge.ts"
import { Grammars } from "../../packages/merge/src/Grammars.ts"
import { type Language, languageOfPath, type SyntaxParser } from "../../packages/merge/src/Syntax.ts"
import { defaultLabels } from "../../packages/merge/src/TextMerge.ts"
import * as OrchestratorRun from "../../packages/orchestrator/src/Run.ts"
import { sameBytes } from "../../packages/patch/src/Bytes.ts"
import { BlobStore } from "../../packages/runtime/src/BlobStore.ts"
import * as Overlay from "../../packages/runtime/src/Overlay.ts"
import * as RunPlan from "../../packages/runtime/src/RunPlan.ts"
import { encodeChangeset } from "../../packages/runtime/src/Session.ts"
import * as WriteScope from "../../packages/runtime/src/WriteScope.ts"
import { TaskId, ThreadId } from "../../packages/schema/src/Ids.ts"

/** The four ways a case is merged, in report order. */
export const METHODS = ["git", "line", "full", "join"] as const

/** One of `METHODS`. */
export type Method = (typeof METHODS)[number]

/** The loaded parsers by language: what lets the full merge merge by syntax. */
export type Parsers = ReadonlyMap<Language, SyntaxParser>

/**
 * The parsers of `languages` from the merge's packaged grammars (the ones the join loads), with
 * the time the loads took and one line per grammar that failed to load (its files then merge by
 * lines, as in a join).
 */
export const loadParsers = (languages: Iterable<Language>): Promise<{ readonly parsers: Parsers; readonly ms: number; readonly failures: ReadonlyArray<string> }> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const grammars = yield* Grammars
      const parsers = new Map<Language, SyntaxParser>()
      const failures: Array<string> = []
      const t0 = nowMs()
      for (const language of new Set(languages)) {
        const parser = yield* grammars.parser(language).pipe(Effect.result)
        if (Result.isSuccess(parser)) parsers.set(language, parser.success)
        else failures.push(parser.failure.message)
      }
      return { parsers, ms: nowMs() - t0, failures }
    }).pipe(Effect.provide(Grammars.layer))
  )

/**
 * forkjoin's full merge of one file, what a join does with a path both sides edited: the line
 * merge, and by syntax tree (within the join's time budget per file) when a parser of the file's
 * language is loaded.
 */
export const fullMerge = (
  parsers: Parsers,
  language: Language | undefined,
  sides: { readonly base: Uint8Array; readonly ours: Uint8Array; readonly theirs: Uint8Array }
): FileMergeOutcome => {
  const parser = language === undefined ? undefined : parsers.get(language)
  if (parser === undefined) return mergeFile(sides)
  return mergeFile(sides, defaultLabels, { syntax: syntaxContext(parser, Date.now) })
}

/** One case on disk: its id (`<group>/<name>`), the four versions and what meta.json says. */
export interface MergeCase {
  readonly id: string
  readonly dir: string
  readonly ext: string
  /** The file's path in its project (meta.json `path`), where the join writes it. */
  readonly relPath: string
  /** The grammar's language of `relPath`, or `other` when none covers it. */
  readonly language: Language | "other"
  readonly base: Uint8Array
  readonly left: Uint8Array
  readonly right: Uint8Array
  readonly expected: Uint8Array
  /** An own case built so that every correct merge holds it (meta.json `"expect": "held"`). */
  readonly mustHold: boolean
  /** The four versions do not agree on ending with a newline (reported apart). */
  readonly finalNewlineChange: boolean
}

const endsWithNewline = (b: Uint8Array): boolean => b.length > 0 && b[b.length - 1] === 0x0a

/**
 * Every case below `root` (two levels: group, case), sorted by id. A case folder without the
 * four versions is an error naming it: a corpus with holes would make the figures lie.
 */
export const readCases = (root: string): ReadonlyArray<MergeCase> => {
  const out: Array<MergeCase> = []
  const dirs = (d: string) => fs.readdirSync(d, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort()
  for (const group of dirs(root)) {
    for (const name of dirs(path.join(root, group))) {
      const dir = path.join(root, group, name)
      const id = `${group}/${name}`
      const baseName = fs.readdirSync(dir).find((f) => f.startsWith("Base."))
      if (baseName === undefined) throw new Error(`merge case ${id}: no Base.<ext> in ${dir}`)
      const ext = baseName.slice("Base.".length)
      const read = (side: string): Uint8Array => {
        const file = path.join(dir, `${side}.${ext}`)
        if (!fs.existsSync(file)) throw new Error(`merge case ${id}: ${side}.${ext} is missing in ${dir}`)
        return new Uint8Array(fs.readFileSync(file))
      }
      const metaFile = path.join(dir, "meta.json")
      const meta: unknown = fs.existsSync(metaFile) ? JSON.parse(fs.readFileSync(metaFile, "utf8")) : {}
      const field = (key: string): unknown => (typeof meta === "object" && meta !== null ? (meta as Record<string, unknown>)[key] : undefined)
      const metaPath = field("path")
      const relPath = typeof metaPath === "string" && metaPath !== "" ? metaPath : `file.${ext}`
      const base = read("Base")
      const left = read("Left")
      const right = read("Right")
      const expected = read("Expected")
      const newlines = new Set([base, left, right, expected].map(endsWithNewline))
      out.push({
        id,
        dir,
        ext,
        relPath,
        language: languageOfPath(relPath) ?? "other",
        base,
        left,
        right,
        expected,
        mustHold: field("expect") === "held",
        finalNewlineChange: newlines.size > 1
      })
    }
  }
  return out
}

/** How one method did on one case. */
export type Verdict = "equal" | "held" | "different"

/** One method's result on one case: the verdict, the merged bytes when clean, what they break, its time. */
export interface MethodResult {
  readonly verdict: Verdict
  readonly bytes?: Uint8Array
  /** Clean and the JSON now has a key twice in one object where no input had. */
  readonly duplicateKey: boolean
  /** Clean JSON that no longer parses although all three inputs did. */
  readonly brokenJson: boolean
  /** Clean and merged by syntax tree (not by lines). */
  readonly structured: boolean
  readonly ms: number
  /** Set when the method could not run on this case (the case counts for none of the verdicts). */
  readonly error?: string
}

/** All four methods on one case. */
export interface CaseResult {
  readonly case: MergeCase
  readonly results: Readonly<Record<Method, MethodResult>>
}

// ---------------------------------------------------------------------------------------------
// JSON checks

/**
 * The duplicated keys of a JSON text as `<object path> <key>` strings (a path of keys and array
 * indices), or `undefined` when the text is not JSON. `JSON.parse` keeps the last of two equal
 * keys silently, so the text is scanned for them.
 */
export const duplicateJsonKeys = (text: string): ReadonlySet<string> | undefined => {
  try {
    JSON.parse(text)
  } catch {
    return undefined
  }
  // The text is valid JSON: a scan of strings and brackets is enough to see every key.
  const dups = new Set<string>()
  interface Frame {
    readonly kind: "object" | "array"
    readonly path: string
    readonly keys: Set<string>
    index: number
    expectKey: boolean
    lastKey: string
  }
  const stack: Array<Frame> = []
  const childPath = (): string => {
    const top = stack[stack.length - 1]
    if (top === undefined) return ""
    return top.kind === "object" ? `${top.path}/${top.lastKey}` : `${top.path}/${top.index}`
  }
  let i = 0
  while (i < text.length) {
    const c = text[i]!
    if (c === "\"") {
      let j = i + 1
      while (text[j] !== "\"") j += text[j] === "\\" ? 2 : 1
      const top = stack[stack.length - 1]
      if (top?.kind === "object" && top.expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string
        if (top.keys.has(key)) dups.add(`${top.path === "" ? "/" : top.path} ${JSON.stringify(key)}`)
        top.keys.add(key)
        top.lastKey = key
        top.expectKey = false
      }
      i = j + 1
      continue
    }
    if (c === "{" || c === "[") {
      stack.push({ kind: c === "{" ? "object" : "array", path: childPath(), keys: new Set(), index: 0, expectKey: c === "{", lastKey: "" })
    } else if (c === "}" || c === "]") {
      stack.pop()
    } else if (c === ",") {
      const top = stack[stack.length - 1]
      if (top !== undefined) {
        if (top.kind === "object") top.expectKey = true
        else top.index++
      }
    }
    i++
  }
  return dups
}

const utf8 = new TextDecoder("utf-8", { fatal: false })

/** What a clean JSON result breaks: a key twice where no input had it twice, or no longer JSON. */
const jsonDamage = (c: MergeCase, merged: Uint8Array): { readonly duplicateKey: boolean; readonly brokenJson: boolean } => {
  if (c.language !== "json") return { duplicateKey: false, brokenJson: false }
  const inputs = [c.base, c.left, c.right].map((b) => duplicateJsonKeys(utf8.decode(b)))
  const got = duplicateJsonKeys(utf8.decode(merged))
  if (got === undefined) return { duplicateKey: false, brokenJson: inputs.every((d) => d !== undefined) }
  const before = new Set(inputs.flatMap((d) => (d === undefined ? [] : [...d])))
  return { duplicateKey: [...got].some((k) => !before.has(k)), brokenJson: false }
}

const clean = (c: MergeCase, bytes: Uint8Array, ms: number, structured = false): MethodResult => ({
  verdict: sameBytes(bytes, c.expected) ? "equal" : "different",
  bytes,
  ...jsonDamage(c, bytes),
  structured,
  ms
})

const held = (ms: number): MethodResult => ({ verdict: "held", duplicateKey: false, brokenJson: false, structured: false, ms })

const failed = (ms: number, error: string): MethodResult => ({ ...held(ms), error })

const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6

// ---------------------------------------------------------------------------------------------
// The library merges and git

/** What a `mergeFile` outcome leaves in the file (ours = Left, theirs = Right), or `undefined` when held. */
export const mergedBytes = (c: MergeCase, o: FileMergeOutcome): Uint8Array | undefined => {
  switch (o._tag) {
    case "Unchanged":
    case "Converged":
      return c.left
    case "TakeTheirs":
      return o.bytes ?? new Uint8Array(0)
    case "AutoMerged":
      return o.bytes
    case "Conflict":
      return undefined
  }
}

const library = (c: MergeCase, parsers: Parsers): MethodResult => {
  const t0 = nowMs()
  const o = fullMerge(parsers, c.language === "other" ? undefined : c.language, { base: c.base, ours: c.left, theirs: c.right })
  const ms = nowMs() - t0
  const bytes = mergedBytes(c, o)
  return bytes === undefined ? held(ms) : clean(c, bytes, ms, o._tag === "AutoMerged" && o.method === "structured")
}

/** `git merge-file -p Left Base Right` on the case's own files (exit 0 clean, 1..127 conflicts). */
const gitMergeFile = (c: MergeCase): MethodResult => {
  const side = (s: string) => path.join(c.dir, `${s}.${c.ext}`)
  const t0 = nowMs()
  const r = spawnSync("git", ["merge-file", "-p", side("Left"), side("Base"), side("Right")], { maxBuffer: 256 * 1024 * 1024 })
  const ms = nowMs() - t0
  if (r.error !== undefined) return failed(ms, `git merge-file could not start: ${r.error.message}`)
  if (r.status === 0) return clean(c, new Uint8Array(r.stdout), ms)
  if (r.status !== null && r.status > 0 && r.status < 128) return held(ms)
  return failed(ms, `git merge-file exited ${String(r.status ?? r.signal)}: ${r.stderr.toString("utf8").trim()}`)
}

// ---------------------------------------------------------------------------------------------
// The join

const BENCH_THREAD = ThreadId.make("merge-corpus")
const EXEMPT = { _tag: "Exempt", reason: "merge corpus scratch workspace" } as const
const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/**
 * One child's changeset, exported by a real overlay over the workspace (its one file replaced by
 * `bytes`, exactly), into `<dir>/changeset.json` with its blobs in `<dir>/blobs/sha256/`.
 */
const exportChild = (dir: string, id: string, relPath: string, bytes: Uint8Array) =>
  Effect.gen(function*() {
    const overlay = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe([relPath]) })
    yield* overlay.writeFile(relPath, bytes)
    const changeset = yield* overlay.export({ childId: TaskId.make(id), taskId: TaskId.make(id), threadId: BENCH_THREAD }).pipe(
      Effect.provide(BlobStore.layerDirectory(path.join(dir, "blobs"), { fsync: false }))
    )
    fs.writeFileSync(path.join(dir, "changeset.json"), JSON.stringify(encodeChangeset(changeset)))
  })

/** Joins one case in the workspace the layer is over: Base written, a and b exported, then the plan run. */
const joinCase = (root: string, scratch: string, c: MergeCase, n: number) =>
  Effect.gen(function*() {
    const rel = `cases/${String(n).padStart(4, "0")}/${c.relPath}`
    const abs = path.join(root, ...rel.split("/"))
    fs.mkdirSync(path.dirname(abs), { recursive: true })
    fs.writeFileSync(abs, c.base)
    const planDir = path.join(scratch, String(n))
    for (const [id, bytes] of [["a", c.left], ["b", c.right]] as const) {
      fs.mkdirSync(path.join(planDir, id), { recursive: true })
      yield* exportChild(path.join(planDir, id), id, rel, bytes)
    }
    const task = (id: string) => ({ id, mode: "transactional_write", writeScope: [rel], changesetFile: `${id}/changeset.json` })
    const plan = RunPlan.decode({ schemaVersion: 1, tasks: [task("a"), task("b")] })
    if (Result.isFailure(plan)) return yield* Effect.fail(new Error(plan.failure.message))
    const t0 = nowMs()
    const outcome = yield* OrchestratorRun.runPlan(plan.success, { planDirectory: planDir, callerThreadId: BENCH_THREAD, admission: EXEMPT })
    const ms = nowMs() - t0
    const [a, b] = ["a", "b"].map((id) => outcome.run.outcomes.find((o) => o.childId === id))
    if (a === undefined || !["applied", "auto_merged"].includes(a.status)) {
      return failed(ms, `child a (Base to Left) ended ${a?.status ?? "without an outcome"}${a?.reason === undefined ? "" : `: ${a.reason}`}`)
    }
    if (b === undefined) return failed(ms, "child b has no outcome")
    if (b.status === "conflicted_unresolved" && (b.conflictPaths ?? []).some((p) => p === rel)) return held(ms)
    // noop: the merge left the live file as it was (Left already held Right's change).
    if (!["applied", "auto_merged", "noop"].includes(b.status)) {
      return failed(ms, `child b (Base to Right) ended ${b.status}${b.reason === undefined ? "" : `: ${b.reason}`}`)
    }
    return clean(c, new Uint8Array(fs.readFileSync(abs)), ms, (b.mergedPaths ?? []).some((m) => m.path === rel && m.method === "structured"))
  }).pipe(Effect.catchCause((cause) => Effect.succeed(failed(0, `the join failed: ${errorText(Cause.squash(cause))}`))))

/**
 * Joins every case through the real orchestrator in one scratch workspace (`<scratch>/ws`, its
 * own history database), one run of two children per case. `onCase` is told each result.
 */
export const joinAll = (scratch: string, cases: ReadonlyArray<MergeCase>, onCase?: (i: number) => void): Promise<ReadonlyArray<MethodResult>> => {
  const root = path.join(scratch, "ws")
  fs.mkdirSync(root, { recursive: true })
  const opened = openStateDirectory(root)
  if (Result.isFailure(opened)) return Promise.reject(new Error(opened.failure.message))
  const plans = path.join(scratch, "plans")
  return Effect.runPromise(
    Effect.forEach(cases, (c, i) => joinCase(root, plans, c, i).pipe(Effect.tap(() => Effect.sync(() => onCase?.(i))))).pipe(
      Effect.provide(OrchestratorRun.layer(root, path.join(root, ".forkjoin", "history.db")))
    )
  )
}

/** The library merges (the line merge: no parsers) and git on one case (the join is run for all cases at once by `joinAll`). */
export const compareInProcess = (c: MergeCase, parsers: Parsers): Readonly<Record<Exclude<Method, "join">, MethodResult>> => ({
  git: gitMergeFile(c),
  line: library(c, new Map()),
  full: library(c, parsers)
})

/** Every case merged all four ways (the join in `scratch`), and what loading the grammars cost. */
export const compareAll = async (
  scratch: string,
  cases: ReadonlyArray<MergeCase>,
  onCase?: (i: number) => void
): Promise<{ readonly results: ReadonlyArray<CaseResult>; readonly grammarLoadMs: number; readonly grammarFailures: ReadonlyArray<string> }> => {
  const loaded = await loadParsers(cases.flatMap((c) => (c.language === "other" ? [] : [c.language])))
  const joined = await joinAll(scratch, cases, onCase)
  return {
    results: cases.map((c, i) => ({ case: c, results: { ...compareInProcess(c, loaded.parsers), join: joined[i]! } })),
    grammarLoadMs: loaded.ms,
    grammarFailures: loaded.failures
  }
}

// ---------------------------------------------------------------------------------------------
// Tallies

/** One method's counts over a set of cases, and its time. */
export interface Tally {
  readonly cases: number
  readonly equal: number
  readonly held: number
  readonly different: number
  readonly duplicateKey: number
  readonly brokenJson: number
  /** Clean results merged by syntax tree. */
  readonly structured: number
  readonly errors: number
  readonly totalMs: number
  readonly maxCaseMs: number
}

/** Counts `method`'s verdicts over `results`. */
export const tally = (results: ReadonlyArray<CaseResult>, method: Method): Tally => {
  const rs = results.map((r) => r.results[method])
  const ok = rs.filter((r) => r.error === undefined)
  return {
    cases: rs.length,
    equal: ok.filter((r) => r.verdict === "equal").length,
    held: ok.filter((r) => r.verdict === "held").length,
    different: ok.filter((r) => r.verdict === "different").length,
    duplicateKey: ok.filter((r) => r.duplicateKey).length,
    brokenJson: ok.filter((r) => r.brokenJson).length,
    structured: ok.filter((r) => r.structured).length,
    errors: rs.length - ok.length,
    totalMs: rs.reduce((s, r) => s + r.ms, 0),
    maxCaseMs: rs.reduce((m, r) => Math.max(m, r.ms), 0)
  }
}

/** Whether two results of a case are the same answer: both held, or both clean with equal bytes. */
export const sameAnswer = (a: MethodResult, b: MethodResult): boolean =>
  a.bytes === undefined || b.bytes === undefined ? a.bytes === b.bytes && a.verdict === b.verdict : sameBytes(a.bytes, b.bytes)
