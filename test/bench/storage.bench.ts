/**
 * `storage` bench (issue 14): what the history database costs as files are edited many times,
 * against git in the same run, and what reading an old version back costs.
 *
 * 1. `text_db_bytes`     1,000 one-line edits (`--edits N`) to a 5 MB text file (the engine
 *                        bench's `format` workload: 100,000 lines, 4.6 MB) applied one patch at
 *                        a time through the engine (library, durable). Ours: the history
 *                        database's bytes after a WAL checkpoint. Peer: git with every version
 *                        committed, after `git gc` (default settings); `gitLooseBytes` is the
 *                        same repository before the gc (every version a loose object). Both
 *                        repositories are built in the same run (git in a child process, side
 *                        by side with ours). Target: ratio <= 2. Extras split our bytes into the
 *                        snapshot store (`snapshots`, `chunks`, `chunk_bodies`, or the first release's `blobs`,
 *                        with their indexes, by SQLite `dbstat`) and the rest (records, intents,
 *                        indexes), and give the first release's blob bytes (one whole copy per
 *                        version: the sum of the versions' sizes).
 * 2. `random_read_ms`    A random old version of that file read back through
 *                        `HistoryStore.getBlob` (verified), cold: the first read of a freshly
 *                        opened store, median of 15 stores; `warmMs`: later reads in one store
 *                        (its chunk cache holds what versions share). Peer: the first release's
 *                        read of one version (one `blobs` row, sha256 checked). Target: <= 10 ms.
 *                        Each of these reads starts on a collected heap (`gc()`, as the engine
 *                        and format benches time their runs); `unsettledMs` is 15 cold reads
 *                        before that, right after the applies, which also pay for collecting
 *                        the applies' garbage.
 * 3. `text_apply_ms`     The median durable apply of those one-line patches, measured while
 *                        git builds its repository on the other core (info: the engine bench
 *                        compares apply latency before and after).
 * 4. `binary_db_bytes`   A 1 MiB random binary file, 200 versions each with a local edit
 *                        (overwrite, insert or delete of 1..64 bytes) through `Engine.applyPlan`.
 *                        Ours: snapshot-store bytes. Peer: the same versions in the first
 *                        release's layout (a `blobs` table in a scratch database, `dbstat`).
 * 5. `rewrite_db_bytes`  A text file (about 1 MB of the `format` workload's kind) rewritten
 *                        completely 50 times (a fresh seed each time: nothing to share); same
 *                        peer.
 * 6. `random_rewrite_db_bytes`  The worst case: a 1 MiB file rewritten with fresh random bytes
 *                        50 times (nothing to share, nothing to compress); same peer. Target
 *                        for 4 to 6: ratio <= 1 (no worse than today).
 * 7. `shared_db_apply_ms`  Two workspaces sharing one history database (`--db`): one-line
 *                        durable applies to a small file in one, while a child process adds 24
 *                        new 4.65 MB files (every chunk new) in the other. Ours: the 90th
 *                        percentile of their latency then (`oursMedianMs`, `oursSpread`). Peer:
 *                        the same for the same applies with nothing else writing, just before.
 *                        Info: how long a large new file keeps the database's other writers
 *                        waiting (run a previous revision for comparison).
 *
 * Usage: `npm run bench -- storage [--json] [--edits N] [--only metric[,metric]]`. Every
 * version's bytes are checked (the file after each apply, each read against its hash); a
 * wrong answer makes the bench exit 1.
 */
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { Engine } from "../../packages/engine/src/Engine.ts"
import { openWorkspace } from "../../packages/engine/src/Facade.ts"
import { HistoryStore } from "../../packages/history/src/HistoryStore.ts"
import { layerSqlite } from "../../packages/history/src/HistoryStoreSqlite.ts"
import { planOfFiles } from "../../packages/merge/src/ChildPlan.ts"
import { sha256 } from "../../packages/patch/src/Bytes.ts"
import { RelativePath, type Sha256Hash, ThreadId, TurnId } from "../../packages/schema/src/index.ts"
import { makeFormatWorkload, mulberry32 } from "./fixture.ts"
import { errorFigure, type Figure, emitJson, median, note, onlyMetrics, percentile, printTable, round, spread, wantsJson, gc } from "./harness.ts"

