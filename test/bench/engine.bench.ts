/**
 * `engine` bench: the native engine's durable applies (journal intent in SQLite, fsynced temp,
 * rename, directory fsync, record in SQLite) against Codex `apply_patch` and the physical floor.
 *
 * 1. `apply_process_ms`  whole `forkjoin apply --profile codex --json` process, with durable
 *                        history, vs the whole Codex `apply_patch` process, on the `format`
 *                        workload (100,000 lines, 2,000 chunks). Target: ratio <= 2.0.
 *                        Our workspace keeps its `.forkjoin/history.db` between runs (a real
 *                        agent workspace already has one); only the target file is restored.
 * 2. `library_apply_ms`  in-process `openWorkspace` once, then `applyPatch` per run (file
 *                        restored untimed), vs the Codex process. Target: ratio <= 1.0.
 * 3. `small_apply_ms`    1,000 sequential one-line durable applies over 20 small files through the
 *                        facade, median per apply, vs the physical floor measured interleaved on
 *                        the same files: open temp (wx) + write + fsync + close + rename + open dir
 *                        + fsync dir + close, plus one better-sqlite3 INSERT into a WAL,
 *                        synchronous=FULL table. Target: ratio <= 1.5.
 * 4. `peak_rss_mb`       peak RSS of the large apply: the whole CLI process vs the Codex process
 *                        (GNU `/usr/bin/time -v`), plus the library apply in a child process.
 *
 * Usage: `npm run bench -- engine [--json] [--only metric[,metric]]`.
 * Every figure checks the produced bytes first (and ours against Codex's); a wrong answer or a
 * failing run of ours makes the bench exit 1. A missing peer is reported as `peer: null`.
 */
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import Database from "better-sqlite3"
import * as Result from "effect/Result"
import { openWorkspace, type Workspace } from "../../packages/engine/src/Facade.ts"
import { type FileState, parsePatch, planPatch } from "../../packages/patch/src/index.ts"
import { CODEX_PEER_NAME, type CodexPeer, type CodexUnavailable, ensureCodex } from "./codex.ts"
import { type FormatWorkload, makeFormatWorkload, oneLineUpdatePatch } from "./fixture.ts"
import { cliPaths, ensureCliBundle, errorFigure, type Figure, emitJson, firstDifference, onlyMetrics, spread, median, note, printTable, repoRoot, round, runFailure, timeSpawn, wantsJson, gc } from "./harness.ts"

const BENCH = "engine"
// The `format` bench's workload, exactly (same seed and size).
const SEED = 0x5eed_f0a7
const LINES = 100_000
const CHUNKS = 2_000
const PROCESS_WARMUP = 1
const PROCESS_RUNS = 21
const LIBRARY_WARMUP = 2
const LIBRARY_RUNS = 21
const OPEN_CLOSE_RUNS = 5
const PARSE_PLAN_RUNS = 7
const NEW_BLOB_RUNS = 5
const SMALL_FILES = 20
const SMALL_LINES = 40
const SMALL_WARMUP = 40
const SMALL_OPS = 1_000
const RSS_RUNS = 3
const APPLY_PROCESS_TARGET_RATIO = 2.0
const LIBRARY_APPLY_TARGET_RATIO = 1.0
const SMALL_APPLY_TARGET_RATIO = 1.5
const CHILD_FLAG = "--child-library-apply"

const sha256 = (bytes: Uint8Array | string): string => `sha256:${createHash("sha256").update(bytes).digest("hex")}`
const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => Buffer.compare(a, b) === 0
const errorText = (e: unknown): string => (e instanceof Error ? (e.stack ?? e.message) : String(e))

