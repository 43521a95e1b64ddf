/**
 * `cluster` bench: children on runners (`forkjoin run --cluster`) against the same plan run
 * locally, through the built CLI and real `forkjoin runner` processes, as a user runs them.
 *
 * 1. `differential_64x8`  64 children × 8 files (7 of their own, 1 shared with 7 siblings at other
 *      lines: merges; every 16th also edits one hot line: conflicts), locally and on 4 runners:
 *      the workspaces must be byte-identical and the outcomes, conflicts, children's steps and
 *      history the same (ids, times, folders and where each child ran aside), else exit 1.
 * 2. `overhead_ms_per_child_sqlite` / `_postgres`  (cluster wall − local wall) / 64 on that plan,
 *      both at the run's default concurrency (4), median of `--runs` (5) alternating pairs.
 *      PostgreSQL from `FORKJOIN_TEST_PG_URL` (`eval "$(.ci/postgres start)"`); reported as an
 *      error figure when absent. Target: ≤ 20 ms.
 * 3. `faults_256`  256 children on 4 runners, one runner SIGKILLed at a random moment of the
 *      children and the parent SIGKILLed once mid-join (`merge:after-child:N`, test builds'
 *      sealed fault), then `run --resume`: every child applied exactly once, the workspace
 *      identical to the local run's.
 * 4. `check_throughput_{local,1,2,4}`  8 children whose `childVerify` does about 1 s of CPU work
 *      (a loop calibrated on this machine's idle core): wall
 *      time locally and on 1, 2 and 4 runners (ratio to local). One machine's cores bound it:
 *      the runners share them.
 * Bytes per child (O(touched), not O(repository)) are the `cluster-wire` bench's.
 *
 * Usage: `npm run bench -- cluster [--json] [--runs N] [--only a,b]`.
 */
import Database from "better-sqlite3"
import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import * as fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { createInterface } from "node:readline"
import * as FaultChannel from "../../packages/engine/src/FaultChannel.ts"
import { cliPaths, emitJson, ensureCliBundle, errorFigure, type Figure, median, note, onlyMetrics, printTable, repoRoot, round, spread, wantsJson } from "./harness.ts"
import { mulberry32 } from "./fixture.ts"
import { freePort } from "../support/ports.ts"

const BENCH = "cluster"
const argv = process.argv.slice(2)
const json = wantsJson(argv)
const only = onlyMetrics(argv)
const runsAt = argv.indexOf("--runs")
const RUNS = runsAt === -1 ? 5 : Number(argv[runsAt + 1])
const root = repoRoot()
const BIN = cliPaths(root).bin
const SECRET = "bench cluster secret, long enough to be accepted"
const wanted = (metric: string) => only === undefined || [...only].some((m) => metric.startsWith(m))
const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6

const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "fj-bench-cluster-")))
const keyFile = FaultChannel.makeKey(tmp)

// ---------------------------------------------------------------------------------------------
// processes
// ---------------------------------------------------------------------------------------------

interface Ran {
  readonly status: number | null
  readonly stdout: string
  readonly stderr: string
  readonly ms: number
}

const BASE_ENV = { ...process.env, NO_COLOR: "1", FORKJOIN_AUTONOMY: "bold" } as Record<string, string | undefined>
delete BASE_ENV["FORKJOIN_FAULT"]