const BENCH = "storage"
// The `format` bench's workload, exactly (same seed and size).
const SEED = 0x5eed_f0a7
const LINES = 100_000
const EDIT_SEED = 0x5701_4a6e
const COLD_READS = 15
const WARM_READS = 21
const BINARY_BYTES = 1 << 20
const BINARY_VERSIONS = 200
const REWRITE_VERSIONS = 50
const DB_TARGET_RATIO = 2
const READ_TARGET_MS = 10
const GIT_CHILD = "--git-child"
const WRITER_CHILD = "--writer-child"
const WRITER_FILES = 24
const ALONE_APPLIES = 200
const FILE = "big.ts"

const errorText = (e: unknown): string => (e instanceof Error ? (e.stack ?? e.message) : String(e))

/** Tables of the snapshot store in either layout (with their automatic indexes). */
const STORE_TABLES = new Set(["snapshots", "chunks", "chunk_bodies", "blobs", "sqlite_autoindex_snapshots_1", "sqlite_autoindex_chunks_1", "sqlite_autoindex_blobs_1"])

/** Bytes of a database after a WAL checkpoint: the file, the snapshot store's share, the rest. */
const databaseBytes = (file: string): { readonly total: number; readonly store: number; readonly rest: number } => {
  const db = new Database(file)
  try {
    db.pragma("wal_checkpoint(TRUNCATE)")
    const rows = db.prepare("SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name").all() as Array<{ name: string; bytes: number }>
    const total = fs.statSync(file).size + (fs.existsSync(`${file}-wal`) ? fs.statSync(`${file}-wal`).size : 0)
    const store = rows.filter((r) => STORE_TABLES.has(r.name)).reduce((n, r) => n + r.bytes, 0)
    return { total, store, rest: total - store }
  } finally {
    db.close()
  }
}

/** The same versions in the first release's layout: one `blobs` row per distinct version, measured by `dbstat`. */
const firstReleaseBytes = (dir: string, versions: Iterable<Uint8Array>): number => {
  const file = path.join(dir, `first-release-${Math.random().toString(36).slice(2)}.db`)
  const db = new Database(file)
  try {
    db.pragma("journal_mode = WAL")
    db.exec("CREATE TABLE blobs (hash TEXT PRIMARY KEY, size INTEGER NOT NULL CHECK (size >= 0), bytes BLOB NOT NULL)")
    const insert = db.prepare("INSERT OR IGNORE INTO blobs (hash, size, bytes) VALUES (?, ?, ?)")
    db.transaction(() => {
      for (const v of versions) insert.run(sha256(v), v.byteLength, v)
    })()
    db.pragma("wal_checkpoint(TRUNCATE)")
    const rows = db.prepare("SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name").all() as Array<{ name: string; bytes: number }>
    return rows.filter((r) => STORE_TABLES.has(r.name)).reduce((n, r) => n + r.bytes, 0)
  } finally {
    db.close()
    fs.rmSync(file, { force: true })
    fs.rmSync(`${file}-wal`, { force: true })
    fs.rmSync(`${file}-shm`, { force: true })
  }
}

// ---------------------------------------------------------------------------------------------
// The text workload: one edit sequence, replayed identically by ours and by the git child.

interface TextWorkload {
  readonly lines: Array<string>
  /** The line each edit changes, in order; every chosen line is unique in the file. */
  readonly edits: ReadonlyArray<number>
}

const textWorkload = (edits: number): TextWorkload => {
  const lines = makeFormatWorkload(SEED, LINES, 2_000).original.split("\n")
  const counts = new Map<string, number>()
  for (const l of lines) counts.set(l, (counts.get(l) ?? 0) + 1)
  const rnd = mulberry32(EDIT_SEED)
  const chosen: Array<number> = []
  while (chosen.length < edits) {
    const i = 2 + Math.floor(rnd() * (lines.length - 5))
    // A unique line (edited lines stay unique: the edit appends its own number).
    if (counts.get(lines[i]!) === 1) chosen.push(i)
  }
  return { lines, edits: chosen }
}

