/**
 * `merge` bench: the three-way text merge (`@forkjoin/merge/TextMerge`) against `git merge-file`,
 * and the two diff3 libraries the project card names (adrs/20261130-diff3.md).
 *
 * 1. `merge_10k_ms`               a 10,000-line file, two children with 50 non-overlapping hunks
 *                                 each: our `mergeText` (sync points, anchored two-way diffs,
 *                                 node-diff3 in the gaps) in process vs `git merge-file -p` as a
 *                                 whole process, interleaved (target: ratio <= 2). Our bytes,
 *                                 git's bytes and both edits applied directly must be identical.
 * 2. `merge_10k_diff3_ms`         the same merge with the `diff3` package (0.0.3) between sync points.
 * 3. `merge_10k_raw_node_diff3_ms` node-diff3's own `diff3Merge` on the whole file (one run).
 * 4. `merge_10k_raw_diff3_ms`     `diff3` on the whole file (no sync points).
 * 5. `rewrite_2k_ms`              ours rewrote every line of a 2,000-line file, theirs edited 10
 *                                 lines: a conflict; our conflict text (with the join's marker
 *                                 labels) must equal git's `--diff3` output given the same labels
 *                                 (`-L workspace -L baseline -L <child>`). `rewrite_2k_diff3_ms`:
 *                                 the same with `diff3`.
 * 5b. `repetitive_5k_ms`          5,000 lines over 5 distinct values, 50 edits per child: node-diff3's
 *                                 worst case, bounded by our step budget (ours: a conflict; git: clean).
 * 6. `library_agreement`          node-diff3 vs `diff3` vs git on tricky and random small inputs:
 *                                 how often the conflict status or the merged text differ.
 *
 * Usage: `npm run bench -- merge [--json] [--only metric[,metric]]`.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import os from "node:os"
import path from "node:path"
import { joinMarkerLabels } from "../../packages/merge/src/ChildPlan.ts"
import { anchored, type Diff3, fromLibrary, type LibraryMerge, libraryNodeDiff3, nodeDiff3 } from "../../packages/merge/src/internal/diff3.ts"
import { mergeTextWith } from "../../packages/merge/src/internal/textMerge.ts"
import { mergeText } from "../../packages/merge/src/TextMerge.ts"
import type { MarkerLabels, TextMerge } from "../../packages/merge/src/TextMerge.ts"
import { sameBytes } from "../../packages/patch/src/Bytes.ts"
import { TaskId } from "../../packages/schema/src/Ids.ts"
import { makeFormatWorkload, mulberry32 } from "./fixture.ts"
import { emitJson, errorFigure, type Figure, firstDifference, median, note, onlyMetrics, printTable, round, runFailure, spread, timed, timeSpawn, wantsJson, gc } from "./harness.ts"

const BENCH = "merge"
const SEED = 0x0d1f_f3e3
const LINES = 10_000
const HUNKS_PER_CHILD = 50
const REWRITE_LINES = 2_000
const TARGET_RATIO = 2
const WARMUP = 8
const RUNS = 25
const SLOW_WARMUP = 1
const SLOW_RUNS = 7
/** node-diff3 alone on the 10,000-line file takes tens of seconds: one checked run. */
const RAW_NODE_RUNS = 1
const PEER = "git merge-file -p"
const SHIPPED = "mergeText: sync points, anchored two-way diffs, node-diff3 3.2.1 diffIndices in gaps"
/** The markers a join writes for a child with this id; git is given the same three labels. */
const LABELS = joinMarkerLabels(TaskId.make("second"))

const argv = process.argv.slice(2)
const json = wantsJson(argv)
const only = onlyMetrics(argv)
const enabled = (metric: string): boolean => only === undefined || only.has(metric)

const figures: Array<Figure> = []
let failed = false
const report = (measured: Figure): void => {
  // The 1-minute load average when the figure was finished: other processes skew timings.
  const figure: Figure = { ...measured, load1: round(os.loadavg()[0] ?? 0, 2) }
  figures.push(figure)
  if (figure.error !== undefined) failed = true
  if (json) emitJson(figure)
}
const errorText = (e: unknown): string => (e instanceof Error ? (e.stack ?? e.message) : String(e))

// `diff3` 0.0.3 has no types; its export is `(a, o, b) => Array<{ ok } | { conflict }>` like node-diff3's.
const requireHere = createRequire(import.meta.url)
const legacyDiff3: LibraryMerge = requireHere("diff3")
const rawLegacy: Diff3 = fromLibrary(legacyDiff3)