const cli = (args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<Ran> =>
  new Promise((resolve) => {
    const t0 = nowMs()
    const child = spawn(process.execPath, [BIN, ...args], { cwd: tmp, env: { ...BASE_ENV, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    child.on("close", (status) => resolve({ status, stdout, stderr, ms: nowMs() - t0 }))
  })


interface Runner {
  readonly child: ChildProcess
  readonly address: string
  readonly gone: Promise<void>
}

const runners: Array<Runner> = []

const startRunner = async (cluster: string, env: Record<string, string> = {}): Promise<Runner> => {
  const port = await freePort()
  const log = fs.openSync(path.join(tmp, `runner-${port}.log`), "w")
  const child = spawn(process.execPath, [BIN, "runner", "--cluster", cluster, "--port", String(port), "--json"], {
    cwd: tmp,
    env: { ...BASE_ENV, ...env },
    stdio: ["ignore", "pipe", log]
  })
  fs.closeSync(log)
  const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const first = await Promise.race([once(createInterface({ input: child.stdout! }), "line").then(([l]) => String(l)), gone.then(() => undefined)])
  if (first === undefined) throw new Error(`a runner exited before joining: ${fs.readFileSync(path.join(tmp, `runner-${port}.log`), "utf8").slice(-2000)}`)
  const runner = { child, address: `127.0.0.1:${port}`, gone }
  runners.push(runner)
  return runner
}

const stopAll = async (list: ReadonlyArray<Runner>) => {
  for (const r of list) r.child.kill("SIGKILL")
  await Promise.all(list.map((r) => r.gone))
}

// ---------------------------------------------------------------------------------------------
// plans
// ---------------------------------------------------------------------------------------------

const SHARED_LINES = 40

/** The workspace and plan of `children` children × 8 files (see the header). */
const fixture = (children: number, seed: number) => {
  const random = mulberry32(seed)
  const files: Record<string, string> = {}
  const text = (tag: string, n: number) => Array.from({ length: n }, (_, i) => `${tag} line ${i + 1} ${Math.floor(random() * 1e9)}`).join("\n") + "\n"
  const groups = Math.ceil(children / 8)
  for (let g = 0; g < groups; g++) files[`shared/s${g}.txt`] = text(`s${g}`, SHARED_LINES)
  files["shared/hot.txt"] = text("hot", 5)
  const tasks = []
  for (let i = 0; i < children; i++) {
    const patches: Array<string> = []
    for (let j = 0; j < 7; j++) {
      const rel = `c${i}/f${j}.txt`
      files[rel] = text(`c${i}f${j}`, 12)
      const lines = files[rel]!.split("\n")
      patches.push(`*** Update File: ${rel}\n@@\n ${lines[2]}\n-${lines[3]}\n+${lines[3]} edited by ${i}\n ${lines[4]}`)
    }
    // 8 children per shared file, each at its own line: they merge.
    const shared = `shared/s${Math.floor(i / 8)}.txt`
    const at = 2 + 4 * (i % 8)
    const sl = files[shared]!.split("\n")
    patches.push(`*** Update File: ${shared}\n@@\n ${sl[at - 1]}\n-${sl[at]}\n+${sl[at]} merged from ${i}\n ${sl[at + 1]}`)
    if (i % 16 === 0) {
      const hot = files["shared/hot.txt"]!.split("\n")
      patches.push(`*** Update File: shared/hot.txt\n@@\n ${hot[0]}\n-${hot[1]}\n+hot edited by ${i}\n ${hot[2]}`)
    }
    tasks.push({
      id: `child-${String(i).padStart(3, "0")}`,
      mode: "transactional_write",
      writeScope: [`c${i}`, "shared"],
      timeoutMs: 120_000,
      maxAttempts: 3,
      actions: [{ read_file: { path: `c${i}/f0.txt` } }, { apply_patch: { patch: `*** Begin Patch\n${patches.join("\n")}\n*** End Patch` } }, { finish: {} }]
    })
  }
  return { files, plan: { schemaVersion: 1, tasks }, lastOutcomes: [] as Array<string> }
}

let cases = 0
/** A fresh workspace holding `files`, and the plan file beside it. */
const materialise = (f: { readonly files: Record<string, string>; readonly plan: unknown }) => {
  const dir = path.join(tmp, `case-${++cases}`)
  const ws = path.join(dir, "ws")
  for (const [rel, content] of Object.entries(f.files)) {
    fs.mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true })
    fs.writeFileSync(path.join(ws, rel), content)
  }
  const planFile = path.join(dir, "plan.json")
  fs.writeFileSync(planFile, JSON.stringify(f.plan))
  return { ws, planFile }
}

// ---------------------------------------------------------------------------------------------
// comparing
// ---------------------------------------------------------------------------------------------

const tree = (ws: string): Record<string, string> => {
  const out: Record<string, string> = {}
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (e.name === ".forkjoin") continue
      const abs = path.join(dir, e.name)
      const rel = path.relative(ws, abs)
      if (e.isDirectory()) walk(abs)
      else out[rel] = `${(fs.statSync(abs).mode & 0o7777).toString(8)} ${fs.readFileSync(abs).toString("base64")}`
    }
  }
  walk(ws)
  return out
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g
const TIME = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g
const comparable = (value: unknown, ws: string): string =>
  JSON.stringify(value, (key, v) => (key === "ranOn" || key === "artifacts" || key === "environmentId" || key === "decidedAt" ? undefined : v))
    .split(ws).join("<ws>")
    .replace(UUID, "<id>")
    .replace(TIME, "<time>")

const history = (ws: string): ReadonlyArray<unknown> => {
  const db = new Database(path.join(ws, ".forkjoin", "history.db"), { readonly: true, fileMustExist: true })
  try {
    return (db.prepare("SELECT record_json FROM records ORDER BY commit_ordinal").all() as Array<{ record_json: string }>).map((r) => JSON.parse(r.record_json))
  } finally {
    db.close()
  }
}

/** Why the two runs differ (first difference), or undefined when they do not. */
const difference = (local: { ws: string; out: any }, remote: { ws: string; out: any }): string | undefined => {
  const [a, b] = [tree(local.ws), tree(remote.ws)]
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) if (a[k] !== b[k]) return `workspace file ${k} differs`
  for (const key of ["mergeExecution", "conflicts", "results", "finish"]) {
    if (comparable(local.out[key], local.ws) !== comparable(remote.out[key], remote.ws)) return `${key} differs`
  }
  if (comparable(history(local.ws), local.ws) !== comparable(history(remote.ws), remote.ws)) return "history differs"
  return undefined
}