const editedLine = (line: string, k: number): string => `${line} // edit ${k}`

// ---------------------------------------------------------------------------------------------
// Git child: every version a loose object and a commit, then `git gc`; prints one JSON line.

const runGitChild = async (args: ReadonlyArray<string>): Promise<void> => {
  const [dir, editsText] = args
  const { edits, lines } = textWorkload(Number(editsText))
  const env = { ...process.env, GIT_CONFIG_NOSYSTEM: "1", HOME: dir!, GIT_AUTHOR_DATE: "1700000000 +0000" }
  const repo = path.join(dir!, "repo")
  const init = spawnSync("git", ["init", "-q", repo], { env })
  if (init.status !== 0) throw new Error(`git init failed: ${init.stderr.toString()}`)
  const version = path.join(dir!, "version.tmp")
  const hasher = spawn("git", ["-C", repo, "hash-object", "-w", "--stdin-paths"], { env, stdio: ["pipe", "pipe", "inherit"] })
  let pending = ""
  const waiting: Array<(sha: string) => void> = []
  hasher.stdout.on("data", (b: Buffer) => {
    pending += b.toString("utf8")
    let nl: number
    while ((nl = pending.indexOf("\n")) >= 0) {
      const sha = pending.slice(0, nl)
      pending = pending.slice(nl + 1)
      waiting.shift()?.(sha)
    }
  })
  const hashVersion = (text: string): Promise<string> => {
    fs.writeFileSync(version, text)
    return new Promise((resolve) => {
      waiting.push(resolve)
      hasher.stdin.write(`${version}\n`)
    })
  }
  const t0 = process.hrtime.bigint()
  const shas = [await hashVersion(lines.join("\n"))]
  for (const [k, i] of edits.entries()) {
    lines[i] = editedLine(lines[i]!, k)
    shas.push(await hashVersion(lines.join("\n")))
  }
  hasher.stdin.end()
  let stream = ""
  shas.forEach((sha, k) => {
    const message = `version ${k}\n`
    stream += `commit refs/heads/main\ncommitter bench <bench@localhost> ${1_700_000_000 + k} +0000\n` +
      `data ${message.length}\n${message}M 100644 ${sha} ${FILE}\n\n`
  })
  const imported = spawnSync("git", ["-C", repo, "fast-import", "--quiet"], { env, input: stream })
  if (imported.status !== 0) throw new Error(`git fast-import failed: ${imported.stderr.toString()}`)
  const looseMs = Number(process.hrtime.bigint() - t0) / 1e6
  const objects = path.join(repo, ".git", "objects")
  const du = (): number => {
    let n = 0
    const walk = (d: string) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name)
        if (e.isDirectory()) walk(p)
        else n += fs.statSync(p).size
      }
    }
    walk(objects)
    return n
  }
  const loose = du()
  const t1 = process.hrtime.bigint()
  const gcRun = spawnSync("git", ["-C", repo, "gc", "--quiet"], { env })
  if (gcRun.status !== 0) throw new Error(`git gc failed: ${gcRun.stderr.toString()}`)
  const gcMs = Number(process.hrtime.bigint() - t1) / 1e6
  const count = spawnSync("git", ["-C", repo, "rev-list", "--count", "main"], { env, encoding: "utf8" }).stdout.trim()
  process.stdout.write(`${JSON.stringify({ loose, packed: du(), looseMs, gcMs, commits: Number(count) })}\n`)
}

// ---------------------------------------------------------------------------------------------
// Main

