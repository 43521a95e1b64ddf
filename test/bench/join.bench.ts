/**
 * `join` bench: a whole forkjoin run (32 scripted children × 8 edited files, export, join
 * with durable history) on a git repository, against the git-worktree way with the git CLI in
 * the same run.
 *
 * Each size (2,000 and 20,000 files, 3-7 KB each) is generated once per bench run and
 * committed with the git CLI. forkjoin works in `git clone`s of it (one for the CLI runs, one
 * for the library runs, each with its own history db). Child `k` applies one
 * patch making a one-line update in each of 8 files; the 256 files are spread over the whole
 * tree and disjoint, so every child joins as `applied` and every git merge is clean.
 *
 * 1. `join_total_ms_20k` (headline)  `forkjoin run plan.json --workspace WS --json`, the
 *      built CLI as a whole process (start-up, plan decode, children at the CLI's default
 *      concurrency, export of fsynced blobs, 32 durable join transactions, JSON output), vs
 *      the git-worktree way: per child `git worktree add -b child-k`, write the same 8 files,
 *      `git commit -a`, then `git merge --no-edit child-k` into main, one after the other as a
 *      user would (git with its default config; `gitPhasesMs` splits its time). Target:
 *      ratio <= 0.1.
 * 2. `join_library_ms_20k`  the same run in process: `Run.runPlan` of `@forkjoin/orchestrator`
 *      under `Run.layer` (the layer the CLI's `orchestratorLayer` wraps), plan file read and
 *      decoded, layer built per run like one CLI invocation. Same peer. Beside it, the medians
 *      of its two phases, split at the last child's `progress` line: `childrenMs` (32 children
 *      staging in overlays and exporting, 4 at once, the CLI's default) and `joinMs`.
 * 3. `join_total_ms_2k` / `join_library_ms_2k`  the same at 2,000 files, peer git at 2,000.
 * 4. `join_scaling_20k_vs_2k`  forkjoin CLI at 20k vs at 2k (target: ratio <= 1.2), ratio of
 *      the medians, with the median of the per-run ratios beside it (`pairedRatioMedian`: run i
 *      at both sizes back to back); `join_library_scaling_20k_vs_2k` the same for the library.
 * 5. `join_peak_rss_mb_20k`  peak RSS of the forkjoin CLI process (GNU `/usr/bin/time -v`,
 *      every timed 20k run; median reported, max beside it). Target: <= 250 MB. The library run
 *      alone in a child process (`process.resourceUsage().maxRSS`) is reported beside it.
 *
 * Before every forkjoin run the 256 files are restored (fsynced, untimed) and the previous
 * run's artifacts removed; the workspace keeps its `.forkjoin/history.db` (a real workspace
 * has one; the first, cold run is reported as `coldMs`). Correctness (a wrong answer makes
 * the bench exit 1): forkjoin exits 0, `ok`, status `applied`, 32 outcomes `applied` with a
 * transaction each, every edited file holds the expected bytes, and `git status` of the
 * workspace shows exactly the 256 files modified (plus `.forkjoin/`). The git way must leave
 * main clean, with the same 256 files changed since the base commit and the same bytes.
 *
 * Usage: `npm run bench -- join [--json] [--runs N] [--warmup N] [--git-runs N] [--dir DIR]`,
 * by default 5 runs after 1 warm-up for forkjoin and 1 run of the git way per size (at 20k it
 * alone takes 60-90 s). Everything lives in a temp directory under DIR (default the OS temp
 * directory); the git way's worktrees are removed by a detached `rm -rf` after the figures are
 * printed (deleting 32 × 20,000 checked-out files takes minutes on a slow disk).
 */
import { spawn, spawnSync, type SpawnSyncReturns } from "node:child_process"
import * as fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as OrchestratorRun from "../../packages/orchestrator/src/Run.ts"
import { sha256 } from "../../packages/patch/src/Bytes.ts"
import * as RunPlan from "../../packages/runtime/src/RunPlan.ts"
import { ThreadId } from "../../packages/schema/src/Ids.ts"
import { cliPaths, emitJson, ensureCliBundle, errorFigure, type Figure, median, note, printTable, repoRoot, round, runFailure, spread, timeSpawn, wantsJson, gc } from "./harness.ts"
import { type ChildWork, makeChildren, planOf, writeRepoFiles } from "./joinFixture.ts"