type Engine = (base: Uint8Array, ours: Uint8Array, theirs: Uint8Array) => TextMerge
const labelled = (merge: (b: Uint8Array, o: Uint8Array, t: Uint8Array, labels: MarkerLabels) => TextMerge): Engine => (b, o, t) =>
  merge(b, o, t, LABELS)
const engines = {
  shipped: labelled(mergeText),
  diff3: labelled(mergeTextWith(anchored(rawLegacy))),
  rawNodeDiff3: labelled(mergeTextWith(libraryNodeDiff3)),
  rawDiff3: labelled(mergeTextWith(rawLegacy))
} as const

const encode = (lines: ReadonlyArray<string>): Uint8Array => Buffer.from(lines.join(""), "utf8")

// ---------------------------------------------------------------------------------------------
// Workloads

interface Workload {
  readonly base: Uint8Array
  readonly ours: Uint8Array
  readonly theirs: Uint8Array
  /** Both children's edits applied directly to the base (clean workloads only). */
  readonly expected: Uint8Array | undefined
}

/**
 * A realistic source file (the format bench's generator) and 2 × `hunks` edits, one per slot of
 * `lines / (2 × hunks)` lines, alternating between the children, so no two edits are near.
 * Each edit replaces, inserts or deletes 1–3 lines; new lines are unique.
 */
const makeMergeWorkload = (seed: number, lines: number, hunks: number): Workload => {
  const base = makeFormatWorkload(seed, lines, 1).original.split("\n").slice(0, lines).map((l) => `${l}\n`)
  const rnd = mulberry32(seed ^ 0x5a5a)
  const int = (n: number) => Math.floor(rnd() * n)
  const slots = 2 * hunks
  const slot = Math.floor(lines / slots)
  const ours = [...base]
  const theirs = [...base]
  const expected = [...base]
  // From the end, so earlier indices stay valid in all three arrays.
  for (let k = slots - 1; k >= 0; k--) {
    const at = k * slot + Math.floor(slot / 4) + int(Math.floor(slot / 2))
    const who = k % 2 === 0 ? "ours" : "theirs"
    const fresh = Array.from({ length: 1 + int(3) }, (_, i) => `  const edited_${who}_${k}_${i} = ${int(1e6)} // by ${who}\n`)
    const kind = int(3)
    const del = kind === 1 ? 0 : 1 + int(3)
    const ins = kind === 2 ? [] : fresh
    ;(who === "ours" ? ours : theirs).splice(at, del, ...ins)
    expected.splice(at, del, ...ins)
  }
  return { base: encode(base), ours: encode(ours), theirs: encode(theirs), expected: encode(expected) }
}

/** Ours rewrote every line; theirs edited 10 lines: one whole-file conflict. */
const makeRewriteWorkload = (seed: number, lines: number): Workload => {
  const base = makeFormatWorkload(seed, lines, 1).original.split("\n").slice(0, lines).map((l) => `${l}\n`)
  const ours = base.map((l, i) => `${l.trimEnd()} // rewritten ${i}\n`)
  const theirs = [...base]
  for (let k = 0; k < 10; k++) theirs[Math.floor(((k + 0.5) * lines) / 10)] = `  const theirs_${k} = ${k}\n`
  return { base: encode(base), ours: encode(ours), theirs: encode(theirs), expected: undefined }
}

// ---------------------------------------------------------------------------------------------
// git merge-file as a process

const tmp = mkdtempSync(path.join(os.tmpdir(), "forkjoin-bench-merge-"))
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }))

interface GitFiles {
  readonly ours: string
  readonly base: string
  readonly theirs: string
}

const writeSides = (name: string, w: Workload): GitFiles => {
  const files = { ours: path.join(tmp, `${name}.ours`), base: path.join(tmp, `${name}.base`), theirs: path.join(tmp, `${name}.theirs`) }
  writeFileSync(files.ours, w.ours)
  writeFileSync(files.base, w.base)
  writeFileSync(files.theirs, w.theirs)
  return files
}

/**
 * `git merge-file -p` (exit status = number of conflicts); with `markers`, in diff3 style with
 * the join's marker labels, so its conflict text is comparable to ours byte for byte.
 */
const gitMerge = (f: GitFiles, markers = false) =>
  timeSpawn("git", ["merge-file", "-p", ...(markers ? ["--diff3", "-L", LABELS.ours, "-L", LABELS.base, "-L", LABELS.theirs] : []), f.ours, f.base, f.theirs])