const parsed = (r: Ran, what: string): any => {
  if (r.stdout.trim() === "") throw new Error(`${what} printed nothing (exit ${r.status}): ${r.stderr.slice(-2000)}`)
  return JSON.parse(r.stdout)
}

// ---------------------------------------------------------------------------------------------
// measurements
// ---------------------------------------------------------------------------------------------

/** Differential and overhead on one storage. */
const overhead = async (storage: "sqlite" | "postgres", url: string, report: (f: Figure) => void) => {
  const four = await Promise.all([0, 1, 2, 3].map(() => startRunner(url)))
  try {
    const f = fixture(64, 0x64_08)
    const local: Array<number> = []
    const remote: Array<number> = []
    const used = new Set<string>()
    for (let i = 0; i < RUNS + 1; i++) {
      const [l, r] = [materialise(f), materialise(f)]
      const here = await cli(["run", l.planFile, "--workspace", l.ws, "--json"])
      const there = await cli(["run", r.planFile, "--workspace", r.ws, "--cluster", url, "--json"])
      const [h, t] = [parsed(here, "the local run"), parsed(there, "the cluster run")]
      for (const c of t.results) used.add(c.ranOn)
      f.lastOutcomes = t.mergeExecution.outcomes.map((o: { status: string }) => o.status)
      const differs = difference({ ws: l.ws, out: h }, { ws: r.ws, out: t })
      if (differs !== undefined) throw new Error(`the cluster run (${storage}) is not the local run: ${differs}`)
      // The first pair warms the runners' caches up and is not counted.
      if (i > 0) {
        local.push(here.ms)
        remote.push(there.ms)
      }
      fs.rmSync(path.dirname(l.ws), { recursive: true, force: true })
      fs.rmSync(path.dirname(r.ws), { recursive: true, force: true })
    }
    const perChild = local.map((ms, i) => (remote[i]! - ms) / 64)
    const counted = new Map<string, number>()
    for (const o of f.lastOutcomes) counted.set(o, (counted.get(o) ?? 0) + 1)
    const statuses = `64 children × 8 files: ${[...counted].map(([k, n]) => `${n} ${k}`).join(", ")}`
    if (storage === "sqlite") {
      report({
        bench: BENCH, metric: "differential_64x8", ours: 1, unit: "identical", n: RUNS + 1, peer: null, ratio: null, peerName: null,
        runnersUsed: used.size, measures: `${statuses}; workspace bytes, outcomes, conflicts, steps and history compared`
      })
    }
    report({
      bench: BENCH, metric: `overhead_ms_per_child_${storage}`, ours: round(median(perChild)), unit: "ms", n: RUNS, target: 20, targetKind: "ours_max",
      pass: median(perChild) <= 20, oursSpread: spread(perChild), localMs: round(median(local)), clusterMs: round(median(remote)),
      peer: round(median(local)), peerName: "local run, same plan and concurrency", ratio: round(median(remote) / median(local)), runners: 4
    })
  } finally {
    await stopAll(four)
  }
}