const BENCH = "join"
const SIZES = [2_000, 20_000] as const
const CHILDREN = 32
const FILES_PER_CHILD = 8
const DEFAULT_RUNS = 5
const DEFAULT_WARMUP = 1
const DEFAULT_GIT_RUNS = 1
const RATIO_TARGET = 0.1
const SCALING_TARGET = 1.2
const RSS_TARGET_MB = 250
const CHILD_FLAG = "--child-library-run"
const TIME_BIN = "/usr/bin/time"
const SPAWN_TIMEOUT_MS = 300_000
const TRASH = "trash"

type Size = (typeof SIZES)[number]
const label = (n: Size): string => `${n / 1000}k`
const errorText = (e: unknown): string => (e instanceof Error ? (e.stack ?? e.message) : String(e))
const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6

/** Writes `text` to `file` and fsyncs it (untimed restores must not leave writeback for a timed run). */
const writeSynced = (file: string, text: string): void => {
  const fd = fs.openSync(file, "w")
  try {
    const buf = Buffer.from(text, "utf8")
    let off = 0
    while (off < buf.length) off += fs.writeSync(fd, buf, off, buf.length - off)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/** The library run as the CLI does it: plan file read and decoded, the orchestrator's layer built for this run. */
const runLibrary = (ws: string, planFile: string, progress?: (line: string) => void): Promise<OrchestratorRun.RunOutcome> => {
  const plan = RunPlan.decodeJson(fs.readFileSync(planFile, "utf8"))
  if (Result.isFailure(plan)) return Promise.reject(new Error(plan.failure.message))
  return Effect.runPromise(
    OrchestratorRun.runPlan(plan.success, {
      planDirectory: path.dirname(planFile),
      callerThreadId: ThreadId.make("cli"),
      admission: { _tag: "Gate", env: { FORKJOIN_AUTONOMY: "bold" } },
      ...(progress === undefined ? {} : { progress: (line: string) => Effect.sync(() => progress(line)) })
    }).pipe(
      Effect.provide(OrchestratorRun.layer(ws, path.join(ws, ".forkjoin", "history.db")))
    )
  )
}

// ---------------------------------------------------------------------------------------------
// Child mode (library RSS): one library run, nothing else in the process; prints its peak RSS.

const runChildMode = async (args: ReadonlyArray<string>): Promise<void> => {
  const [ws, planFile] = args
  if (ws === undefined || planFile === undefined) {
    process.stderr.write(`usage: ${CHILD_FLAG} WS PLAN_FILE\n`)
    process.exit(2)
  }
  const t0 = nowMs()
  const o = await runLibrary(ws, planFile)
  const ms = nowMs() - t0
  process.stdout.write(`${JSON.stringify({ maxRssKb: process.resourceUsage().maxRSS, ms, finishOk: o.finish.ok, status: o.run.status })}\n`)
}

// ---------------------------------------------------------------------------------------------
// git

const gitEnv: NodeJS.ProcessEnv = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "bench",
  GIT_AUTHOR_EMAIL: "bench@example.invalid",
  GIT_COMMITTER_NAME: "bench",
  GIT_COMMITTER_EMAIL: "bench@example.invalid",
  GIT_TERMINAL_PROMPT: "0"
}

/** Runs git; throws with its stderr when it fails. */
const git = (args: ReadonlyArray<string>, cwd?: string): SpawnSyncReturns<Buffer> => {
  const r = spawnSync("git", args, { cwd, env: gitEnv, maxBuffer: 256 * 1024 * 1024, timeout: SPAWN_TIMEOUT_MS })
  const bad = runFailure(`git ${args.join(" ")}`, r)
  if (bad !== undefined) throw new Error(bad)
  return r
}

/** `git status --porcelain -z` as `XY path` entries. */
const gitStatus = (dir: string): Array<string> =>
  git(["-C", dir, "status", "--porcelain=v1", "-z", "--untracked-files=normal"]).stdout.toString("utf8").split("\0").filter((s) => s !== "")

// ---------------------------------------------------------------------------------------------
// Setup and checks

interface Setup {
  readonly size: Size
  readonly label: string
  /** The committed repository, the git way's main worktree. */
  readonly repo: string
  readonly base: string
  /** forkjoin's workspaces, clones of `repo`: one for the CLI, one for the library (each keeps its own history db). */
  readonly cliWs: string
  readonly libWs: string
  readonly planFile: string
  readonly children: ReadonlyArray<ChildWork>
  readonly repoBytes: number
  cliMs: Array<number>
  cliRssMb: Array<number>
  libMs: Array<number>
  libChildrenMs: Array<number>
  gitMs: Array<number>
  gitPhases: Array<{ add: number; edit: number; commit: number; merge: number }>
  cliColdMs?: number
  libChildRssMb?: number
  cliError?: string
  libError?: string
  gitError?: string
}

const edits = (s: Setup) => s.children.flatMap((c) => c.files)

/** Builds the repository of `size` files, commits and packs it, and clones forkjoin's two workspaces from it. */
const setUp = (tmp: string, size: Size): Setup => {
  const l = label(size)
  const t0 = Date.now()
  const repo = path.join(tmp, `repo-${l}`)
  fs.mkdirSync(repo, { recursive: true })
  const repoBytes = writeRepoFiles(repo, size)
  git(["init", "-q", "-b", "main", repo])
  git(["-C", repo, "add", "-A"])
  // No automatic (detached) gc after the big commit: pack once, explicitly, like a repository that has lived.
  git(["-C", repo, "-c", "gc.auto=0", "commit", "-q", "-m", "base"])
  git(["-C", repo, "gc", "-q"])
  const base = git(["-C", repo, "rev-parse", "HEAD"]).stdout.toString("utf8").trim()
  // Two workspaces, so a CLI bundle rebuilt mid-run (other work on the sources) never meets the
  // library's history db at another schema version.
  const cliWs = path.join(tmp, `forkjoin-cli-${l}`)
  const libWs = path.join(tmp, `forkjoin-lib-${l}`)
  git(["clone", "-q", repo, cliWs])
  git(["clone", "-q", repo, libWs])
  const children = makeChildren(size, CHILDREN, FILES_PER_CHILD)
  const planFile = path.join(tmp, `plan-${l}.json`)
  fs.writeFileSync(planFile, JSON.stringify(planOf(children)))
  note(`built ${l}: ${size} files, ${round(repoBytes / (1024 * 1024), 1)} MB, committed and cloned twice in ${round((Date.now() - t0) / 1000, 1)} s`)
  return { size, label: l, repo, base, cliWs, libWs, planFile, children, repoBytes, cliMs: [], cliRssMb: [], libMs: [], libChildrenMs: [], gitMs: [], gitPhases: [] }
}

/** Puts the 256 files back (fsynced) and drops the previous run's artifacts; the history db stays. */
const restore = (s: Setup, ws: string): void => {
  for (const e of edits(s)) writeSynced(path.join(ws, e.path), e.original)
  fs.rmSync(path.join(ws, ".forkjoin", "runs"), { recursive: true, force: true })
}

/** Every edited file holds its expected bytes in `dir`. */
const checkFiles = (s: Setup, dir: string): string | undefined => {
  for (const e of edits(s)) {
    const got = sha256(fs.readFileSync(path.join(dir, e.path)))
    if (got !== e.expectedHash) return `${e.path} hashes to ${got}, expected ${e.expectedHash}`
  }
  return undefined
}

/** forkjoin's workspace after a run: the expected bytes, and nothing else changed per git. */
const checkWorkspace = (s: Setup, ws: string): string | undefined => {
  const files = checkFiles(s, ws)
  if (files !== undefined) return files
  const want = new Set(edits(s).map((e) => ` M ${e.path}`))
  const status = gitStatus(ws).filter((e) => e !== "?? .forkjoin/")
  const extra = status.filter((e) => !want.has(e))
  if (extra.length > 0 || status.length !== want.size) {
    return `git status shows ${status.length} entries, expected the ${want.size} edited files: ${extra.slice(0, 5).join(", ")}`
  }
  return undefined
}

/** What the join must have recorded: every child applied as its own transaction. */
const checkOutcome = (o: { finishOk: boolean; status: string; outcomes?: ReadonlyArray<{ childId: string; status: string; transactionId?: string | undefined }> }): string | undefined => {
  if (!o.finishOk) return `finish not ok (merge status ${o.status})`
  if (o.status !== "applied") return `merge status ${o.status}, expected applied`
  if (o.outcomes === undefined) return undefined
  if (o.outcomes.length !== CHILDREN) return `${o.outcomes.length} outcomes, expected ${CHILDREN}`
  const bad = o.outcomes.filter((c) => c.status !== "applied" || c.transactionId === undefined)
  if (bad.length > 0) return `children not applied: ${bad.slice(0, 5).map((c) => `${c.childId}=${c.status}`).join(", ")}`
  return undefined
}

const maxRssKb = (stderr: string): number | undefined => {
  const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr)
  return m === null ? undefined : Number(m[1])
}