/** One git run: its time, or why it is not the run we expect (`check` sees stdout and the conflict count). */
const gitRun = (f: GitFiles, markers: boolean, check: (out: Uint8Array, conflicts: number) => string | undefined): { ms: number } | { error: string } => {
  const t = gitMerge(f, markers)
  const r = t.result
  // merge-file exits with the number of conflicts; negative or a signal is a failure.
  if (r.error !== undefined || r.signal !== null || r.status === null || r.status < 0) return { error: runFailure("git merge-file", r) ?? "git merge-file failed" }
  const bad = check(r.stdout, r.status)
  return bad === undefined ? { ms: t.ms } : { error: bad }
}

// ---------------------------------------------------------------------------------------------
// Measuring: ours in process and git as a process, interleaved (alternating who goes first),
// so load from other processes on this shared machine hits both alike.

interface Variant {
  readonly metric: string
  readonly merge: () => TextMerge
  readonly engine: string
  readonly warmup: number
  readonly runs: number
}

const measure = (
  v: Variant,
  check: (r: TextMerge) => string | undefined,
  peer: (() => { ms: number } | { error: string }) | undefined
): { ours: Array<number>; peer: Array<number> } | { error: string } => {
  const first = timed(v.merge)
  const bad = check(first.value)
  if (bad !== undefined) return { error: bad }
  for (let i = 0; i < v.warmup; i++) {
    v.merge()
    peer?.()
  }
  const ours: Array<number> = []
  const theirs: Array<number> = []
  // One run is enough for a variant that takes seconds: the checked first run is the sample.
  if (v.runs === 1) ours.push(first.ms)
  for (let i = 0; i < v.runs; i++) {
    const order = i % 2 === 0 ? (["ours", "peer"] as const) : (["peer", "ours"] as const)
    for (const who of order) {
      if (who === "ours" && v.runs > 1) {
        gc()
        const t = timed(v.merge)
        const again = check(t.value)
        if (again !== undefined) return { error: `run ${i}: ${again}` }
        ours.push(t.ms)
      } else if (who === "peer" && peer !== undefined) {
        const p = peer()
        if ("error" in p) return { error: `git run ${i}: ${p.error}` }
        theirs.push(p.ms)
      }
    }
  }
  return { ours, peer: theirs }
}

const figureOf = (v: Variant, m: { ours: Array<number>; peer: Array<number> }, peerName: string, extra: Partial<Figure>): Figure => {
  const o = median(m.ours)
  const p = m.peer.length > 0 ? median(m.peer) : null
  return {
    bench: BENCH,
    metric: v.metric,
    ours: round(o),
    peer: p === null ? null : round(p),
    ratio: p === null ? null : round(o / p),
    peerName,
    unit: "ms",
    n: m.ours.length,
    engine: v.engine,
    oursSpread: spread(m.ours),
    ...(m.peer.length > 0 ? { peerSpread: spread(m.peer), peerN: m.peer.length } : {}),
    ...extra
  }
}

// ---------------------------------------------------------------------------------------------
// Figures 1–4: the clean 10,000-line merge