const main = async (): Promise<void> => {
  const argv = process.argv.slice(2)
  const json = wantsJson(argv)
  const only = onlyMetrics(argv)
  const enabled = (metric: string): boolean => only === undefined || only.has(metric)
  const editsAt = argv.indexOf("--edits")
  const EDITS = editsAt >= 0 ? Number(argv[editsAt + 1]) : 1_000
  if (!Number.isSafeInteger(EDITS) || EDITS < 1) throw new Error(`--edits: '${argv[editsAt + 1]}' is not a positive whole number`)

  const figures: Array<Figure> = []
  let failed = false
  const report = (figure: Figure): void => {
    const f = { ...figure, load1: round(os.loadavg()[0]!, 2) }
    if (f.error !== undefined) failed = true
    figures.push(f)
    if (json) emitJson(f)
  }
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-bench-storage-")))
  const started = Date.now()
  try {
    if (enabled("text_db_bytes") || enabled("random_read_ms") || enabled("text_apply_ms")) await textFigures(tmp, EDITS, enabled, report)
    if (enabled("binary_db_bytes")) await planFigure(tmp, "binary_db_bytes", report, localEdits())
    if (enabled("rewrite_db_bytes")) await planFigure(tmp, "rewrite_db_bytes", report, textRewrites())
    if (enabled("random_rewrite_db_bytes")) await planFigure(tmp, "random_rewrite_db_bytes", report, rewrites())
    if (enabled("shared_db_apply_ms")) await sharedFigure(tmp, report)
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
  note(`done in ${Math.round((Date.now() - started) / 1000)} s`)
  if (!json) printTable(figures)
  process.exit(failed ? 1 : 0)
}

const textFigures = async (
  tmp: string,
  edits: number,
  enabled: (metric: string) => boolean,
  report: (f: Figure) => void
): Promise<void> => {
  const workload = textWorkload(edits)
  const { lines } = workload
  const ws = path.join(tmp, "ws")
  fs.mkdirSync(ws)
  fs.writeFileSync(path.join(ws, FILE), lines.join("\n"))
  const fileBytes = fs.statSync(path.join(ws, FILE)).size
  note(`text: ${edits} one-line edits to a ${fileBytes}-byte file through the engine; git in a child process meanwhile`)

  // Git side by side (its own core): the same versions, loose then packed.
  const gitDir = path.join(tmp, "git")
  fs.mkdirSync(gitDir)
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), GIT_CHILD, gitDir, String(edits)], { stdio: ["ignore", "pipe", "pipe"] })
  let childOut = ""
  let childErr = ""
  child.stdout.on("data", (b: Buffer) => (childOut += b.toString("utf8")))
  child.stderr.on("data", (b: Buffer) => (childErr += b.toString("utf8")))
  const gitDone = new Promise<{ loose: number; packed: number; looseMs: number; gcMs: number; commits: number } | string>((resolve) =>
    child.on("close", (code) => {
      const line = childOut.split("\n").find((l) => l.startsWith("{"))
      resolve(code === 0 && line !== undefined ? JSON.parse(line) : `git child exited ${String(code)}: ${childErr.trim().slice(0, 1000)}`)
    })
  )

  const w = await openWorkspace(ws)
  const hashes: Array<Sha256Hash> = [sha256(fs.readFileSync(path.join(ws, FILE)))]
  const applyMs: Array<number> = []
  let wrong: string | undefined
  try {
    for (const [k, i] of workload.edits.entries()) {
      const next = editedLine(lines[i]!, k)
      const patch = `*** Begin Patch\n*** Update File: ${FILE}\n@@\n ${lines[i - 1]}\n-${lines[i]}\n+${next}\n ${lines[i + 1]}\n*** End Patch\n`
      lines[i] = next
      const t0 = process.hrtime.bigint()
      const record = await w.applyPatch(patch, { threadId: "bench", turnId: `t${k}` })
      applyMs.push(Number(process.hrtime.bigint() - t0) / 1e6)
      const after = record.changes[0]?.after?.hash
      if (after === undefined) throw new Error(`edit ${k}: the record has no after snapshot`)
      hashes.push(after)
      if (k % 100 === 99 || k === edits - 1) {
        const expected = sha256(lines.join("\n"))
        if (after !== expected || sha256(fs.readFileSync(path.join(ws, FILE))) !== expected) wrong = `edit ${k}: the file is not the expected version`
      }
      if (k % 200 === 199) note(`text: ${k + 1} edits applied`)
    }
  } finally {
    await w.close()
  }
  const db = path.join(ws, ".forkjoin", "history.db")
  const bytes = databaseBytes(db)
  // Reads are timed once git is done: the two must not share the cores then.
  note("text: waiting for git (loose objects, then git gc)")
  const git = await gitDone

  // Reads: a random old version, cold (a fresh store each) and warm (one store), verified.
  const rnd = mulberry32(EDIT_SEED + 1)
  const pick = () => hashes[Math.floor(rnd() * (hashes.length - 1))]!
  const readOnce = async (runtime: ManagedRuntime.ManagedRuntime<HistoryStore, unknown>, hash: Sha256Hash): Promise<number> => {
    const t0 = process.hrtime.bigint()
    const got = await runtime.runPromise(HistoryStore.use((s) => s.getBlob(hash)))
    const ms = Number(process.hrtime.bigint() - t0) / 1e6
    if (Option.isNone(got) || sha256(got.value) !== hash) wrong = `read of ${hash} returned other bytes`
    return ms
  }
  const coldRead = async (settle: boolean): Promise<number> => {
    const runtime = ManagedRuntime.make(layerSqlite(db))
    await runtime.runPromise(HistoryStore.use(() => Effect.void))
    if (settle) gc()
    const ms = await readOnce(runtime, pick())
    await runtime.dispose()
    return ms
  }
  // First as they come, right after the applies: each read also pays the collections that the
  // garbage of 1,000 applies and of opening its store bring on (`unsettledMs`).
  const unsettled: Array<number> = []
  for (let r = 0; r < COLD_READS; r++) unsettled.push(await coldRead(false))
  // Then each on a collected heap, as the engine and format benches time their runs: the read's
  // own cost, with the collections its own garbage brings on.
  const cold: Array<number> = []
  for (let r = 0; r < COLD_READS; r++) cold.push(await coldRead(true))
  const warm: Array<number> = []
  {
    const runtime = ManagedRuntime.make(layerSqlite(db))
    await readOnce(runtime, pick())
    for (let r = 0; r < WARM_READS; r++) {
      gc()
      warm.push(await readOnce(runtime, pick()))
    }
    await runtime.dispose()
  }
  // The first release's read: one whole row, its sha256 checked.
  const today: Array<number> = []
  {
    const file = path.join(tmp, "first-release-read.db")
    const legacy = new Database(file)
    legacy.pragma("journal_mode = WAL")
    legacy.exec("CREATE TABLE blobs (hash TEXT PRIMARY KEY, size INTEGER NOT NULL, bytes BLOB NOT NULL)")
    const version = Buffer.from(lines.join("\n"))
    const hash = sha256(version)
    legacy.prepare("INSERT INTO blobs VALUES (?, ?, ?)").run(hash, version.length, version)
    const get = legacy.prepare("SELECT size, bytes FROM blobs WHERE hash = ?")
    for (let r = 0; r < WARM_READS; r++) {
      gc()
      const t0 = process.hrtime.bigint()
      const row = get.get(hash) as { size: number; bytes: Buffer }
      const view = new Uint8Array(row.bytes.buffer, row.bytes.byteOffset, row.bytes.byteLength)
      if (view.byteLength !== row.size || sha256(view) !== hash) wrong = "the first release's read returned other bytes"
      today.push(Number(process.hrtime.bigint() - t0) / 1e6)
    }
    legacy.close()
  }

  const base = { versions: hashes.length, fileBytes }
  if (wrong !== undefined) {
    report(errorFigure(BENCH, "text_db_bytes", wrong, base))
    return
  }
  if (enabled("text_db_bytes")) {
    if (typeof git === "string") report(errorFigure(BENCH, "text_db_bytes", git, { ...base, ours: bytes.total }))
    else {
      report({
        bench: BENCH,
        metric: "text_db_bytes",
        ours: bytes.total,
        peer: git.packed,
        ratio: round(bytes.total / git.packed),
        peerName: "git, every version committed, after git gc",
        unit: "bytes",
        n: edits,
        target: DB_TARGET_RATIO,
        targetKind: "ratio_max",
        pass: bytes.total / git.packed <= DB_TARGET_RATIO,
        ...base,
        gitLooseBytes: git.loose,
        ratioToLoose: round(bytes.total / git.loose, 4),
        snapshotStoreBytes: bytes.store,
        snapshotStoreRatioToPacked: round(bytes.store / git.packed),
        recordsAndIndexBytes: bytes.rest,
        firstReleaseBlobBytes: hashes.length * fileBytes,
        gitCommits: git.commits,
        gitLooseSeconds: round(git.looseMs / 1000, 1),
        gitGcSeconds: round(git.gcMs / 1000, 1)
      })
    }
  }
  if (enabled("random_read_ms")) {
    report({
      bench: BENCH,
      metric: "random_read_ms",
      ours: round(median(cold)),
      peer: round(median(today)),
      ratio: round(median(cold) / median(today)),
      peerName: "first release: one whole blobs row, sha256 checked",
      unit: "ms",
      n: cold.length,
      target: READ_TARGET_MS,
      targetKind: "ours_max",
      pass: median(cold) <= READ_TARGET_MS,
      fileBytes,
      warmMs: round(median(warm)),
      warmPass: median(warm) <= READ_TARGET_MS,
      unsettledMs: round(median(unsettled)),
      oursSpread: spread(cold),
      unsettledSpread: spread(unsettled),
      warmSpread: spread(warm),
      peerSpread: spread(today)
    })
  }
  if (enabled("text_apply_ms")) {
    report({
      bench: BENCH,
      metric: "text_apply_ms",
      ours: round(median(applyMs)),
      peer: null,
      ratio: null,
      peerName: null,
      unit: "ms",
      n: applyMs.length,
      fileBytes,
      oursSpread: spread(applyMs)
    })
  }
}

