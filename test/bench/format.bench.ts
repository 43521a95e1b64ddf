/**
 * `format` bench: the Codex patch format on a 100,000-line file with 2,000 one-line chunks.
 *
 * 1. `parse_match_ms`   in-process parse + plan with the pure core (target: median <= 30 ms).
 * 2. `apply_process_ms` whole `forkjoin apply --profile codex` process vs Codex `apply_patch`.
 * 3. `cold_start_ms`    `forkjoin --help` vs `node -e ''` (target: ratio <= 2.5).
 *
 * Usage: `npm run bench -- format [--json] [--only metric[,metric]]`.
 * Every figure is checked for correctness first (a benchmark of a wrong answer is worthless);
 * a wrong or failing run of ours makes the bench exit 1. A missing peer is reported as
 * `peer: null` with `peerError`.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import path from "node:path"
import * as Result from "effect/Result"
import { type FileState, parsePatch, patchTargets, planPatch, type Profile } from "../../packages/patch/src/index.ts"
import { CODEX_PEER_NAME, ensureCodex } from "./codex.ts"
import { type FormatWorkload, makeFormatWorkload } from "./fixture.ts"
import { cliPaths, ensureCliBundle, errorFigure, type Figure, emitJson, firstDifference, onlyMetrics, spread, median, note, printTable, repoRoot, round, runFailure, timed, timeSpawn, wantsJson, gc } from "./harness.ts"

const BENCH = "format"
const SEED = 0x5eed_f0a7
const LINES = 100_000
const CHUNKS = 2_000
const INPROC_WARMUP = 5
const INPROC_RUNS = 31
const PROCESS_WARMUP = 1
const PROCESS_RUNS = 15
const COLD_WARMUP = 2
const COLD_RUNS = 31
const PARSE_MATCH_TARGET_MS = 30
const COLD_START_TARGET_RATIO = 2.5

const argv = process.argv.slice(2)
const json = wantsJson(argv)
const only = onlyMetrics(argv)
const enabled = (metric: string): boolean => only === undefined || only.has(metric)

const root = repoRoot()
const figures: Array<Figure> = []
let failed = false
/** Set when figures 2/3 had to measure a stale CLI bundle. */
let cliWarning: string | undefined

/** Records a figure: prints it at once in JSON mode (so partial results survive a later crash). */
const report = (measured: Figure): void => {
  // The 1-minute load average when the figure was finished: other processes skew timings.
  const processFigure = measured.metric === "apply_process_ms" || measured.metric === "cold_start_ms"
  const figure: Figure = {
    ...measured,
    load1: round(os.loadavg()[0] ?? 0, 2),
    ...(processFigure && cliWarning !== undefined ? { cliWarning } : {})
  }
  figures.push(figure)
  if (figure.error !== undefined) failed = true
  if (json) emitJson(figure)
}




const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => Buffer.compare(a, b) === 0

/** Describes where two byte strings first differ (for loud correctness failures). */

// ---------------------------------------------------------------------------------------------
// Workload

note(`generating ${LINES} lines / ${CHUNKS} chunks (seed ${SEED.toString(16)})`)
const workload: FormatWorkload = makeFormatWorkload(SEED, LINES, CHUNKS)
const originalBytes = Buffer.from(workload.original, "utf8")
const expectedBytes = Buffer.from(workload.expected, "utf8")
note(`file ${originalBytes.length} bytes, patch ${Buffer.byteLength(workload.patch)} bytes`)

// ---------------------------------------------------------------------------------------------
// Figure 1: in-process parse + plan

/** One parse + plan of the workload with the pure core; returns the planned after-bytes of the target, or an error. */
const parseAndPlan = (profile: Profile, disk: ReadonlyMap<string, Uint8Array>): Uint8Array | string => {
  const parsed = parsePatch(workload.patch, { profile })
  if (Result.isFailure(parsed)) return `parsePatch failed: ${parsed.failure.message}`
  const targets = patchTargets(parsed.success)
  if (Result.isFailure(targets)) return `patchTargets failed: ${targets.failure.message}`
  const files = new Map<string, FileState>()
  for (const p of targets.success) {
    const bytes = disk.get(p)
    files.set(p, bytes === undefined ? { _tag: "Missing" } : { _tag: "File", bytes })
  }
  const plan = planPatch(parsed.success, files, { profile, allowOverwrite: false })
  if (Result.isFailure(plan)) return `planPatch failed: [${plan.failure.code}] ${plan.failure.message}`
  const file = plan.success.files.find((f) => f.path === workload.path)
  if (file === undefined) return `plan does not touch ${workload.path} (touches ${plan.success.files.map((f) => f.path).join(", ")})`
  if (file.after === undefined) return `plan deletes ${workload.path} (kind ${file.kind})`
  return file.after
}

