/**
 * Shared plumbing of the benches: the figure record, timing, statistics and output
 * (one JSON object per line with `--json`, a readable table otherwise).
 */
import { spawnSync, type SpawnSyncOptions, type SpawnSyncReturns } from "node:child_process"
import * as fs from "node:fs"
import { existsSync, readFileSync } from "node:fs"
import path from "node:path"

/** One measured figure, printed as one JSON line. */
export interface Figure {
  readonly bench: string
  readonly metric: string
  readonly ours: number | null
  readonly peer: number | null
  readonly ratio: number | null
  readonly peerName: string | null
  readonly unit?: string
  readonly n?: number
  readonly target?: number
  readonly targetKind?: "ours_max" | "ratio_max"
  readonly pass?: boolean
  readonly peerError?: string
  readonly error?: string
  readonly [extra: string]: unknown
}

/** Repository root: `FORKJOIN_BENCH_ROOT` (set by scripts/bench.mjs), else the nearest `@forkjoin/forkjoin` package.json above cwd. */
export const repoRoot = (): string => {
  const fromEnv = process.env["FORKJOIN_BENCH_ROOT"]
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv
  let dir = process.cwd()
  for (;;) {
    const pkg = path.join(dir, "package.json")
    if (existsSync(pkg)) {
      try {
        const parsed: unknown = JSON.parse(readFileSync(pkg, "utf8"))
        if (typeof parsed === "object" && parsed !== null && (parsed as { name?: unknown }).name === "@forkjoin/forkjoin") return dir
      } catch {
        // not a JSON package.json; keep walking up
      }
    }
    const parent = path.dirname(dir)
    if (parent === dir) throw new Error("bench: cannot find the forkjoin repository root (set FORKJOIN_BENCH_ROOT)")
    dir = parent
  }
}

/** Median of a non-empty sample (mean of the two middle values for even sizes). */
export const median = (xs: ReadonlyArray<number>): number => {
  if (xs.length === 0) throw new Error("median of an empty sample")
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

/** Nearest-rank percentile (p in 0..100) of a non-empty sample. */
export const percentile = (xs: ReadonlyArray<number>, p: number): number => {
  if (xs.length === 0) throw new Error("percentile of an empty sample")
  const s = [...xs].sort((a, b) => a - b)
  const rank = Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length)))
  return s[rank - 1]!
}

/**
 * A full garbage collection before a timed run (the benches run with `--expose-gc`; without it,
 * nothing), so a run is not charged for the garbage of the work before it.
 */
export const gc = (): void => {
  ;(globalThis as { gc?: () => void }).gc?.()
}

/** Rounds to `digits` decimals (for printing). */
export const round = (x: number, digits = 3): number => {
  const f = 10 ** digits
  return Math.round(x * f) / f
}

/** Milliseconds spent in one synchronous call, measured with `process.hrtime.bigint()`. */
export const timeMs = (f: () => void): number => {
  const t0 = process.hrtime.bigint()
  f()
  const t1 = process.hrtime.bigint()
  return Number(t1 - t0) / 1e6
}

/** Runs `f` once and returns its result with the milliseconds it took (`process.hrtime.bigint()`). */
export const timed = <A>(f: () => A): { readonly ms: number; readonly value: A } => {
  const t0 = process.hrtime.bigint()
  const value = f()
  const t1 = process.hrtime.bigint()
  return { ms: Number(t1 - t0) / 1e6, value }
}

/** A timed child process run. */
export interface TimedRun {
  readonly ms: number
  readonly result: SpawnSyncReturns<Buffer>
}

/** Runs `command args` with `spawnSync` and returns its wall time in ms and its result. */
export const timeSpawn = (command: string, args: ReadonlyArray<string>, options: SpawnSyncOptions = {}): TimedRun => {
  const t0 = process.hrtime.bigint()
  const { encoding: _ignored, ...rest } = options
  const result = spawnSync(command, args, { maxBuffer: 64 * 1024 * 1024, ...rest }) as SpawnSyncReturns<Buffer>
  const t1 = process.hrtime.bigint()
  return { ms: Number(t1 - t0) / 1e6, result }
}

/** Describes a failed child run (spawn error, signal or non-zero exit) or returns undefined when it succeeded. */
export const runFailure = (label: string, r: SpawnSyncReturns<Buffer>): string | undefined => {
  if (r.error) return `${label}: spawn failed: ${r.error.message}`
  if (r.signal) return `${label}: killed by ${r.signal}`
  if (r.status !== 0) {
    const err = (r.stderr?.toString("utf8") ?? "").trim().slice(0, 2000)
    const out = (r.stdout?.toString("utf8") ?? "").trim().slice(0, 500)
    return `${label}: exit ${String(r.status)}${err ? `\nstderr: ${err}` : ""}${out ? `\nstdout: ${out}` : ""}`
  }
  return undefined
}

/** Writes a progress note to stderr (never to stdout, which carries the figures). */
export const note = (message: string): void => {
  process.stderr.write(`[bench] ${message}\n`)
}

/** True when the bench was asked for JSON lines (`--json`). */
export const wantsJson = (argv: ReadonlyArray<string>): boolean => argv.includes("--json")

const cell = (v: unknown): string => (v === null || v === undefined ? "-" : typeof v === "number" ? String(v) : String(v))