// ---------------------------------------------------------------------------------------------
// Plan workloads (binary local edits, complete rewrites) through `Engine.applyPlan`.

/** Seeded random bytes. */
const randomBytes = (rnd: () => number, n: number): Uint8Array => new Uint8Array(n).map(() => Math.floor(rnd() * 256))

/** 1 MiB of random bytes, then local edits: overwrite, insert or delete 1..64 bytes somewhere. */
function* localEdits(): Generator<Uint8Array> {
  const rnd = mulberry32(0xb1_4a2e)
  let current = randomBytes(rnd, BINARY_BYTES)
  yield current
  for (let k = 0; k < BINARY_VERSIONS - 1; k++) {
    const at = Math.floor(rnd() * current.length)
    const span = 1 + Math.floor(rnd() * 64)
    const kind = k % 3
    current = kind === 0
      ? Buffer.concat([current.subarray(0, at), randomBytes(rnd, span), current.subarray(Math.min(current.length, at + span))])
      : kind === 1
      ? Buffer.concat([current.subarray(0, at), randomBytes(rnd, span), current.subarray(at)])
      : Buffer.concat([current.subarray(0, at), current.subarray(Math.min(current.length, at + span))])
    yield current
  }
}

/** A text file of about 1 MB rewritten completely each time (the `format` workload's kind, a new seed each). */
function* textRewrites(): Generator<Uint8Array> {
  for (let k = 0; k < REWRITE_VERSIONS; k++) yield Buffer.from(makeFormatWorkload(SEED + k + 1, 21_500, 1).original)
}