/** 256 children, a runner killed at a random moment, the parent killed once mid-join, then resumed. */
const faults = async (report: (f: Figure) => void) => {
  const url = `sqlite:${path.join(tmp, "faults.db")}`
  const four = await Promise.all([0, 1, 2, 3].map(() => startRunner(url)))
  try {
    const f = fixture(256, 0x256)
    const [l, r] = [materialise(f), materialise(f)]
    const here = parsed(await cli(["run", l.planFile, "--workspace", l.ws, "--json"]), "the local run")
    const random = mulberry32(Date.now() >>> 0)
    // Killed mid-children: the runs above take a few seconds; somewhere in the first half.
    const killAfter = 300 + Math.floor(random() * 1500)
    const killAt = 1 + Math.floor(random() * 200)
    const fault = FaultChannel.seal(`merge:after-child:${killAt}`, keyFile)
    const t0 = nowMs()
    const running = cli(["run", r.planFile, "--workspace", r.ws, "--cluster", url, "--json"], fault)
    await new Promise((resolve) => setTimeout(resolve, killAfter))
    const victim = four[Math.floor(random() * four.length)]!
    victim.child.kill("SIGKILL")
    const killed = await running
    if (killed.status !== null && killed.stdout !== "") throw new Error(`the parent was not killed mid-join (exit ${killed.status}): ${killed.stderr.slice(-500)}`)
    const status = parsed(await cli(["status", "--workspace", r.ws, "--json"]), "status")
    const runId: string | undefined = JSON.stringify(status).match(/run-[0-9a-f-]{36}/)?.[0]
    if (runId === undefined) throw new Error("no interrupted run to resume")
    const resumed = await cli(["run", "--resume", runId, "--workspace", r.ws, "--json"])
    const wall = nowMs() - t0
    const t = parsed(resumed, "the resumed run")
    const [a, b] = [tree(l.ws), tree(r.ws)]
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) if (a[k] !== b[k]) throw new Error(`after the faults, workspace file ${k} differs from the local run`)
    const perChild = new Map<string, number>()
    for (const rec of history(r.ws) as Array<{ transactionId?: string }>) {
      const id = rec.transactionId ?? ""
      if (id.startsWith("subagent_merge:")) perChild.set(id, (perChild.get(id) ?? 0) + 1)
    }
    const twice = [...perChild].filter(([, n]) => n !== 1)
    if (twice.length > 0) throw new Error(`children applied more than once: ${twice.map(([id]) => id).join(", ")}`)
    const localApplied = here.mergeExecution.outcomes.filter((o: { transactionId?: string }) => o.transactionId !== undefined).length
    if (perChild.size !== localApplied) throw new Error(`${perChild.size} children applied after the faults, ${localApplied} locally`)
    const retried = t.mergeExecution.outcomes.length
    report({
      bench: BENCH, metric: "faults_256", ours: perChild.size, unit: "children applied once", n: 1, peer: localApplied, peerName: "local run", ratio: 1,
      runnerKilledAfterMs: killAfter, parentKilledAfterChild: killAt, wallMs: round(wall), outcomes: retried, measures: "every applied child has exactly one transaction; workspace identical to the local run"
    })
  } finally {
    await stopAll(four)
  }
}