// ---------------------------------------------------------------------------------------------
// The measured operations

/** One `forkjoin run` CLI process (under `/usr/bin/time -v` when available). */
const runCli = (s: Setup, withTime: boolean): { ms: number; rssMb?: number } | { error: string } => {
  restore(s, s.cliWs)
  const { bin } = cliPaths(repoRoot())
  const { FORKJOIN_FAULT: _fault, ...inherited } = process.env
  // A scratch workspace: mutating children run at bold, as the library run below does.
  const env = { ...inherited, FORKJOIN_AUTONOMY: "bold" }
  const args = [bin, "run", s.planFile, "--workspace", s.cliWs, "--json"]
  gc()
  const r = withTime
    ? timeSpawn(TIME_BIN, ["-v", process.execPath, ...args], { env, timeout: SPAWN_TIMEOUT_MS })
    : timeSpawn(process.execPath, args, { env, timeout: SPAWN_TIMEOUT_MS })
  const bad = runFailure("forkjoin run", r.result)
  if (bad !== undefined) return { error: bad }
  let out: { ok: boolean; mergeExecution: { status: string; outcomes: Array<{ childId: string; status: string; transactionId?: string }> } }
  try {
    out = JSON.parse(r.result.stdout.toString("utf8"))
  } catch (e) {
    return { error: `forkjoin run --json printed no JSON: ${errorText(e)}` }
  }
  const wrong = checkOutcome({ finishOk: out.ok, status: out.mergeExecution.status, outcomes: out.mergeExecution.outcomes }) ?? checkWorkspace(s, s.cliWs)
  if (wrong !== undefined) return { error: wrong }
  const kb = withTime ? maxRssKb(r.result.stderr.toString("utf8")) : undefined
  return { ms: r.ms, ...(kb === undefined ? {} : { rssMb: kb / 1024 }) }
}