/** A 1 MiB file rewritten with fresh random bytes each time. */
function* rewrites(): Generator<Uint8Array> {
  const rnd = mulberry32(0x4e_3717)
  for (let k = 0; k < REWRITE_VERSIONS; k++) yield randomBytes(rnd, BINARY_BYTES)
}

const planFigure = async (tmp: string, metric: string, report: (f: Figure) => void, versions: Iterable<Uint8Array>): Promise<void> => {
  const ws = path.join(tmp, metric)
  fs.mkdirSync(ws)
  const db = path.join(ws, ".forkjoin", "history.db")
  const target = Schema.decodeUnknownSync(RelativePath)("data.bin")
  const runtime = ManagedRuntime.make(Engine.layer({ root: ws }).pipe(Layer.provideMerge(layerSqlite(db))))
  const kept: Array<Uint8Array> = []
  const applyMs: Array<number> = []
  let before: Uint8Array | undefined
  let wrong: string | undefined
  try {
    for (const after of versions) {
      const plan = planOfFiles([{ kind: before === undefined ? "add" : "update", path: target, before, after }])
      const t0 = process.hrtime.bigint()
      const record = await runtime.runPromise(
        Engine.use((e) => e.applyPlan({ threadId: ThreadId.make("bench"), turnId: TurnId.make(`v${kept.length}`), plan }))
      )
      applyMs.push(Number(process.hrtime.bigint() - t0) / 1e6)
      if (record.changes[0]?.after?.hash !== sha256(after)) wrong = `version ${kept.length}: the record names other bytes`
      kept.push(after)
      before = after
    }
    // Every version back, verified.
    for (const v of kept) {
      const got = await runtime.runPromise(HistoryStore.use((s) => s.getBlob(sha256(v))))
      if (Option.isNone(got) || !Buffer.from(got.value).equals(Buffer.from(v))) wrong = `a version of ${metric} read back wrong`
    }
  } catch (e) {
    wrong = errorText(e)
  } finally {
    await runtime.dispose()
  }
  if (wrong !== undefined) {
    report(errorFigure(BENCH, metric, wrong))
    return
  }
  const ours = databaseBytes(db).store
  const today = firstReleaseBytes(tmp, kept)
  report({
    bench: BENCH,
    metric,
    ours,
    peer: today,
    ratio: round(ours / today, 4),
    peerName: "first release: a whole blobs row per version",
    unit: "bytes",
    n: kept.length,
    target: 1,
    targetKind: "ratio_max",
    pass: ours <= today,
    versionBytes: kept[0]!.byteLength,
    applyMs: round(median(applyMs)),
    applySpread: spread(applyMs)
  })
}