/** Children whose own check burns 1 s of CPU: local, then 1, 2 and 4 runners. */
const throughput = async (report: (f: Figure) => void) => {
  // CPU work, not wall time: iterations one idle core does in about a second, measured here.
  const probe = (n: number) => {
    const t0 = nowMs()
    let x = 0
    for (let i = 0; i < n; i++) x = (x * 31 + i) % 1_000_003
    return { ms: nowMs() - t0, x }
  }
  probe(1e6)
  const perMs = 2e7 / probe(2e7).ms
  const iterations = Math.round(perMs * 1000)
  const burn = { command: [process.execPath, "-e", `let x = 0; for (let i = 0; i < ${iterations}; i++) x = (x * 31 + i) % 1000003; if (x < 0) console.log(x)`], timeoutMs: 120_000 }
  const f = fixture(8, 0x8c)
  const plan = { ...f.plan, tasks: (f.plan.tasks as Array<Record<string, unknown>>).map((t) => ({ ...t, childVerify: burn })) }
  const localCase = materialise({ files: f.files, plan })
  const local = await cli(["run", localCase.planFile, "--workspace", localCase.ws, "--json"])
  parsed(local, "the local run")
  report({ bench: BENCH, metric: "check_throughput_local", ours: round(local.ms), unit: "ms", n: 1, peer: null, ratio: null, peerName: null, children: 8, cores: os.cpus().length })
  for (const count of [1, 2, 4]) {
    const url = `sqlite:${path.join(tmp, `check-${count}.db`)}`
    const list = await Promise.all(Array.from({ length: count }, () => startRunner(url, { FORKJOIN_CLUSTER_SECRET: SECRET })))
    try {
      const c = materialise({ files: f.files, plan })
      const r = await cli(["run", c.planFile, "--workspace", c.ws, "--cluster", url, "--json"], { FORKJOIN_CLUSTER_SECRET: SECRET })
      const out = parsed(r, "the cluster run")
      if (!Array.isArray(out.results)) throw new Error(`the cluster run on ${count} runner(s) did not run: ${r.stdout.slice(0, 600)}`)
      if (out.results.some((x: { childVerify?: { status: string } }) => x.childVerify?.status !== "passed")) throw new Error(`a check did not pass on ${count} runner(s)`)
      report({
        bench: BENCH, metric: `check_throughput_${count}`, ours: round(r.ms), unit: "ms", n: 1, peer: round(local.ms), peerName: "local run", ratio: round(r.ms / local.ms),
        children: 8, runners: count, cores: os.cpus().length, measures: "8 children, each check 1 s of CPU; bounded by this machine's cores"
      })
    } finally {
      await stopAll(list)
    }
  }
}

const main = async () => {
  const figures: Array<Figure> = []
  const report = (f: Figure) => (json ? emitJson(f) : figures.push(f))
  const built = ensureCliBundle(root)
  if (built.error !== undefined) {
    report(errorFigure(BENCH, "setup", built.error))
    process.exitCode = 1
    return
  }
  const step = async (metric: string, f: () => Promise<void>) => {
    if (!wanted(metric)) return
    try {
      await f()
    } catch (e) {
      report(errorFigure(BENCH, metric, e instanceof Error ? e.message : String(e)))
      process.exitCode = 1
    }
  }
  try {
    await step("overhead_ms_per_child_sqlite", () => overhead("sqlite", `sqlite:${path.join(tmp, "cluster.db")}`, report))
    const pg = process.env["FORKJOIN_TEST_PG_URL"]
    if (pg === undefined || pg === "") {
      if (wanted("overhead_ms_per_child_postgres")) report(errorFigure(BENCH, "overhead_ms_per_child_postgres", "no PostgreSQL: run eval \"$(.ci/postgres start)\" first"))
    } else await step("overhead_ms_per_child_postgres", () => overhead("postgres", pg, report))
    await step("faults_256", () => faults(report))
    await step("check_throughput", () => throughput(report))
  } finally {
    await stopAll(runners.filter((r) => r.child.exitCode === null && r.child.signalCode === null))
    fs.rmSync(tmp, { recursive: true, force: true })
  }
  if (!json) printTable(figures)
  if (process.exitCode === 1) note("FAILED: at least one figure has an error (see above)")
}

await main()