/** Prints one figure as one JSON line on stdout. */
export const emitJson = (figure: Figure): void => {
  process.stdout.write(`${JSON.stringify(figure)}\n`)
}

/** Prints figures as a readable, aligned table (plus any errors below it). */
export const printTable = (figures: ReadonlyArray<Figure>): void => {
  const header = ["bench", "metric", "ours", "peer", "ratio", "target", "pass", "n", "unit", "peerName"]
  const rows = figures.map((f) => [
    f.bench,
    f.metric,
    cell(f.ours),
    cell(f.peer),
    cell(f.ratio),
    f.target === undefined ? "-" : `${f.targetKind === "ratio_max" ? "ratio" : "ours"} <= ${f.target}`,
    cell(f.pass),
    cell(f.n),
    cell(f.unit),
    cell(f.peerName)
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (r: ReadonlyArray<string>) => r.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd()
  const out = [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)]
  for (const f of figures) {
    if (f.peerError !== undefined) out.push(`  ${f.metric}: peer unavailable: ${f.peerError}`)
    if (f.error !== undefined) out.push(`  ${f.metric}: ERROR: ${f.error}`)
  }
  process.stdout.write(`${out.join("\n")}\n`)
}

/** The metrics named by `--only a,b` (or `--only=a,b`); `undefined` means all. */
export const onlyMetrics = (argv: ReadonlyArray<string>): ReadonlySet<string> | undefined => {
  const i = argv.findIndex((a) => a === "--only" || a.startsWith("--only="))
  if (i === -1) return undefined
  const value = argv[i]!.includes("=") ? argv[i]!.split("=")[1]! : (argv[i + 1] ?? "")
  return new Set(value.split(",").filter((s) => s !== ""))
}

/** Where the CLI launcher and its bundle live. */
export const cliPaths = (root: string) => ({
  bin: path.join(root, "packages", "cli", "bin", "forkjoin.mjs"),
  dist: path.join(root, "packages", "cli", "dist", "forkjoin.cjs")
})

const newestSourceMtime = (root: string): number => {
  let newest = 0
  const walk = (dir: string): void => {
    if (!fs.existsSync(dir)) return
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name)
      if (entry.isDirectory()) walk(p)
      else if (entry.name.endsWith(".ts")) newest = Math.max(newest, fs.statSync(p).mtimeMs)
    }
  }
  for (const pkg of fs.readdirSync(path.join(root, "packages"))) walk(path.join(root, "packages", pkg, "src"))
  walk(path.join(root, "probes", "src"))
  return newest
}

/**
 * Ensures the CLI launcher and an up-to-date bundle exist, rebuilding when missing or older
 * than any package or probe source. Returns `{ error }` when there is nothing to measure, or
 * `{ warning }` when a stale bundle had to be kept.
 */
export const ensureCliBundle = (root: string): { readonly error?: string; readonly warning?: string } => {
  const { bin, dist } = cliPaths(root)
  const missing = !fs.existsSync(dist)
  const stale = !missing && fs.statSync(dist).mtimeMs < newestSourceMtime(root)
  let warning: string | undefined
  if (missing || stale) {
    note(`packages/cli/dist/forkjoin.cjs ${missing ? "missing" : "older than packages/*/src"}: running node scripts/build.mjs`)
    const r = spawnSync(process.execPath, [path.join(root, "scripts", "build.mjs")], { cwd: root, encoding: "utf8", timeout: 300_000 })
    if (r.status !== 0) {
      const why = `node scripts/build.mjs exited ${String(r.status)}: ${(r.stderr || r.stdout || r.error?.message || "").trim().slice(0, 1500)}`
      if (missing) return { error: why }
      warning = `measured a stale CLI bundle (rebuild failed: ${why.slice(0, 300)})`
      note(warning)
    }
  }
  if (!fs.existsSync(dist)) return { error: "packages/cli/dist/forkjoin.cjs is still missing after node scripts/build.mjs" }
  if (!fs.existsSync(bin)) return { error: "packages/cli/bin/forkjoin.mjs (the launcher) is missing" }
  return warning === undefined ? {} : { warning }
}

/** A figure that reports a failure instead of a measurement. */
export const errorFigure = (bench: string, metric: string, error: string, extra: Partial<Figure> = {}): Figure => ({
  bench,
  metric,
  ours: null,
  peer: null,
  ratio: null,
  peerName: null,
  ...extra,
  error
})

/** Min, p90 and max of samples, rounded. */
export const spread = (xs: ReadonlyArray<number>) => ({
  min: round(Math.min(...xs)),
  p90: round(percentile(xs, 90)),
  max: round(Math.max(...xs))
})

/** Where two byte arrays first differ, with context, for a correctness failure message. */
export const firstDifference = (actual: Uint8Array, expected: Uint8Array): string => {
  const n = Math.min(actual.length, expected.length)
  let i = 0
  while (i < n && actual[i] === expected[i]) i++
  const line = Buffer.from(expected.subarray(0, i)).toString("utf8").split("\n").length
  const show = (b: Uint8Array) => JSON.stringify(Buffer.from(b.subarray(Math.max(0, i - 40), i + 40)).toString("utf8"))
  return `sizes ${actual.length} vs expected ${expected.length}; first difference at byte ${i} (line ${line}): got ${show(actual)}, expected ${show(expected)}`
}