/** Writes `bytes` to `file` and fsyncs it (untimed restores: the next timed run must not pay their writeback). */
const writeSynced = (file: string, bytes: Uint8Array): void => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const fd = fs.openSync(file, "w")
  try {
    let off = 0
    while (off < bytes.length) off += fs.writeSync(fd, bytes, off, bytes.length - off)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

// ---------------------------------------------------------------------------------------------
// Child mode (figure 4, library RSS): apply one patch through the facade, print the peak RSS.
// It never builds the workload itself, so its peak RSS is the library apply's alone.

const runChild = async (args: ReadonlyArray<string>): Promise<void> => {
  const [ws, patchFile, file, expectedHash] = args
  if (ws === undefined || patchFile === undefined || file === undefined || expectedHash === undefined) {
    process.stderr.write(`usage: ${CHILD_FLAG} WS PATCH_FILE REL_PATH EXPECTED_SHA256\n`)
    process.exit(2)
  }
  const patch = fs.readFileSync(patchFile, "utf8")
  const w = await openWorkspace(ws)
  const record = await w.applyPatch(patch, { threadId: "bench", turnId: "rss", profile: "codex" })
  await w.close()
  const got = sha256(fs.readFileSync(path.join(ws, file)))
  if (got !== expectedHash || record.changes[0]?.after?.hash !== expectedHash) {
    process.stderr.write(`child: wrong result: file ${got}, record ${String(record.changes[0]?.after?.hash)}, expected ${expectedHash}\n`)
    process.exit(1)
  }
  process.stdout.write(`${JSON.stringify({ maxRssKb: process.resourceUsage().maxRSS })}\n`)
}

// ---------------------------------------------------------------------------------------------
// Main

const main = async (): Promise<void> => {
  const argv = process.argv.slice(2)
  const json = wantsJson(argv)
  const only = onlyMetrics(argv)
  const enabled = (metric: string): boolean => only === undefined || only.has(metric)

  const root = repoRoot()
  const figures: Array<Figure> = []
  let failed = false
  let cliWarning: string | undefined

  const report = (measured: Figure): void => {
    const figure: Figure = {
      ...measured,
      load1: round(os.loadavg()[0] ?? 0, 2),
      ...((measured.metric === "apply_process_ms" || measured.metric === "peak_rss_mb") && cliWarning !== undefined ? { cliWarning } : {})
    }
    figures.push(figure)
    if (figure.error !== undefined) failed = true
    if (json) emitJson(figure)
  }

  // -------------------------------------------------------------------------------------------
  // Workload (identical to the `format` bench)

  const wantLarge = enabled("apply_process_ms") || enabled("library_apply_ms") || enabled("peak_rss_mb")
  let workload: FormatWorkload | undefined
  let originalBytes = Buffer.alloc(0)
  let expectedBytes = Buffer.alloc(0)
  let expectedHash = ""
  if (wantLarge) {
    note(`generating ${LINES} lines / ${CHUNKS} chunks (seed ${SEED.toString(16)}, the format workload)`)
    workload = makeFormatWorkload(SEED, LINES, CHUNKS)
    originalBytes = Buffer.from(workload.original, "utf8")
    expectedBytes = Buffer.from(workload.expected, "utf8")
    expectedHash = sha256(expectedBytes)
    note(`file ${originalBytes.length} bytes, patch ${Buffer.byteLength(workload.patch)} bytes`)
  }

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-bench-engine-"))
  const patchFile = path.join(tmp, "change.patch")
  if (workload !== undefined) fs.writeFileSync(patchFile, workload.patch)

  // -------------------------------------------------------------------------------------------
  // The CLI and the peer

  const { bin: cliBin } = cliPaths(root)
  const ensureCli = (): string | undefined => {
    const r = ensureCliBundle(root)
    if (r.warning !== undefined) cliWarning = r.warning
    return r.error
  }
  const wantCli = enabled("apply_process_ms") || enabled("peak_rss_mb")
  const cliError = wantCli ? ensureCli() : undefined
  const wantPeer = enabled("apply_process_ms") || enabled("library_apply_ms") || enabled("peak_rss_mb")
  const peer: CodexPeer | CodexUnavailable = wantPeer ? ensureCodex(root, note) : { _tag: "Unavailable", error: "not needed" }
  const peerError = peer._tag === "Unavailable" ? peer.error : undefined
  if (wantPeer && peerError !== undefined) note(`peer unavailable: ${peerError}`)

  // Workspaces of the large apply.
  const rel = workload?.path ?? "src/big.ts"
  const oursWs = path.join(tmp, "ours")
  const peerWs = path.join(tmp, "peer")
  const libWs = path.join(tmp, "lib")
  const rssWs = path.join(tmp, "rss")
  const target = (ws: string) => path.join(ws, rel)

  /** Checks the target of `ws` holds the expected bytes and nothing else was left beside it. */
  const checkLarge = (ws: string, who: string): string | undefined => {
    const got = fs.readFileSync(target(ws))
    if (!sameBytes(got, expectedBytes)) return `${who} produced wrong bytes: ${firstDifference(got, expectedBytes)}`
    const beside = fs.readdirSync(path.dirname(target(ws))).filter((n) => n !== path.basename(rel))
    if (beside.length > 0) return `${who} left files beside the target: ${beside.join(", ")}`
    return undefined
  }

  /** Codex `apply_patch` on a pristine copy (restore untimed); the patch goes on stdin (too big for argv). */
  const runPeer = (applyPatch: string): { ms: number; error?: string } => {
    fs.rmSync(peerWs, { recursive: true, force: true })
    writeSynced(target(peerWs), originalBytes)
    const t = timeSpawn(applyPatch, [], { cwd: peerWs, input: workload!.patch })
    const bad = runFailure("codex apply_patch", t.result)
    if (bad !== undefined) return { ms: t.ms, error: bad }
    const wrong = checkLarge(peerWs, "codex apply_patch")
    return wrong === undefined ? { ms: t.ms } : { ms: t.ms, error: wrong }
  }

  /** Checks the `--json` line of `forkjoin apply` names the expected result. */
  const checkCliJson = (stdout: string): string | undefined => {
    try {
      const out = JSON.parse(stdout) as { ok?: boolean; record?: { changes?: Array<{ path?: string; after?: { hash?: string } }> } }
      const change = out.record?.changes?.[0]
      if (out.ok !== true || out.record?.changes?.length !== 1 || change?.path !== rel || change.after?.hash !== expectedHash) {
        return `forkjoin apply --json reported an unexpected outcome: ${stdout.slice(0, 500)}`
      }
      return undefined
    } catch (e) {
      return `forkjoin apply --json printed no JSON line (${String(e)}): ${stdout.slice(0, 300)}`
    }
  }

  /** `forkjoin apply` on `ws` (its history db kept; only the file restored, untimed). */
  const runOursCli = (ws: string, wrap?: ReadonlyArray<string>): { ms: number; error?: string; stderr: string } => {
    writeSynced(target(ws), originalBytes)
    const args = [cliBin, "apply", patchFile, "--workspace", ws, "--profile", "codex", "--json"]
    const t = wrap === undefined ? timeSpawn(process.execPath, args, { cwd: tmp }) : timeSpawn(wrap[0]!, [...wrap.slice(1), process.execPath, ...args], { cwd: tmp })
    const stderr = t.result.stderr?.toString("utf8") ?? ""
    const bad = runFailure("forkjoin apply", t.result)
    if (bad !== undefined) return { ms: t.ms, error: bad, stderr }
    const badJson = checkCliJson(t.result.stdout.toString("utf8"))
    if (badJson !== undefined) return { ms: t.ms, error: badJson, stderr }
    const wrong = checkLarge(ws, "forkjoin apply")
    return wrong === undefined ? { ms: t.ms, stderr } : { ms: t.ms, error: wrong, stderr }
  }

  // -------------------------------------------------------------------------------------------
  // Figure 1: whole-process durable apply vs Codex (+ cold-start breakdown in the same loop)

  const measureApplyProcess = (): void => {
    const metric = "apply_process_ms"
    const base = { peerName: CODEX_PEER_NAME, target: APPLY_PROCESS_TARGET_RATIO, targetKind: "ratio_max" as const }
    if (cliError !== undefined) return report(errorFigure(BENCH, metric, cliError, base))
    const runHelp = (): { ms: number; error?: string } => {
      const t = timeSpawn(process.execPath, [cliBin, "--help"], { cwd: tmp })
      const bad = runFailure("forkjoin --help", t.result)
      if (bad === undefined && t.result.stdout.length === 0) return { ms: t.ms, error: "forkjoin --help printed nothing" }
      return bad === undefined ? { ms: t.ms } : { ms: t.ms, error: bad }
    }
    const runNode = (): { ms: number; error?: string } => {
      const t = timeSpawn(process.execPath, ["-e", ""], { cwd: tmp })
      const bad = runFailure("node -e ''", t.result)
      return bad === undefined ? { ms: t.ms } : { ms: t.ms, error: bad }
    }
    fs.rmSync(oursWs, { recursive: true, force: true })
    // Warm-up: the first one creates the history db (first use, reported apart), and each
    // checks ours against Codex byte for byte.
    let firstUseMs = Number.NaN
    for (let i = 0; i < PROCESS_WARMUP; i++) {
      const o = runOursCli(oursWs)
      if (o.error !== undefined) return report(errorFigure(BENCH, metric, `warm-up: ${o.error}`, base))
      if (i === 0) firstUseMs = o.ms
      if (peer._tag === "Available") {
        const p = runPeer(peer.applyPatch)
        if (p.error !== undefined) return report(errorFigure(BENCH, metric, `warm-up: ${p.error}`, base))
        const a = fs.readFileSync(target(oursWs))
        const b = fs.readFileSync(target(peerWs))
        if (!sameBytes(a, b)) return report(errorFigure(BENCH, metric, `ours and codex outputs differ: ${firstDifference(a, b)}`, base))
      }
    }
    const samples = { ours: [] as Array<number>, peer: [] as Array<number>, help: [] as Array<number>, node: [] as Array<number> }
    type Who = keyof typeof samples
    const runs: Record<Who, () => { ms: number; error?: string }> = {
      ours: () => runOursCli(oursWs),
      peer: () => (peer._tag === "Available" ? runPeer(peer.applyPatch) : { ms: Number.NaN }),
      help: runHelp,
      node: runNode
    }
    const whos: ReadonlyArray<Who> = ["ours", "peer", "help", "node"]
    for (let i = 0; i < PROCESS_RUNS; i++) {
      // Interleaved, rotating who goes first.
      for (let j = 0; j < whos.length; j++) {
        const who = whos[(i + j) % whos.length]!
        if (who === "peer" && peer._tag !== "Available") continue
        const r = runs[who]()
        if (r.error !== undefined) return report(errorFigure(BENCH, metric, `run ${i} (${who}): ${r.error}`, base))
        samples[who].push(r.ms)
      }
    }
    const o = median(samples.ours)
    const p = samples.peer.length > 0 ? median(samples.peer) : null
    const help = median(samples.help)
    const node = median(samples.node)
    const dbBytes = (() => {
      try {
        return fs.statSync(path.join(oursWs, ".forkjoin", "history.db")).size
      } catch {
        return null
      }
    })()
    report({
      bench: BENCH,
      metric,
      ours: round(o),
      peer: p === null ? null : round(p),
      ratio: p === null ? null : round(o / p),
      peerName: CODEX_PEER_NAME,
      unit: "ms",
      n: samples.ours.length,
      target: APPLY_PROCESS_TARGET_RATIO,
      targetKind: "ratio_max",
      ...(p === null ? {} : { pass: o / p <= APPLY_PROCESS_TARGET_RATIO }),
      profile: "codex",
      durable: true,
      historyDb: "kept between runs (only the target file is restored, untimed, fsynced)",
      historyDbBytes: dbBytes,
      // The very first apply of the workspace (creates .forkjoin/, migrates, stores both blobs): one sample.
      firstUseMs: round(firstUseMs),
      identicalOutput: p === null ? null : true,
      // Same run, interleaved: how much of the process is Node + bundle start-up.
      breakdown: { node_empty_ms: round(node), cli_help_ms: round(help), apply_minus_help_ms: round(o - help) },
      oursSpread: spread(samples.ours),
      ...(samples.peer.length > 0 ? { peerSpread: spread(samples.peer) } : {}),
      ...(peerError !== undefined ? { peerError } : {})
    })
  }

  // -------------------------------------------------------------------------------------------
  // Figure 2: in-process library apply vs the Codex process

  const measureLibraryApply = async (): Promise<void> => {
    const metric = "library_apply_ms"
    const base = { peerName: CODEX_PEER_NAME, target: LIBRARY_APPLY_TARGET_RATIO, targetKind: "ratio_max" as const }
    const w0 = workload!
    // Parse + plan alone (the pure core the apply runs), for the breakdown.
    const disk = new Map<string, FileState>([[rel, { _tag: "File", bytes: new Uint8Array(originalBytes) }]])
    const parsePlan: Array<number> = []
    for (let i = 0; i < PARSE_PLAN_RUNS + 2; i++) {
      gc()
      const t0 = process.hrtime.bigint()
      const parsed = parsePatch(w0.patch, { profile: "codex" })
      if (Result.isFailure(parsed)) return report(errorFigure(BENCH, metric, `parsePatch: ${parsed.failure.message}`, base))
      const plan = planPatch(parsed.success, disk, { profile: "codex", allowOverwrite: false })
      if (Result.isFailure(plan)) return report(errorFigure(BENCH, metric, `planPatch: ${plan.failure.message}`, base))
      const ms = Number(process.hrtime.bigint() - t0) / 1e6
      if (i >= 2) parsePlan.push(ms)
    }

    fs.rmSync(libWs, { recursive: true, force: true })
    writeSynced(target(libWs), originalBytes)
    // Opening (db open + migrations check + startup repair) and closing, on an existing db.
    const openClose: Array<number> = []
    {
      const w = await openWorkspace(libWs)
      await w.close()
    }
    for (let i = 0; i < OPEN_CLOSE_RUNS; i++) {
      const t0 = process.hrtime.bigint()
      const w = await openWorkspace(libWs)
      await w.close()
      openClose.push(Number(process.hrtime.bigint() - t0) / 1e6)
    }

    const ws: Workspace = await openWorkspace(libWs)
    try {
      let turn = 0
      const runOurs = async (): Promise<{ ms: number; error?: string }> => {
        writeSynced(target(libWs), originalBytes)
        gc()
        const t0 = process.hrtime.bigint()
        const record = await ws.applyPatch(w0.patch, { threadId: "bench", turnId: `t${turn++}`, profile: "codex" })
        const ms = Number(process.hrtime.bigint() - t0) / 1e6
        if (record.changes.length !== 1 || record.changes[0]?.path !== rel || record.changes[0]?.after?.hash !== expectedHash) {
          return { ms, error: `applyPatch returned an unexpected record: ${JSON.stringify(record.changes).slice(0, 500)}` }
        }
        const wrong = checkLarge(libWs, "library applyPatch")
        return wrong === undefined ? { ms } : { ms, error: wrong }
      }
      for (let i = 0; i < LIBRARY_WARMUP; i++) {
        const o = await runOurs()
        if (o.error !== undefined) return report(errorFigure(BENCH, metric, `warm-up: ${o.error}`, base))
      }
      if (peer._tag === "Available") {
        const p = runPeer(peer.applyPatch)
        if (p.error !== undefined) return report(errorFigure(BENCH, metric, `warm-up: ${p.error}`, base))
        const a = fs.readFileSync(target(libWs))
        const b = fs.readFileSync(target(peerWs))
        if (!sameBytes(a, b)) return report(errorFigure(BENCH, metric, `ours and codex outputs differ: ${firstDifference(a, b)}`, base))
      }
      const ours: Array<number> = []
      const theirs: Array<number> = []
      for (let i = 0; i < LIBRARY_RUNS; i++) {
        const order = i % 2 === 0 ? (["ours", "peer"] as const) : (["peer", "ours"] as const)
        for (const who of order) {
          if (who === "ours") {
            const o = await runOurs()
            if (o.error !== undefined) return report(errorFigure(BENCH, metric, `run ${i}: ${o.error}`, base))
            ours.push(o.ms)
          } else if (peer._tag === "Available") {
            const p = runPeer(peer.applyPatch)
            if (p.error !== undefined) return report(errorFigure(BENCH, metric, `run ${i}: ${p.error}`, base))
            theirs.push(p.ms)
          }
        }
      }
      // The same apply when neither content is in the history yet (the timed runs above restore
      // the same bytes, so their blobs are deduplicated): a unique last line, after every chunk.
      const newBlobs: Array<number> = []
      for (let i = 0; i < NEW_BLOB_RUNS; i++) {
        const trailer = `// bench trailer ${process.pid}-${Date.now()}-${i}\n`
        const before = Buffer.concat([originalBytes, Buffer.from(trailer)])
        const after = Buffer.concat([expectedBytes, Buffer.from(trailer)])
        writeSynced(target(libWs), before)
        gc()
        const t0 = process.hrtime.bigint()
        const record = await ws.applyPatch(w0.patch, { threadId: "bench", turnId: `nb${i}`, profile: "codex" })
        newBlobs.push(Number(process.hrtime.bigint() - t0) / 1e6)
        const got = fs.readFileSync(target(libWs))
        if (!sameBytes(got, after) || record.changes[0]?.after?.hash !== sha256(after)) {
          return report(errorFigure(BENCH, metric, `new-blob run ${i}: wrong result: ${firstDifference(got, after)}`, base))
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
        target: LIBRARY_APPLY_TARGET_RATIO,
        targetKind: "ratio_max",
        ...(p === null ? {} : { pass: o / p <= LIBRARY_APPLY_TARGET_RATIO }),
        profile: "codex",
        durable: true,
        breakdown: {
          parse_plan_ms: round(median(parsePlan)),
          rest_of_apply_ms: round(o - median(parsePlan)),
          open_close_ms: round(median(openClose))
        },
        // Median of NEW_BLOB_RUNS applies whose before and after contents are both new to the history db.
        newBlobsMs: round(median(newBlobs)),
        oursSpread: spread(ours),
        ...(theirs.length > 0 ? { peerSpread: spread(theirs) } : {}),
        ...(peerError !== undefined ? { peerError } : {})
      })
    } finally {
      await ws.close()
    }
  }

  // -------------------------------------------------------------------------------------------
  // Figure 3: 1,000 small durable applies vs the physical floor, interleaved on the same files

  const measureSmallApplies = async (): Promise<void> => {
    const metric = "small_apply_ms"
    const base = { peerName: "physical floor (fs + sqlite)", target: SMALL_APPLY_TARGET_RATIO, targetKind: "ratio_max" as const }
    const smallRoot = path.join(tmp, "small")
    const ws = path.join(smallRoot, "ws")
    const floorDir = path.join(smallRoot, "floor")
    fs.mkdirSync(floorDir, { recursive: true })
    // 20 files of 40 unique lines; every line is unique across the workspace.
    const names = Array.from({ length: SMALL_FILES }, (_, f) => `src/m${String(f).padStart(2, "0")}.ts`)
    const contents: Array<Array<string>> = names.map((_, f) =>
      Array.from({ length: SMALL_LINES }, (_, l) => `export const m${f}_v${l} = ${(f * 7919 + l * 104729) % 100_000} // m${f} line ${l}`)
    )
    const bytesOf = (f: number) => Buffer.from(`${contents[f]!.join("\n")}\n`, "utf8")
    for (const [f, name] of names.entries()) writeSynced(path.join(ws, name), bytesOf(f))

    // The floor's database: one table, WAL, synchronous=FULL, one autocommitted row per op.
    const floorDb = new Database(path.join(floorDir, "floor.db"))
    floorDb.pragma("journal_mode = WAL")
    floorDb.pragma("synchronous = FULL")
    floorDb.exec("CREATE TABLE IF NOT EXISTS ops (id INTEGER PRIMARY KEY, path TEXT NOT NULL, hash TEXT NOT NULL, size INTEGER NOT NULL, bytes BLOB NOT NULL)")
    const insert = floorDb.prepare("INSERT INTO ops (path, hash, size, bytes) VALUES (?, ?, ?, ?)")

    let floorSeq = 0
    /** The physical floor of one durable write of `bytes` to `rel` plus one durable SQLite row. */
    const floorOp = (f: number): { fs: number; sqlite: number } => {
      const relPath = names[f]!
      const abs = path.join(ws, relPath)
      const dir = path.dirname(abs)
      const bytes = bytesOf(f)
      const hash = sha256(bytes)
      const temp = path.join(dir, `.${path.basename(abs)}.floor-${floorSeq++}.tmp`)
      const t0 = process.hrtime.bigint()
      const fd = fs.openSync(temp, "wx", 0o666)
      let off = 0
      while (off < bytes.length) off += fs.writeSync(fd, bytes, off, bytes.length - off)
      fs.fsyncSync(fd)
      fs.closeSync(fd)
      fs.renameSync(temp, abs)
      const dfd = fs.openSync(dir, "r")
      fs.fsyncSync(dfd)
      fs.closeSync(dfd)
      const t1 = process.hrtime.bigint()
      insert.run(relPath, hash, bytes.length, bytes)
      const t2 = process.hrtime.bigint()
      return { fs: Number(t1 - t0) / 1e6, sqlite: Number(t2 - t1) / 1e6 }
    }

    let counter = 0
    /** The next one-line update (3 context lines each side) of file `f`; updates `contents` to the expected state. */
    const nextPatch = (k: number, f: number): string => {
      const lines = contents[f]!
      const l = 3 + ((k * 7 + f * 3) % (SMALL_LINES - 6))
      const old = lines[l]!
      const next = old.replace(/= \d+/, `= ${100_000 + counter++}`)
      const patch = oneLineUpdatePatch(names[f]!, lines, l, next)
      lines[l] = next
      return patch
    }

    let lastOrdinal = 0
    const w = await openWorkspace(ws)
    try {
      const engineOp = async (k: number, f: number): Promise<{ ms: number; error?: string }> => {
        const patch = nextPatch(k, f)
        const t0 = process.hrtime.bigint()
        const record = await w.applyPatch(patch, { threadId: "bench", turnId: `small-${k}`, profile: "codex" })
        const ms = Number(process.hrtime.bigint() - t0) / 1e6
        const expected = bytesOf(f)
        const got = fs.readFileSync(path.join(ws, names[f]!))
        if (!sameBytes(got, expected)) return { ms, error: `op ${k}: ${names[f]!} has wrong bytes: ${firstDifference(got, expected)}` }
        if (record.changes[0]?.after?.hash !== sha256(expected) || record.changes[0]?.path !== names[f]) {
          return { ms, error: `op ${k}: unexpected record ${JSON.stringify(record.changes).slice(0, 300)}` }
        }
        if (!(record.commitOrdinal > lastOrdinal)) return { ms, error: `op ${k}: commitOrdinal ${record.commitOrdinal} after ${lastOrdinal}` }
        lastOrdinal = record.commitOrdinal
        return { ms }
      }
      for (let k = 0; k < SMALL_WARMUP; k++) {
        const f = k % SMALL_FILES
        const e = await engineOp(SMALL_OPS + k, f)
        if (e.error !== undefined) return report(errorFigure(BENCH, metric, `warm-up: ${e.error}`, base))
        floorOp(f)
      }
      const ours: Array<number> = []
      const floorTotal: Array<number> = []
      const floorFs: Array<number> = []
      const floorSql: Array<number> = []
      gc()
      const started = process.hrtime.bigint()
      for (let k = 0; k < SMALL_OPS; k++) {
        const f = k % SMALL_FILES
        const engineFirst = k % 2 === 0
        let fl: { fs: number; sqlite: number } | undefined
        if (!engineFirst) fl = floorOp(f)
        const e = await engineOp(k, f)
        if (e.error !== undefined) return report(errorFigure(BENCH, metric, e.error, base))
        if (engineFirst) fl = floorOp(f)
        // The floor rewrote the file with its current bytes: it must still be the engine's result.
        const after = fs.readFileSync(path.join(ws, names[f]!))
        if (!sameBytes(after, bytesOf(f))) return report(errorFigure(BENCH, metric, `op ${k}: floor changed ${names[f]!}`, base))
        ours.push(e.ms)
        floorFs.push(fl!.fs)
        floorSql.push(fl!.sqlite)
        floorTotal.push(fl!.fs + fl!.sqlite)
      }
      const wallS = Number(process.hrtime.bigint() - started) / 1e9
      const rows = (floorDb.prepare("SELECT COUNT(*) AS n FROM ops").get() as { n: number }).n
      if (rows !== SMALL_OPS + SMALL_WARMUP) return report(errorFigure(BENCH, metric, `floor table has ${rows} rows, expected ${SMALL_OPS + SMALL_WARMUP}`, base))
      const o = median(ours)
      const p = median(floorTotal)
      report({
        bench: BENCH,
        metric,
        ours: round(o),
        peer: round(p),
        ratio: round(o / p),
        peerName: base.peerName,
        unit: "ms",
        n: ours.length,
        target: SMALL_APPLY_TARGET_RATIO,
        targetKind: "ratio_max",
        pass: o / p <= SMALL_APPLY_TARGET_RATIO,
        profile: "codex",
        durable: true,
        files: SMALL_FILES,
        floor_fs_ms: round(median(floorFs)),
        floor_sqlite_ms: round(median(floorSql)),
        oursSpread: spread(ours),
        peerSpread: spread(floorTotal),
        oursMean: round(ours.reduce((a, b) => a + b, 0) / ours.length),
        wallSeconds: round(wallS, 2)
      })
    } finally {
      await w.close()
      floorDb.close()
    }
  }

  // -------------------------------------------------------------------------------------------
  // Figure 4: peak RSS of the large apply

  const measurePeakRss = (): void => {
    const metric = "peak_rss_mb"
    const base = { peerName: CODEX_PEER_NAME, unit: "MB" }
    if (cliError !== undefined) return report(errorFigure(BENCH, metric, cliError, base))
    const timeBin = "/usr/bin/time"
    const maxRssKb = (stderr: string): number | undefined => {
      const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr)
      return m === null ? undefined : Number(m[1])
    }
    const haveTime = fs.existsSync(timeBin) && maxRssKb(spawnSync(timeBin, ["-v", "true"], { encoding: "utf8" }).stderr ?? "") !== undefined
    const ours: Array<number> = []
    const theirs: Array<number> = []
    const lib: Array<number> = []
    fs.rmSync(rssWs, { recursive: true, force: true })
    // The workspace already has its history db (first use is not what we measure).
    const first = runOursCli(rssWs)
    if (first.error !== undefined) return report(errorFigure(BENCH, metric, `warm-up: ${first.error}`, base))
    const self = fileURLToPath(import.meta.url)
    for (let i = 0; i < RSS_RUNS; i++) {
      if (haveTime) {
        const o = runOursCli(rssWs, [timeBin, "-v"])
        if (o.error !== undefined) return report(errorFigure(BENCH, metric, `run ${i}: ${o.error}`, base))
        const kb = maxRssKb(o.stderr)
        if (kb === undefined) return report(errorFigure(BENCH, metric, `run ${i}: no 'Maximum resident set size' from ${timeBin} -v`, base))
        ours.push(kb / 1024)
        if (peer._tag === "Available") {
          fs.rmSync(peerWs, { recursive: true, force: true })
          writeSynced(target(peerWs), originalBytes)
          const r = spawnSync(timeBin, ["-v", peer.applyPatch], { cwd: peerWs, input: workload!.patch, maxBuffer: 64 * 1024 * 1024 })
          const bad = runFailure("codex apply_patch", r)
          if (bad !== undefined) return report(errorFigure(BENCH, metric, `run ${i}: ${bad}`, base))
          const wrong = checkLarge(peerWs, "codex apply_patch")
          if (wrong !== undefined) return report(errorFigure(BENCH, metric, `run ${i}: ${wrong}`, base))
          const pk = maxRssKb(r.stderr.toString("utf8"))
          if (pk !== undefined) theirs.push(pk / 1024)
        }
      }
      // The library apply alone, in a child that never builds the workload (resourceUsage().maxRSS).
      writeSynced(target(rssWs), originalBytes)
      const c = spawnSync(process.execPath, [self, CHILD_FLAG, rssWs, patchFile, rel, expectedHash], { cwd: tmp, encoding: "utf8", maxBuffer: 16 * 1024 * 1024 })
      if (c.status !== 0) return report(errorFigure(BENCH, metric, `library child exited ${String(c.status)}: ${(c.stderr || c.stdout || "").slice(0, 1500)}`, base))
      const wrong = checkLarge(rssWs, "library child")
      if (wrong !== undefined) return report(errorFigure(BENCH, metric, wrong, base))
      lib.push((JSON.parse(c.stdout) as { maxRssKb: number }).maxRssKb / 1024)
    }
    const o = ours.length > 0 ? median(ours) : median(lib)
    const p = theirs.length > 0 ? median(theirs) : null
    report({
      bench: BENCH,
      metric,
      ours: round(o, 1),
      peer: p === null ? null : round(p, 1),
      ratio: p === null ? null : round(o / p, 2),
      peerName: CODEX_PEER_NAME,
      unit: "MB",
      n: ours.length > 0 ? ours.length : lib.length,
      ours_measures: ours.length > 0 ? "whole forkjoin apply CLI process (/usr/bin/time -v)" : "library apply child (process.resourceUsage().maxRSS)",
      library_child_mb: round(median(lib), 1),
      fileMb: round(originalBytes.length / (1024 * 1024), 2),
      ...(p === null ? { peerError: peerError ?? (haveTime ? "no RSS figure from /usr/bin/time" : `${timeBin} -v unavailable`) } : {})
    })
  }

  // -------------------------------------------------------------------------------------------

  const guard = async (metric: string, f: () => void | Promise<void>): Promise<void> => {
    try {
      await f()
    } catch (e) {
      report(errorFigure(BENCH, metric, `threw: ${errorText(e)}`))
    }
  }
  const started = Date.now()
  try {
    if (enabled("apply_process_ms")) {
      note(`figure 1: apply_process_ms (${PROCESS_RUNS} interleaved runs: forkjoin apply, codex, forkjoin --help, node -e '')`)
      await guard("apply_process_ms", measureApplyProcess)
    }
    if (enabled("library_apply_ms")) {
      note(`figure 2: library_apply_ms (${LIBRARY_RUNS} interleaved runs)`)
      await guard("library_apply_ms", measureLibraryApply)
    }
    if (enabled("small_apply_ms")) {
      note(`figure 3: small_apply_ms (${SMALL_OPS} durable applies interleaved with the physical floor)`)
      await guard("small_apply_ms", measureSmallApplies)
    }
    if (enabled("peak_rss_mb")) {
      note(`figure 4: peak_rss_mb (${RSS_RUNS} runs each)`)
      await guard("peak_rss_mb", measurePeakRss)
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
  note(`done in ${round((Date.now() - started) / 1000, 1)} s`)

  if (!json) printTable(figures)
  if (figures.length === 0) {
    note(`no figures selected; metrics: apply_process_ms, library_apply_ms, small_apply_ms, peak_rss_mb`)
    process.exitCode = 2
  } else if (failed) {
    note("FAILED: at least one figure has an error (see above)")
    process.exitCode = 1
  }
}

if (process.argv[2] === CHILD_FLAG) {
  await runChild(process.argv.slice(3))
} else {
  await main()
}