// ---------------------------------------------------------------------------------------------
// Two workspaces sharing one history database.

/** `base` with its lowercase letters rotated by `k`: as large and as compressible, every chunk new. */
const rotated = (base: Uint8Array, k: number): Uint8Array => {
  const table = new Uint8Array(256).map((_, b) => (b >= 97 && b <= 122 ? 97 + ((b - 97 + k) % 26) : b))
  return base.map((b) => table[b]!)
}

/** The child: adds `count` new 4.65 MB files to workspace `ws` (history in `db`), one apply each; prints their median. */
const runWriterChild = async ([db, ws, count]: ReadonlyArray<string>): Promise<void> => {
  const base = new TextEncoder().encode(makeFormatWorkload(SEED, LINES, 1).original)
  const versions = Array.from({ length: Number(count) }, (_, k) => rotated(base, k + 1))
  const runtime = ManagedRuntime.make(Engine.layer({ root: ws! }).pipe(Layer.provideMerge(layerSqlite(db!))))
  const times: Array<number> = []
  try {
    await runtime.runPromise(Engine.use(() => Effect.void))
    process.stdout.write("ready\n")
    for (const [k, after] of versions.entries()) {
      const plan = planOfFiles([{ kind: "add", path: Schema.decodeUnknownSync(RelativePath)(`new-${k}.ts`), before: undefined, after }])
      const t0 = process.hrtime.bigint()
      await runtime.runPromise(Engine.use((e) => e.applyPlan({ threadId: ThreadId.make("writer"), turnId: TurnId.make(`w${k}`), plan })))
      times.push(Number(process.hrtime.bigint() - t0) / 1e6)
    }
  } finally {
    await runtime.dispose()
  }
  process.stdout.write(`${JSON.stringify({ applyMs: median(times) })}\n`)
}