/**
 * One in-process library run. The progress lines split it: until the last child finished
 * (children and their export), then the join (from the last child to the end of `runPlan`).
 */
const runLib = async (s: Setup): Promise<{ ms: number; childrenMs: number } | { error: string }> => {
  restore(s, s.libWs)
  let lastChild = 0
  gc()
  const t0 = nowMs()
  const o = await runLibrary(s.libWs, s.planFile, (line) => {
    if (line.startsWith("child ")) lastChild = nowMs()
  })
  const ms = nowMs() - t0
  const wrong = checkOutcome({ finishOk: o.finish.ok, status: o.run.status, outcomes: o.run.outcomes }) ?? checkWorkspace(s, s.libWs)
  if (wrong !== undefined) return { error: wrong }
  if (lastChild === 0) return { error: "runPlan reported no child through `progress`" }
  return { ms, childrenMs: lastChild - t0 }
}

/** The library run alone in a child process: its peak RSS. */
const runLibChild = (s: Setup): { rssMb: number } | { error: string } => {
  restore(s, s.libWs)
  const self = fileURLToPath(import.meta.url)
  const r = spawnSync(process.execPath, [self, CHILD_FLAG, s.libWs, s.planFile], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024, timeout: SPAWN_TIMEOUT_MS })
  if (r.status !== 0) return { error: `library child exited ${String(r.status)}: ${(r.stderr || r.stdout || "").slice(0, 1500)}` }
  const o = JSON.parse(r.stdout) as { maxRssKb: number; finishOk: boolean; status: string }
  const wrong = checkOutcome(o) ?? checkWorkspace(s, s.libWs)
  return wrong === undefined ? { rssMb: o.maxRssKb / 1024 } : { error: wrong }
}

