/**
 * `probe` bench: the merge probe and the promotion gate as users run them, whole processes.
 *
 * 1. `probe_wall_ms`  `forkjoin probe` on a fresh workspace, twice (target: each <= 20 s); the
 *                     two evidence digests must be equal (`digests_equal`), else the bench fails.
 * 2. `gate_wall_ms`   `FORKJOIN_AUTONOMY=safe forkjoin gate` on that evidence vs `node -e ''`
 *                     (target: ratio <= 2.5); every run must answer `passed`.
 *
 * Usage: `npm run bench -- probe [--json] [--only metric[,metric]]`.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import os from "node:os"
import path from "node:path"
import { cliPaths, emitJson, ensureCliBundle, errorFigure, type Figure, median, note, onlyMetrics, printTable, repoRoot, round, runFailure, spread, timeSpawn, wantsJson } from "./harness.ts"

const BENCH = "probe"
const PROBE_RUNS = 2
const PROBE_TARGET_MS = 20_000
const GATE_WARMUP = 2
const GATE_RUNS = 21
const GATE_TARGET_RATIO = 2.5

const argv = process.argv.slice(2)
const json = wantsJson(argv)
const only = onlyMetrics(argv)
const enabled = (metric: string): boolean => only === undefined || only.has(metric)

const root = repoRoot()
const { bin } = cliPaths(root)
const figures: Array<Figure> = []
let failed = false

const report = (figure: Figure): void => {
  const f = { ...figure, load1: round(os.loadavg()[0] ?? 0, 2) }
  figures.push(f)
  if (f.error !== undefined || f.pass === false) failed = true
  if (json) emitJson(f)
}

// Keep a developer's own settings and faults out of the measurement.
const { FORKJOIN_FAULT: _f, FORKJOIN_AUTONOMY: _a, FORKJOIN_MUTATING_SUBAGENTS: _m, ...cleanEnv } = process.env

const built = ensureCliBundle(root)
const ws = mkdtempSync(path.join(os.tmpdir(), "fj-bench-probe-"))
try {
  if (built.error !== undefined) {
    report(errorFigure(BENCH, "probe_wall_ms", built.error))
  } else {
    const evidence = path.join(ws, ".forkjoin", "evidence", "merge-probe.json")
    if (enabled("probe_wall_ms") || enabled("gate_wall_ms")) {
      const times: Array<number> = []
      const digests: Array<string> = []
      let error: string | undefined
      for (let i = 0; i < PROBE_RUNS && error === undefined; i++) {
        note(`probe run ${i + 1}/${PROBE_RUNS}`)
        const run = timeSpawn(process.execPath, [bin, "probe", "--workspace", ws, "--json"], { env: cleanEnv })
        error = runFailure("forkjoin probe", run.result)
        if (error === undefined) {
          times.push(run.ms)
          digests.push(JSON.parse(readFileSync(evidence, "utf8")).digest)
        }
      }
      if (enabled("probe_wall_ms")) {
        if (error !== undefined) report(errorFigure(BENCH, "probe_wall_ms", error))
        else {
          const equal = digests.every((d) => d === digests[0])
          report({
            bench: BENCH,
            metric: "probe_wall_ms",
            ours: round(Math.max(...times)),
            peer: null,
            ratio: null,
            peerName: null,
            unit: "ms",
            n: times.length,
            runs_ms: times.map((t) => round(t)),
            digests,
            digests_equal: equal,
            target: PROBE_TARGET_MS,
            targetKind: "ours_max",
            pass: equal && Math.max(...times) <= PROBE_TARGET_MS
          })
        }
      }
      if (enabled("gate_wall_ms") && error === undefined) {
        const env = { ...cleanEnv, FORKJOIN_AUTONOMY: "safe" }
        const gate: Array<number> = []
        const bare: Array<number> = []
        let gateError: string | undefined
        for (let i = 0; i < GATE_WARMUP + GATE_RUNS && gateError === undefined; i++) {
          // Interleaved, so load changes hit both sides alike.
          const b = timeSpawn(process.execPath, ["-e", ""], { env })
          const g = timeSpawn(process.execPath, [bin, "gate", "--workspace", ws, "--json"], { env })
          gateError = runFailure("forkjoin gate", g.result)
          if (gateError === undefined && JSON.parse(g.result.stdout.toString("utf8")).status !== "passed") {
            gateError = `forkjoin gate did not pass: ${g.result.stdout.toString("utf8").slice(0, 500)}`
          }
          if (i >= GATE_WARMUP) {
            gate.push(g.ms)
            bare.push(b.ms)
          }
        }
        if (gateError !== undefined) report(errorFigure(BENCH, "gate_wall_ms", gateError))
        else {
          const ours = median(gate)
          const peer = median(bare)
          report({
            bench: BENCH,
            metric: "gate_wall_ms",
            ours: round(ours),
            peer: round(peer),
            ratio: round(ours / peer),
            peerName: "node -e ''",
            unit: "ms",
            n: gate.length,
            ...spread(gate),
            target: GATE_TARGET_RATIO,
            targetKind: "ratio_max",
            pass: ours / peer <= GATE_TARGET_RATIO
          })
        }
      }
    }
  }
} finally {
  rmSync(ws, { recursive: true, force: true })
}
if (!json) printTable(figures)
process.exitCode = failed ? 1 : 0