const sharedFigure = async (tmp: string, report: (f: Figure) => void): Promise<void> => {
  const metric = "shared_db_apply_ms"
  const dir = path.join(tmp, "shared")
  const db = path.join(dir, "history.db")
  const [writerWs, ws] = [path.join(dir, "writer"), path.join(dir, "small")]
  for (const d of [writerWs, ws]) fs.mkdirSync(d, { recursive: true })
  const lines = Array.from({ length: 20 }, (_, i) => `export const line${i} = ${i}`)
  fs.writeFileSync(path.join(ws, "small.ts"), `${lines.join("\n")}\n`)
  note(`shared database: one-line applies, alone, then while a child adds ${WRITER_FILES} new ${(LINES / 1000).toFixed(0)}k-line files`)
  const w = await openWorkspace(ws, { db })
  let k = 0
  const applyOnce = async (): Promise<number> => {
    // A turn of the event loop first: an apply can complete without one (synchronous SQLite
    // and file calls), and the child's output and exit must be heard.
    await new Promise((resolve) => setImmediate(resolve))
    const i = k % lines.length
    const next = `export const line${i} = ${k + 100}`
    const patch = `*** Begin Patch\n*** Update File: small.ts\n@@\n-${lines[i]}\n+${next}\n*** End Patch\n`
    lines[i] = next
    const t0 = process.hrtime.bigint()
    await w.applyPatch(patch, { threadId: "small", turnId: `s${k++}` })
    return Number(process.hrtime.bigint() - t0) / 1e6
  }
  let wrong: string | undefined
  const alone: Array<number> = []
  const contended: Array<number> = []
  let writer = "the writer did not finish" as { readonly applyMs: number } | string
  try {
    for (let i = 0; i < 20; i++) await applyOnce()
    for (let i = 0; i < ALONE_APPLIES; i++) alone.push(await applyOnce())
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), WRITER_CHILD, db, writerWs, String(WRITER_FILES)], { stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let err = ""
    child.stderr.on("data", (b: Buffer) => (err += b.toString("utf8")))
    const ready = new Promise<void>((resolve) =>
      child.stdout.on("data", (b: Buffer) => {
        out += b.toString("utf8")
        if (out.includes("ready\n")) resolve()
      })
    )
    let running = true
    const exited = new Promise<void>((resolve) =>
      child.on("close", (code) => {
        running = false
        const line = out.split("\n").find((l) => l.startsWith("{"))
        writer = code === 0 && line !== undefined ? JSON.parse(line) : `the writer exited ${String(code)}: ${err.trim().slice(0, 1000)}`
        resolve()
      })
    )
    await Promise.race([ready, exited])
    while (running) contended.push(await applyOnce())
    await exited
    if (fs.readFileSync(path.join(ws, "small.ts"), "utf8") !== `${lines.join("\n")}\n`) wrong = "the small file is not the expected version"
  } catch (e) {
    wrong = errorText(e)
  } finally {
    await w.close()
  }
  if (typeof writer === "string") wrong ??= writer
  if (wrong === undefined && contended.length === 0) wrong = "no apply ran while the writer did"
  if (wrong !== undefined || typeof writer === "string") {
    report(errorFigure(BENCH, metric, wrong ?? "the writer failed"))
    return
  }
  report({
    bench: BENCH,
    metric,
    ours: round(percentile(contended, 90)),
    peer: round(percentile(alone, 90)),
    ratio: round(percentile(contended, 90) / percentile(alone, 90)),
    peerName: "the same applies with nothing else writing (p90)",
    unit: "ms",
    n: contended.length,
    oursMedianMs: round(median(contended)),
    peerMedianMs: round(median(alone)),
    oursSpread: spread(contended),
    peerSpread: spread(alone),
    writerFiles: WRITER_FILES,
    writerApplyMs: round(writer.applyMs)
  })
}

const gitAt = process.argv.indexOf(GIT_CHILD)
const writerAt = process.argv.indexOf(WRITER_CHILD)
;(gitAt >= 0
  ? runGitChild(process.argv.slice(gitAt + 1))
  : writerAt >= 0
  ? runWriterChild(process.argv.slice(writerAt + 1))
  : main()).catch((e: unknown) => {
  process.stderr.write(`[bench] storage failed: ${errorText(e)}\n`)
  process.exit(1)
})