/** The git-worktree way, timed per phase; afterwards (untimed) the repository goes back to the base commit. */
const runGit = (s: Setup, tmp: string, run: number): { ms: number; phases: { add: number; edit: number; commit: number; merge: number } } | { error: string } => {
  const trees = path.join(tmp, `worktrees-${s.label}-${run}`)
  const phases = { add: 0, edit: 0, commit: 0, merge: 0 }
  const step = (phase: keyof typeof phases, f: () => void): void => {
    const t0 = nowMs()
    f()
    phases[phase] += nowMs() - t0
  }
  try {
    gc()
    for (const c of s.children) {
      const wt = path.join(trees, c.id)
      step("add", () => git(["-C", s.repo, "worktree", "add", "-q", "-b", c.id, wt, "main"]))
      step("edit", () => {
        for (const e of c.files) fs.writeFileSync(path.join(wt, e.path), e.expected)
      })
      step("commit", () => git(["-C", wt, "commit", "-q", "-a", "-m", c.id]))
    }
    for (const c of s.children) step("merge", () => git(["-C", s.repo, "merge", "-q", "--no-edit", c.id]))
    const ms = phases.add + phases.edit + phases.commit + phases.merge
    // main: clean, exactly the 256 files changed since the base commit, with the expected bytes.
    const status = gitStatus(s.repo)
    if (status.length > 0) return { error: `main is not clean after the merges: ${status.slice(0, 5).join(", ")}` }
    const changed = git(["-C", s.repo, "diff", "--name-only", s.base, "HEAD"]).stdout.toString("utf8").split("\n").filter((l) => l !== "").sort()
    const want = edits(s).map((e) => e.path).sort()
    if (JSON.stringify(changed) !== JSON.stringify(want)) return { error: `git changed ${changed.length} files since the base, expected ${want.length}` }
    const files = checkFiles(s, s.repo)
    if (files !== undefined) return { error: `git way: ${files}` }
    return { ms, phases }
  } catch (e) {
    return { error: errorText(e) }
  } finally {
    // Back to the base commit for the next run (untimed; a user's cleanup is not measured).
    // Deleting 32 checkouts of 20,000 files takes minutes here: the trees go to the trash,
    // removed after the figures are out (see `main`).
    if (fs.existsSync(trees)) {
      fs.mkdirSync(path.join(tmp, TRASH), { recursive: true })
      fs.renameSync(trees, path.join(tmp, TRASH, path.basename(trees)))
    }
    try {
      git(["-C", s.repo, "worktree", "prune"])
      git(["-C", s.repo, "reset", "-q", "--hard", s.base])
      for (const c of s.children) spawnSync("git", ["-C", s.repo, "branch", "-q", "-D", c.id], { env: gitEnv })
    } catch (e) {
      note(`git reset after run ${run} failed: ${errorText(e)}`)
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Main

const main = async (): Promise<void> => {
  const argv = process.argv.slice(2)
  const json = wantsJson(argv)
  const flag = (name: string): string | undefined => {
    const i = argv.findIndex((a) => a === name || a.startsWith(`${name}=`))
    if (i === -1) return undefined
    return argv[i]!.includes("=") ? argv[i]!.slice(name.length + 1) : argv[i + 1]
  }
  const runs = Number(flag("--runs") ?? DEFAULT_RUNS)
  const warmup = Number(flag("--warmup") ?? DEFAULT_WARMUP)
  const gitRuns = Number(flag("--git-runs") ?? DEFAULT_GIT_RUNS)
  if (![runs, warmup, gitRuns].every((n) => Number.isInteger(n)) || runs < 1 || warmup < 0 || gitRuns < 0) {
    process.stderr.write("usage: npm run bench -- join [--json] [--runs N>=1] [--warmup N>=0] [--git-runs N>=0] [--dir DIR]\n")
    process.exit(2)
  }
  const tmp = fs.mkdtempSync(path.join(flag("--dir") ?? os.tmpdir(), "forkjoin-bench-join-"))
  const figures: Array<Figure> = []
  let failed = false
  const report = (f: Figure): void => {
    const figure: Figure = { ...f, load1: round(os.loadavg()[0] ?? 0, 2) }
    figures.push(figure)
    if (figure.error !== undefined) failed = true
    if (json) emitJson(figure)
  }
  const started = Date.now()
  try {
    const bundle = ensureCliBundle(repoRoot())
    if (bundle.error !== undefined) throw new Error(bundle.error)
    const haveTime = fs.existsSync(TIME_BIN) && maxRssKb(spawnSync(TIME_BIN, ["-v", "true"], { encoding: "utf8" }).stderr ?? "") !== undefined
    const setups = SIZES.map((size) => setUp(tmp, size))
    spawnSync("sync")

    // forkjoin: cold first run (history db created), warm-ups, then runs alternating CLI and library.
    note(`measuring forkjoin: ${warmup} warm-up + ${runs} runs of CLI and library per size (${CHILDREN} children x ${FILES_PER_CHILD} files)`)
    for (let i = -1; i < warmup + runs; i++) {
      const order = i % 2 === 0 ? setups : [...setups].reverse()
      for (const s of order) {
        const kinds = i % 2 === 0 ? (["cli", "lib"] as const) : (["lib", "cli"] as const)
        for (const kind of i === -1 ? (["cli"] as const) : kinds) {
          if (kind === "cli" && s.cliError !== undefined) continue
          if (kind === "lib" && s.libError !== undefined) continue
          const at = i === -1 ? "cold run" : `run ${i}${i < warmup ? " (warm-up)" : ""}`
          try {
            if (kind === "cli") {
              const r = runCli(s, haveTime && i >= warmup)
              if ("error" in r) s.cliError = `${at}: ${r.error}`
              else if (i === -1) s.cliColdMs = r.ms
              else if (i >= warmup) {
                s.cliMs.push(r.ms)
                if (r.rssMb !== undefined) s.cliRssMb.push(r.rssMb)
              }
            } else {
              const r = await runLib(s)
              if ("error" in r) s.libError = `${at}: ${r.error}`
              else if (i >= warmup) {
                s.libMs.push(r.ms)
                s.libChildrenMs.push(r.childrenMs)
              }
            }
          } catch (e) {
            if (kind === "cli") s.cliError = `${at}: threw: ${errorText(e)}`
            else s.libError = `${at}: threw: ${errorText(e)}`
          }
        }
      }
    }
    const big = setups.find((s) => s.size === 20_000)!
    if (big.libError === undefined) {
      const r = runLibChild(big)
      if ("error" in r) big.libError = `library RSS child: ${r.error}`
      else big.libChildRssMb = r.rssMb
    }

    // The git way, after forkjoin (its 32 checkouts leave gigabytes of writeback: synced before and after).
    spawnSync("sync")
    for (let run = 0; run < gitRuns; run++) {
      for (const s of setups) {
        if (s.gitError !== undefined) continue
        note(`measuring the git way at ${s.label}, run ${run + 1}/${gitRuns}`)
        const r = runGit(s, tmp, run)
        if ("error" in r) s.gitError = `run ${run}: ${r.error}`
        else {
          s.gitMs.push(r.ms)
          s.gitPhases.push(r.phases)
        }
        spawnSync("sync")
      }
    }

    // -------------------------------------------------------------------------------------
    // Figures
    const small = setups.find((s) => s.size === 2_000)!
    const med = (xs: ReadonlyArray<number>): number | null => (xs.length > 0 ? median(xs) : null)
    const gitPeer = "git worktree add + edit + commit -a per child, then git merge each branch (git CLI, sequential)"
    const gitExtra = (s: Setup) => {
      if (s.gitPhases.length === 0) return {}
      const p = s.gitPhases[s.gitPhases.length - 1]!
      return { gitPhasesMs: { add: round(p.add), edit: round(p.edit), commit: round(p.commit), merge: round(p.merge) }, gitN: s.gitMs.length }
    }
    for (const s of setups) {
      const common = { files: s.size, repoMb: round(s.repoBytes / (1024 * 1024), 1), children: CHILDREN, filesPerChild: FILES_PER_CHILD }
      const peer = med(s.gitMs)
      const peerFields = (ours: number) => ({
        peer: peer === null ? null : round(peer),
        ratio: peer === null ? null : round(ours / peer, 4),
        peerName: gitPeer,
        ...(peer === null ? { peerError: s.gitError ?? "no git runs (--git-runs 0)" } : {}),
        ...gitExtra(s)
      })
      const headline = s.size === 20_000
      {
        const metric = `join_total_ms_${s.label}`
        const ours = med(s.cliMs)
        if (s.cliError !== undefined || ours === null) report(errorFigure(BENCH, metric, s.cliError ?? "no runs", common))
        else {
          report({
            bench: BENCH,
            metric,
            ours: round(ours),
            ...peerFields(ours),
            unit: "ms",
            n: s.cliMs.length,
            ...(headline ? { target: RATIO_TARGET, targetKind: "ratio_max" as const, ...(peer === null ? {} : { pass: ours / peer <= RATIO_TARGET }) } : {}),
            ...common,
            headline,
            measures: "whole `forkjoin run plan.json --workspace WS --json` process: children, export, durable join",
            ...(s.cliColdMs === undefined ? {} : { coldMs: round(s.cliColdMs) }),
            oursSpread: spread(s.cliMs)
          })
        }
      }
      {
        const metric = `join_library_ms_${s.label}`
        const ours = med(s.libMs)
        if (s.libError !== undefined || ours === null) report(errorFigure(BENCH, metric, s.libError ?? "no runs", common))
        else {
          report({
            bench: BENCH,
            metric,
            ours: round(ours),
            ...peerFields(ours),
            unit: "ms",
            n: s.libMs.length,
            ...common,
            measures: "in process: plan decode + Run.runPlan under Run.layer (built per run)",
            // Medians of the two phases (split at the last child's progress line).
            childrenMs: round(median(s.libChildrenMs)),
            joinMs: round(median(s.libMs.map((ms, k) => ms - s.libChildrenMs[k]!))),
            oursSpread: spread(s.libMs)
          })
        }
      }
    }
    for (const [metric, get, err, what] of [
      ["join_scaling_20k_vs_2k", (s: Setup) => s.cliMs, (s: Setup) => s.cliError, "forkjoin run CLI"],
      ["join_library_scaling_20k_vs_2k", (s: Setup) => s.libMs, (s: Setup) => s.libError, "library Run.runPlan"]
    ] as const) {
      const ours = med(get(big))
      const peer = med(get(small))
      const e = err(big) ?? err(small)
      if (e !== undefined || ours === null || peer === null) report(errorFigure(BENCH, metric, e ?? "no runs"))
      else {
        report({
          bench: BENCH,
          metric,
          ours: round(ours),
          peer: round(peer),
          ratio: round(ours / peer, 3),
          peerName: `${what}, 2,000-file repository`,
          unit: "ms",
          n: get(big).length,
          target: SCALING_TARGET,
          targetKind: "ratio_max",
          pass: ours / peer <= SCALING_TARGET,
          measures: `${what}, 20,000-file repository`,
          // Run i at 20k against run i at 2k (measured back to back): less exposed to load drift.
          pairedRatioMedian: round(median(get(big).slice(0, get(small).length).map((ms, k) => ms / get(small)[k]!)), 3),
          oursSpread: spread(get(big)),
          peerSpread: spread(get(small))
        })
      }
    }
    {
      const metric = "join_peak_rss_mb_20k"
      const ours = med(big.cliRssMb)
      if (big.cliError !== undefined) report(errorFigure(BENCH, metric, big.cliError))
      else if (ours === null) report(errorFigure(BENCH, metric, haveTime ? `no 'Maximum resident set size' from ${TIME_BIN} -v` : `${TIME_BIN} -v unavailable`))
      else {
        report({
          bench: BENCH,
          metric,
          ours: round(ours, 1),
          peer: null,
          ratio: null,
          peerName: null,
          unit: "MB",
          n: big.cliRssMb.length,
          target: RSS_TARGET_MB,
          targetKind: "ours_max",
          pass: Math.max(...big.cliRssMb) <= RSS_TARGET_MB,
          oursMax: round(Math.max(...big.cliRssMb), 1),
          measures: `whole forkjoin run CLI process (${TIME_BIN} -v), 20,000 files`,
          ...(small.cliRssMb.length > 0 ? { rss2kMb: round(median(small.cliRssMb), 1) } : {}),
          ...(big.libChildRssMb === undefined ? {} : { libraryChildMb: round(big.libChildRssMb, 1) })
        })
      }
    }
  } catch (e) {
    report(errorFigure(BENCH, "setup", `threw: ${errorText(e)}`))
  }
  note(`done in ${round((Date.now() - started) / 1000, 1)} s`)
  if (!json) printTable(figures)
  if (fs.existsSync(path.join(tmp, TRASH))) {
    // The git way's worktrees (hundreds of thousands of files): removed by a detached rm, so
    // the bench does not wait minutes for its peer's cleanup.
    const rm = spawn("rm", ["-rf", tmp], { detached: true, stdio: "ignore" })
    rm.unref()
    note(`removing ${tmp} in the background (rm -rf, pid ${String(rm.pid)})`)
  } else {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
  if (failed) {
    note("FAILED: at least one figure has an error (see above)")
    process.exitCode = 1
  }
}

if (process.argv[2] === CHILD_FLAG) {
  await runChildMode(process.argv.slice(3))
} else {
  await main()
}