const measureParseMatch = (metric: string, profile: Profile): void => {
  const disk = new Map<string, Uint8Array>([[workload.path, new Uint8Array(originalBytes)]])
  try {
    const first = parseAndPlan(profile, disk)
    if (typeof first === "string") return report(errorFigure(BENCH, metric, first, { profile }))
    if (!sameBytes(first, expectedBytes)) return report(errorFigure(BENCH, metric, `planned bytes differ from expected: ${firstDifference(first, expectedBytes)}`, { profile }))
    for (let i = 0; i < INPROC_WARMUP; i++) parseAndPlan(profile, disk)
    const samples: Array<number> = []
    for (let i = 0; i < INPROC_RUNS; i++) {
      gc()
      const t = timed(() => parseAndPlan(profile, disk))
      if (typeof t.value === "string") return report(errorFigure(BENCH, metric, `run ${i}: ${t.value}`, { profile }))
      samples.push(t.ms)
    }
    const ours = median(samples)
    report({
      bench: BENCH,
      metric,
      ours: round(ours),
      peer: null,
      ratio: null,
      peerName: null,
      unit: "ms",
      n: samples.length,
      target: PARSE_MATCH_TARGET_MS,
      targetKind: "ours_max",
      pass: ours <= PARSE_MATCH_TARGET_MS,
      profile,
      lines: workload.lineCount,
      chunks: workload.chunkCount,
      ...spread(samples)
    })
  } catch (e) {
    report(errorFigure(BENCH, metric, `threw: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`, { profile }))
  }
}

if (enabled("parse_match_ms")) {
  note("figure 1: parse_match_ms (native profile)")
  measureParseMatch("parse_match_ms", "native")
}
if (enabled("parse_match_codex_ms")) {
  note("figure 1b: parse_match_codex_ms (codex profile)")
  measureParseMatch("parse_match_codex_ms", "codex")
}

// ---------------------------------------------------------------------------------------------
// The CLI (figures 2 and 3)

const { bin: cliBin } = cliPaths(root)

/** Ensures an up-to-date CLI bundle (see harness `ensureCliBundle`); returns an error or undefined. */
const ensureCli = (): string | undefined => {
  const r = ensureCliBundle(root)
  if (r.warning !== undefined) cliWarning = r.warning
  return r.error
}

const wantProcessFigures = enabled("apply_process_ms") || enabled("cold_start_ms")
const cliError = wantProcessFigures ? ensureCli() : undefined

// ---------------------------------------------------------------------------------------------
// Figure 2: whole-process apply, ours vs Codex