const cleanMetrics = ["merge_10k_ms", "merge_10k_diff3_ms", "merge_10k_raw_node_diff3_ms", "merge_10k_raw_diff3_ms"]
if (cleanMetrics.some(enabled)) {
  note(`generating ${LINES} lines with ${HUNKS_PER_CHILD} hunks per child (seed ${SEED.toString(16)})`)
  const w = makeMergeWorkload(SEED, LINES, HUNKS_PER_CHILD)
  const expected = w.expected!
  const files = writeSides("clean", w)
  const checkGit = (out: Uint8Array, conflicts: number) =>
    conflicts !== 0 ? `git reported ${conflicts} conflicts` : !sameBytes(out, expected) ? `git's output differs from both edits applied: ${firstDifference(out, expected)}` : undefined
  const probe = gitRun(files, false, checkGit)
  const peerError = "error" in probe ? probe.error : undefined
  if (peerError !== undefined) note(`peer unavailable or wrong: ${peerError}`)
  const peer = peerError === undefined ? () => gitRun(files, false, checkGit) : undefined

  const checkMerged = (r: TextMerge): string | undefined =>
    r._tag !== "Merged"
      ? `expected a clean merge, got ${r._tag}${r._tag === "Conflict" ? ` (${r.hunks.length} hunks, first at base line ${r.hunks[0]?.baseStart})` : ""}`
      : !r.bothChanged
      ? "bothChanged is false"
      : !sameBytes(r.bytes, expected)
      ? `merged bytes differ from both edits applied: ${firstDifference(r.bytes, expected)}`
      : undefined

  const run = (f: (b: Uint8Array, o: Uint8Array, t: Uint8Array) => TextMerge) => () => f(w.base, w.ours, w.theirs)
  const variants: ReadonlyArray<Variant> = [
    { metric: "merge_10k_ms", merge: run(engines.shipped), engine: SHIPPED, warmup: WARMUP, runs: RUNS },
    { metric: "merge_10k_diff3_ms", merge: run(engines.diff3), engine: "diff3 0.0.3 between sync points", warmup: WARMUP, runs: RUNS },
    { metric: "merge_10k_raw_node_diff3_ms", merge: run(engines.rawNodeDiff3), engine: "node-diff3 3.2.1 diff3Merge on the whole file", warmup: 0, runs: RAW_NODE_RUNS },
    { metric: "merge_10k_raw_diff3_ms", merge: run(engines.rawDiff3), engine: "diff3 0.0.3 on the whole file", warmup: WARMUP, runs: RUNS }
  ]
  for (const v of variants) {
    if (!enabled(v.metric)) continue
    note(`${v.metric}: ${v.engine}`)
    try {
      const m = measure(v, checkMerged, peer)
      if ("error" in m) {
        report(errorFigure(BENCH, v.metric, m.error, { peerName: PEER, engine: v.engine }))
        continue
      }
      const ratio = m.peer.length > 0 ? median(m.ours) / median(m.peer) : null
      report(figureOf(v, m, PEER, {
        target: TARGET_RATIO,
        targetKind: "ratio_max",
        pass: ratio !== null && ratio <= TARGET_RATIO,
        lines: LINES,
        hunksPerChild: HUNKS_PER_CHILD,
        bytes: w.base.length,
        // Every run of ours and of git was checked against both edits applied directly.
        identicalToGit: peerError === undefined,
        ...(peerError !== undefined ? { peerError } : {})
      }))
    } catch (e) {
      report(errorFigure(BENCH, v.metric, `threw: ${errorText(e)}`, { peerName: PEER, engine: v.engine }))
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Figure 5: a whole-file rewrite against a few edits (a conflict)

if (enabled("rewrite_2k_ms") || enabled("rewrite_2k_diff3_ms")) {
  note(`rewrite: ${REWRITE_LINES} lines rewritten by ours, 10 edited by theirs`)
  const w = makeRewriteWorkload(SEED + 1, REWRITE_LINES)
  const files = writeSides("rewrite", w)
  const gitText = gitMerge(files, true).result.stdout
  const checkGit = (out: Uint8Array, conflicts: number) =>
    conflicts === 0 ? "git reported no conflict" : !sameBytes(out, gitText) ? "git's output changed between runs" : undefined
  const probe = gitRun(files, true, checkGit)
  const peerError = "error" in probe ? probe.error : undefined
  if (peerError !== undefined) note(`peer unavailable or wrong: ${peerError}`)
  const peer = peerError === undefined ? () => gitRun(files, true, checkGit) : undefined
  const checkConflict = (r: TextMerge): string | undefined => {
    if (r._tag !== "Conflict") return `expected a conflict, got ${r._tag}`
    const text = Buffer.from(r.text, "utf8")
    return peerError === undefined && !sameBytes(text, gitText) ? `conflict text differs from git --diff3: ${firstDifference(text, gitText)}` : undefined
  }
  const run = (f: (b: Uint8Array, o: Uint8Array, t: Uint8Array) => TextMerge) => () => f(w.base, w.ours, w.theirs)
  const variants: ReadonlyArray<Variant> = [
    { metric: "rewrite_2k_ms", merge: run(engines.shipped), engine: SHIPPED, warmup: SLOW_WARMUP, runs: SLOW_RUNS },
    { metric: "rewrite_2k_diff3_ms", merge: run(engines.diff3), engine: "diff3 0.0.3 between sync points", warmup: SLOW_WARMUP, runs: SLOW_RUNS }
  ]
  for (const v of variants) {
    if (!enabled(v.metric)) continue
    note(`${v.metric}: ${v.engine}`)
    try {
      gc()
      const m = measure(v, checkConflict, peer)
      if ("error" in m) {
        report(errorFigure(BENCH, v.metric, m.error, { peerName: PEER, engine: v.engine }))
        continue
      }
      report(figureOf(v, m, `${PEER} --diff3`, {
        lines: REWRITE_LINES,
        identicalToGit: peerError === undefined,
        // Resident set after the runs: the diff3 package's O(ND) path table is what grows.
        rssMb: round(process.memoryUsage().rss / 1e6, 0),
        ...(peerError !== undefined ? { peerError } : {})
      }))
    } catch (e) {
      report(errorFigure(BENCH, v.metric, `threw: ${errorText(e)}`, { peerName: PEER, engine: v.engine }))
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Figure 5b: only repeated lines (no line is unique), 50 edits per child: node-diff3's worst
// case. Ours stays within its step budget by widening gaps into one region (a conflict here);
// git merges it cleanly.

if (enabled("repetitive_5k_ms")) {
  const metric = "repetitive_5k_ms"
  const n = 5_000
  note(`${metric}: ${n} lines over 5 distinct values, ${HUNKS_PER_CHILD} edits per child`)
  try {
    const base = Array.from({ length: n }, (_, i) => ["a\n", "b\n", "}\n", "\n", "c\n"][(i * 7919) % 5]!)
    const ours = [...base]
    const theirs = [...base]
    const step = n / HUNKS_PER_CHILD
    for (let k = 0; k < HUNKS_PER_CHILD; k++) {
      ours[k * step + 3] = "X\n"
      theirs[k * step + Math.floor(step / 2)] = "Y\n"
    }
    const w: Workload = { base: encode(base), ours: encode(ours), theirs: encode(theirs), expected: undefined }
    const files = writeSides("repetitive", w)
    const gitConflicts = gitMerge(files).result.status
    const v: Variant = { metric, merge: () => engines.shipped(w.base, w.ours, w.theirs), engine: SHIPPED, warmup: SLOW_WARMUP, runs: SLOW_RUNS }
    const outcome = engines.shipped(w.base, w.ours, w.theirs)
    const m = measure(v, (r) => (r._tag === outcome._tag ? undefined : `outcome changed: ${r._tag}`), () => gitRun(files, false, () => undefined))
    if ("error" in m) report(errorFigure(BENCH, metric, m.error, { peerName: PEER, engine: SHIPPED }))
    else report(figureOf(v, m, PEER, { lines: n, oursOutcome: outcome._tag, gitConflicts }))
  } catch (e) {
    report(errorFigure(BENCH, metric, `threw: ${errorText(e)}`, { peerName: PEER, engine: SHIPPED }))
  }
}

// ---------------------------------------------------------------------------------------------
// Figure 6: where the libraries (and git) disagree

if (enabled("library_agreement")) {
  const metric = "library_agreement"
  note(`${metric}: tricky cases and random small inputs`)
  try {
    const L = (s: string): Array<string> => (s === "" ? [] : s.split(",").map((x) => `${x}\n`))
    const tricky: ReadonlyArray<readonly [string, string, string, string]> = [
      ["adjacent edits", "a,b,c,d", "a,B,c,d", "a,b,C,d"],
      ["edit next to an insertion", "a,b,c", "a,B,c", "a,b,x,c"],
      ["one line apart", "a,b,c,d,e", "a,B,c,d,e", "a,b,c,D,e"],
      ["first and last line", "a,b,c,d", "A,b,c,d", "a,b,c,D"],
      ["both edit the first line", "a,b,c", "A,b,c", "X,b,c"],
      ["insertions at one point", "a,b", "a,x,b", "a,y,b"],
      ["same insertion at one point", "a,b", "a,x,b", "a,x,b"],
      ["insertions at the start", "a,b", "x,a,b", "y,a,b"],
      ["insertions at the end", "a,b", "a,b,x", "a,b,y"],
      ["identical changes", "a,b,c,d", "a,B,c,D", "a,B,c,D"],
      ["identical change plus another", "a,b,c,d,e", "a,B,c,D,e", "a,B,c,d,e"],
      ["overlap sharing a line", "a,b,c,d", "a,B,C,d", "a,B,X,d"],
      ["delete vs edit of a line", "a,b,c", "a,c", "a,B,c"],
      ["both delete a line", "a,b,c", "a,c", "a,c"],
      ["empty base", "", "x,y", "x,z"],
      ["delete all vs edit", "a,b", "", "a,B"],
      ["repeated lines", "a,a,a", "a,a,a,a", "a,b,a,a"]
    ]
    const rnd = mulberry32(SEED)
    const int = (n: number) => Math.floor(rnd() * n)
    const random = (alphabet: ReadonlyArray<string> | undefined, n: number) => {
      let uid = 0
      const line = () => (alphabet === undefined ? `u${uid++}\n` : alphabet[int(alphabet.length)]!)
      const edit = (xs: ReadonlyArray<string>) => {
        const r = [...xs]
        for (let e = 1 + int(3); e > 0; e--) r.splice(int(r.length + 1), int(3), ...Array.from({ length: int(3) }, line))
        return r
      }
      return Array.from({ length: n }, () => {
        const base = Array.from({ length: int(8) }, line)
        return [base, edit(base), edit(base)] as const
      })
    }
    const render = (blocks: ReturnType<Diff3>) => ({
      conflict: blocks.some((b) => b._tag === "Conflict"),
      text: blocks.map((b) =>
        b._tag === "Ok"
          ? b.lines.join("")
          : `<<<<<<< ${LABELS.ours}\n${b.ours.join("")}||||||| ${LABELS.base}\n${b.base.join("")}=======\n${b.theirs.join("")}>>>>>>> ${LABELS.theirs}\n`
      ).join("")
    })
    const sets = {
      tricky: tricky.map(([, b, o, t]) => [L(b), L(o), L(t)] as const),
      uniqueLines: random(undefined, 150),
      repeatedLines: random(["a\n", "b\n", "}\n", "\n"], 150)
    }
    const shipped = anchored(nodeDiff3)
    const counts: Record<string, Record<string, number>> = {}
    const trickyDisagreements: Array<string> = []
    for (const [set, cases] of Object.entries(sets)) {
      const c = { cases: 0, statusNodeVsDiff3: 0, textNodeVsDiff3: 0, statusNodeVsGit: 0, statusDiff3VsGit: 0, textNodeVsGit: 0, statusShippedVsGit: 0, textShippedVsGit: 0 }
      cases.forEach(([base, ours, theirs], i) => {
        const n = render(libraryNodeDiff3(base, ours, theirs))
        const d = render(rawLegacy(base, ours, theirs))
        const s = render(shipped(base, ours, theirs))
        const files = writeSides("agree", { base: encode(base), ours: encode(ours), theirs: encode(theirs), expected: undefined })
        const g = gitMerge(files, true).result
        const gConflict = (g.status ?? 0) > 0
        const gText = g.stdout.toString("utf8")
        c.cases++
        if (n.conflict !== d.conflict) c.statusNodeVsDiff3++
        if (n.text !== d.text) c.textNodeVsDiff3++
        if (n.conflict !== gConflict) c.statusNodeVsGit++
        if (d.conflict !== gConflict) c.statusDiff3VsGit++
        if (n.text !== gText) c.textNodeVsGit++
        if (s.conflict !== gConflict) c.statusShippedVsGit++
        if (s.text !== gText) c.textShippedVsGit++
        if (set === "tricky" && (n.text !== d.text || n.text !== gText || s.text !== gText)) trickyDisagreements.push(tricky[i]![0])
      })
      counts[set] = c
    }
    const total = Object.values(counts).reduce((sum, c) => sum + (c["textNodeVsDiff3"] ?? 0), 0)
    report({
      bench: BENCH,
      metric,
      ours: total,
      peer: null,
      ratio: null,
      peerName: "diff3 0.0.3, git merge-file --diff3",
      unit: "cases where node-diff3 and diff3 differ",
      n: Object.values(counts).reduce((sum, c) => sum + (c["cases"] ?? 0), 0),
      counts,
      trickyDisagreements
    })
  } catch (e) {
    report(errorFigure(BENCH, metric, `threw: ${errorText(e)}`))
  }
}

// ---------------------------------------------------------------------------------------------

if (!json) printTable(figures)
if (figures.length === 0) {
  note("no figures selected; metrics: merge_10k_ms, merge_10k_diff3_ms, merge_10k_raw_node_diff3_ms, merge_10k_raw_diff3_ms, rewrite_2k_ms, rewrite_2k_diff3_ms, repetitive_5k_ms, library_agreement")
  process.exitCode = 2
} else if (failed) {
  note("FAILED: at least one figure has an error (see above)")
  process.exitCode = 1
}