const measureApplyProcess = (): void => {
  const metric = "apply_process_ms"
  if (cliError !== undefined) return report(errorFigure(BENCH, metric, cliError, { peerName: CODEX_PEER_NAME }))
  const peer = ensureCodex(root, note)
  const peerError = peer._tag === "Unavailable" ? peer.error : undefined
  if (peerError !== undefined) note(`peer unavailable: ${peerError}`)

  const tmp = mkdtempSync(path.join(os.tmpdir(), "forkjoin-bench-format-"))
  try {
    const patchFile = path.join(tmp, "change.patch")
    writeFileSync(patchFile, workload.patch)
    const oursWs = path.join(tmp, "ours")
    const peerWs = path.join(tmp, "peer")
    /** Recreates a pristine workspace holding only the original file (not timed). */
    const fresh = (ws: string): void => {
      rmSync(ws, { recursive: true, force: true })
      mkdirSync(path.dirname(path.join(ws, workload.path)), { recursive: true })
      writeFileSync(path.join(ws, workload.path), originalBytes)
    }
    const readResult = (ws: string): Buffer => readFileSync(path.join(ws, workload.path))

    const runOurs = (): { ms: number; error?: string } => {
      fresh(oursWs)
      const t = timeSpawn(process.execPath, [cliBin, "apply", patchFile, "--workspace", oursWs, "--profile", "codex"], { cwd: tmp })
      const bad = runFailure("forkjoin apply", t.result)
      if (bad !== undefined) return { ms: t.ms, error: bad }
      const got = readResult(oursWs)
      if (!sameBytes(got, expectedBytes)) return { ms: t.ms, error: `forkjoin apply produced wrong bytes: ${firstDifference(got, expectedBytes)}` }
      return { ms: t.ms }
    }
    const runPeer = (applyPatch: string): { ms: number; error?: string } => {
      fresh(peerWs)
      // The patch (~800 KB) exceeds one argv string's limit, so Codex reads it from stdin.
      const t = timeSpawn(applyPatch, [], { cwd: peerWs, input: workload.patch })
      const bad = runFailure("codex apply_patch", t.result)
      if (bad !== undefined) return { ms: t.ms, error: bad }
      const got = readResult(peerWs)
      if (!sameBytes(got, expectedBytes)) return { ms: t.ms, error: `codex apply_patch produced unexpected bytes: ${firstDifference(got, expectedBytes)}` }
      return { ms: t.ms }
    }

    // Warm-up (also the first correctness check, including ours vs peer byte identity).
    for (let i = 0; i < PROCESS_WARMUP; i++) {
      const o = runOurs()
      if (o.error !== undefined) return report(errorFigure(BENCH, metric, o.error, { peerName: CODEX_PEER_NAME }))
      if (peer._tag === "Available") {
        const p = runPeer(peer.applyPatch)
        if (p.error !== undefined) return report(errorFigure(BENCH, metric, p.error, { peerName: CODEX_PEER_NAME }))
        if (!sameBytes(readResult(oursWs), readResult(peerWs))) {
          return report(errorFigure(BENCH, metric, `ours and codex outputs differ: ${firstDifference(readResult(oursWs), readResult(peerWs))}`, { peerName: CODEX_PEER_NAME }))
        }
      }
    }

    const ours: Array<number> = []
    const theirs: Array<number> = []
    for (let i = 0; i < PROCESS_RUNS; i++) {
      // Interleave, alternating who goes first.
      const order = i % 2 === 0 ? (["ours", "peer"] as const) : (["peer", "ours"] as const)
      for (const who of order) {
        if (who === "ours") {
          const o = runOurs()
          if (o.error !== undefined) return report(errorFigure(BENCH, metric, `run ${i}: ${o.error}`, { peerName: CODEX_PEER_NAME }))
          ours.push(o.ms)
        } else if (peer._tag === "Available") {
          const p = runPeer(peer.applyPatch)
          if (p.error !== undefined) return report(errorFigure(BENCH, metric, `run ${i}: ${p.error}`, { peerName: CODEX_PEER_NAME }))
          theirs.push(p.ms)
        }
      }
    }
    const o = median(ours)
    const p = theirs.length > 0 ? median(theirs) : null
    report({
      bench: BENCH,
      metric,
      ours: round(o),
      peer: p === null ? null : round(p),
      ratio: p === null ? null : round(o / p),
      peerName: CODEX_PEER_NAME,
      unit: "ms",
      n: ours.length,
      profile: "codex",
      identicalOutput: p === null ? null : true,
      oursSpread: spread(ours),
      ...(theirs.length > 0 ? { peerSpread: spread(theirs) } : {}),
      ...(peerError !== undefined ? { peerError } : {})
    })
  } catch (e) {
    report(errorFigure(BENCH, metric, `threw: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`, { peerName: CODEX_PEER_NAME }))
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
}

if (enabled("apply_process_ms")) {
  note(`figure 2: apply_process_ms (${PROCESS_RUNS} interleaved runs each)`)
  measureApplyProcess()
}

// ---------------------------------------------------------------------------------------------
// Figure 3: cold start, `forkjoin --help` vs `node -e ''`

const measureColdStart = (): void => {
  const metric = "cold_start_ms"
  const peerName = "node -e ''"
  if (cliError !== undefined) return report(errorFigure(BENCH, metric, cliError, { peerName, target: COLD_START_TARGET_RATIO, targetKind: "ratio_max" }))
  try {
    const ours: Array<number> = []
    const theirs: Array<number> = []
    const runOurs = () => {
      const t = timeSpawn(process.execPath, [cliBin, "--help"], { cwd: root })
      const bad = runFailure("forkjoin --help", t.result)
      if (bad === undefined && t.result.stdout.length === 0) return { ms: t.ms, error: "forkjoin --help printed nothing on stdout" }
      return bad === undefined ? { ms: t.ms } : { ms: t.ms, error: bad }
    }
    const runPeer = () => {
      const t = timeSpawn(process.execPath, ["-e", ""], { cwd: root })
      const bad = runFailure("node -e ''", t.result)
      return bad === undefined ? { ms: t.ms } : { ms: t.ms, error: bad }
    }
    for (let i = 0; i < COLD_WARMUP + COLD_RUNS; i++) {
      const order = i % 2 === 0 ? ([runOurs, runPeer] as const) : ([runPeer, runOurs] as const)
      for (const run of order) {
        const r = run()
        if (r.error !== undefined) return report(errorFigure(BENCH, metric, `run ${i}: ${r.error}`, { peerName, target: COLD_START_TARGET_RATIO, targetKind: "ratio_max" }))
        if (i >= COLD_WARMUP) (run === runOurs ? ours : theirs).push(r.ms)
      }
    }
    const o = median(ours)
    const p = median(theirs)
    report({
      bench: BENCH,
      metric,
      ours: round(o),
      peer: round(p),
      ratio: round(o / p),
      peerName,
      unit: "ms",
      n: ours.length,
      target: COLD_START_TARGET_RATIO,
      targetKind: "ratio_max",
      pass: o / p <= COLD_START_TARGET_RATIO,
      oursSpread: spread(ours),
      peerSpread: spread(theirs)
    })
  } catch (e) {
    report(errorFigure(BENCH, metric, `threw: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`, { peerName, target: COLD_START_TARGET_RATIO, targetKind: "ratio_max" }))
  }
}

if (enabled("cold_start_ms")) {
  note(`figure 3: cold_start_ms (${COLD_RUNS} interleaved runs each)`)
  measureColdStart()
}

// ---------------------------------------------------------------------------------------------

if (!json) printTable(figures)
if (figures.length === 0) {
  note(`no figures selected (--only ${[...(only ?? [])].join(",")}); metrics: parse_match_ms, parse_match_codex_ms, apply_process_ms, cold_start_ms`)
  process.exitCode = 2
} else if (failed) {
  note("FAILED: at least one figure has an error (see above)")
  process.exitCode = 1
}
