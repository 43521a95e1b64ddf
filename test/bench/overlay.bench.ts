/**
 * `overlay` bench: a `changeset_export` child in a small and a large workspace. Its cost should
 * follow the files it touches, not the size of the repository.
 *
 * Two workspaces are built once, with deterministic content: 2,000 and 20,000 files of 3-7 KB
 * each, nested as `packages/pkg-NNN/src/mod-NN/file-NN.ts`. Each has two copies. The "shared"
 * copy is the workspace children view through the overlay, and must never change. The
 * "direct" copy takes the same edits through the engine. The child reads 200 files spread
 * over the whole tree and patches every other one, 100 one-line updates with 3 context lines
 * each side. Every run (after warm-ups) does all four measurements, in alternating order:
 *
 * 1. `overlay_child_ms_2k` / `overlay_child_ms_20k`  The child's whole work. A
 *      `changeset_export` `Session` runs 200 `read_file`, 100 `apply_patch` and `finish`
 *      actions from a scripted `Driver`, with the export going to a fresh directory
 *      `BlobStore` (`<artifacts>/run-N/blobs`, fsynced blobs), as `Children` sets it up. The
 *      engine (durable SQLite history) is built once per workspace, untimed, because a run
 *      shares it among its children. The 20k figure's peer is the 2k figure, with a target
 *      ratio of <= 1.2. The 2k figure's peer is the direct engine at 2k.
 * 2. `export_ms_2k` / `export_ms_20k`  The export alone: the `finish` step of the same
 *      sessions, from the driver handing out `finish` to the session's end, which is
 *      `Overlay.export` putting 100 blobs. The 20k figure's peer is the 2k figure, with a
 *      target ratio of <= 1.2 (the issue's wording).
 * 3. `direct_engine_ms_2k` / `direct_engine_ms_20k`  The same 100 patches through the durable
 *      engine (`openWorkspace`, opened once per workspace, untimed), one transaction per
 *      patch, on the direct copy. The 100 files are restored untimed, with fsync, before each
 *      run. The peer is the overlay child of the same size.
 *
 * Correctness (a wrong answer makes the bench exit 1):
 * - every session finishes with every step `ok`, and every read returns the file's bytes;
 * - every changeset has exactly the 100 patched paths, all `update`, exportable. Preimages
 *   hash to the original files. Postimages hash to the expected bytes and to what the direct
 *   engine recorded and wrote. The blob directory holds exactly those blobs, intact;
 * - every direct apply records the expected postimage, and leaves those bytes on disk;
 * - the shared tree (every entry except `.forkjoin/`: content hash, size, mode, inode, mtime
 *   and ctime, directories included) is identical before the first and after the last overlay
 *   run of each size.
 *
 * Usage: `npm run bench -- overlay [--json] [--runs N] [--warmup N] [--only 2k|20k]
 * [--dir DIR]`, by default 21 runs after 3 warm-ups. Everything lives in a temp directory
 * under DIR (default the OS temp directory), and is removed at the end.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { spawnSync } from "node:child_process"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { Engine } from "../../packages/engine/src/Engine.ts"
import { openWorkspace, type Workspace } from "../../packages/engine/src/Facade.ts"
import { layerSqlite } from "../../packages/history/src/HistoryStoreSqlite.ts"
import { BlobStore, blobPath } from "../../packages/runtime/src/BlobStore.ts"
import { scripted, Driver } from "../../packages/runtime/src/Driver.ts"
import * as Session from "../../packages/runtime/src/Session.ts"
import * as WriteScope from "../../packages/runtime/src/WriteScope.ts"
import type { Changeset, TaskId, ThreadId } from "../../packages/schema/src/index.ts"
import { type Figure, emitJson, errorFigure, median, note, printTable, round, spread, wantsJson, gc } from "./harness.ts"
import { oneLineUpdatePatch } from "./fixture.ts"

const BENCH = "overlay"
const SIZES = [2_000, 20_000] as const
const READS = 200
const PATCHES = 100
const FILES_PER_DIR = 20
const MODS_PER_PKG = 10
const DEFAULT_RUNS = 21
const DEFAULT_WARMUP = 3
const RATIO_TARGET = 1.2
const SEED = 0x5eed_0e71

type Size = (typeof SIZES)[number]
const label = (n: Size): string => `${n / 1000}k`

const sha256 = (bytes: Uint8Array | string): string => `sha256:${createHash("sha256").update(bytes).digest("hex")}`
const errorText = (e: unknown): string => (e instanceof Error ? (e.stack ?? e.message) : String(e))
const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6

/** Writes `bytes` to `file` and fsyncs it (untimed restores must not leave writeback for a timed run). */
const writeSynced = (file: string, bytes: Uint8Array | string): void => {
  const fd = fs.openSync(file, "w")
  try {
    const buf = typeof bytes === "string" ? Buffer.from(bytes, "utf8") : bytes
    let off = 0
    while (off < buf.length) off += fs.writeSync(fd, buf, off, buf.length - off)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

// ---------------------------------------------------------------------------------------------
// Workload: deterministic files, and the child's reads and patches

/** mulberry32 seeded per file, so any file's content can be rebuilt from its index alone. */
const prng = (seed: number) => {
  let s = seed | 0
  return (): number => {
    s = (s + 0x6d2b79f5) | 0
    let t = Math.imul(s ^ (s >>> 15), 1 | s)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const WORDS = ["alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "lambda", "theta", "zeta", "rho", "tau"]

/** `packages/pkg-NNN/src/mod-NN/file-NN.ts` of file `i` (20 files per module, 10 modules per package). */
const relPathOf = (i: number): string => {
  const f = i % FILES_PER_DIR
  const m = Math.floor(i / FILES_PER_DIR) % MODS_PER_PKG
  const p = Math.floor(i / (FILES_PER_DIR * MODS_PER_PKG))
  return `packages/pkg-${String(p).padStart(3, "0")}/src/mod-${String(m).padStart(2, "0")}/file-${String(f).padStart(2, "0")}.ts`
}

/** The lines of file `i`: 50-109 lines, each unique in the file (it names the file and line). */
const linesOf = (i: number): Array<string> => {
  const r = prng(SEED ^ Math.imul(i + 1, 0x9e3779b1))
  const count = 50 + Math.floor(r() * 60)
  const out: Array<string> = []
  for (let l = 0; l < count; l++) {
    const w1 = WORDS[Math.floor(r() * WORDS.length)]!
    const w2 = WORDS[Math.floor(r() * WORDS.length)]!
    out.push(`export const v${i}_${l} = ${Math.floor(r() * 1_000_000)} // ${w1} ${w2} of file ${i} line ${l}`)
  }
  return out
}

const textOf = (lines: ReadonlyArray<string>): string => `${lines.join("\n")}\n`

interface Edit {
  readonly path: string
  readonly original: string
  readonly expected: string
  readonly originalHash: string
  readonly expectedHash: string
  readonly patch: string
}

interface Workload {
  readonly size: Size
  /** The child's 200 reads, in order, with each file's content. */
  readonly reads: ReadonlyArray<{ readonly path: string; readonly text: string }>
  /** The 100 patched files (every other read), in order. */
  readonly edits: ReadonlyArray<Edit>
  /** The session's script: read, and patch every other file right after reading it; then finish. */
  readonly script: ReadonlyArray<unknown>
}

/** One one-line update of file `i` with 3 context lines each side. */
const editOf = (i: number): Edit => {
  const lines = linesOf(i)
  const l = 10 + ((i * 7) % 30)
  const old = lines[l]!
  const next = old.replace(/= (\d+) /, "= $1 + 1 ")
  if (next === old) throw new Error(`workload: line ${l} of file ${i} has no number to edit`)
  const p = relPathOf(i)
  const patch = oneLineUpdatePatch(p, lines, l, next)
  const original = textOf(lines)
  const edited = [...lines]
  edited[l] = next
  const expected = textOf(edited)
  return { path: p, original, expected, originalHash: sha256(original), expectedHash: sha256(expected), patch }
}

/** The child's work in an `n`-file workspace: 200 files spread evenly over the whole tree. */
const makeWorkload = (size: Size): Workload => {
  const reads: Array<{ path: string; text: string }> = []
  const edits: Array<Edit> = []
  const script: Array<unknown> = []
  for (let k = 0; k < READS; k++) {
    const i = Math.floor(((k + 0.5) * size) / READS)
    const p = relPathOf(i)
    reads.push({ path: p, text: textOf(linesOf(i)) })
    script.push({ read_file: { path: p } })
    if (k % 2 === 0) {
      const e = editOf(i)
      edits.push(e)
      script.push({ apply_patch: { patch: e.patch } })
    }
  }
  script.push({ finish: {} })
  if (edits.length !== PATCHES) throw new Error(`workload: ${edits.length} edits, expected ${PATCHES}`)
  return { size, reads, edits, script }
}

/** Writes an `n`-file workspace at `dir` (with its `.forkjoin/` already there); returns its bytes. */
const buildWorkspace = (dir: string, size: Size): number => {
  fs.mkdirSync(path.join(dir, ".forkjoin"), { recursive: true })
  let bytes = 0
  let lastDir = ""
  for (let i = 0; i < size; i++) {
    const abs = path.join(dir, relPathOf(i))
    const d = path.dirname(abs)
    if (d !== lastDir) {
      fs.mkdirSync(d, { recursive: true })
      lastDir = d
    }
    const text = textOf(linesOf(i))
    fs.writeFileSync(abs, text)
    bytes += Buffer.byteLength(text)
  }
  return bytes
}

/**
 * Every entry of the tree except `.forkjoin/`: kind, inode, size, mode, content hash, and
 * nanosecond mtime and ctime (a write that was later undone still shows in ctime).
 */
const fingerprint = (ws: string): Map<string, string> => {
  const out = new Map<string, string>()
  const walk = (dir: string, rel: string): void => {
    const d = fs.lstatSync(dir, { bigint: true })
    out.set(`${rel}/`, `dir ino=${d.ino} mode=${d.mode} mtime=${d.mtimeNs} ctime=${d.ctimeNs}`)
    for (const name of fs.readdirSync(dir).sort()) {
      const r = rel === "" ? name : `${rel}/${name}`
      if (r === ".forkjoin") continue
      const abs = path.join(dir, name)
      const s = fs.lstatSync(abs, { bigint: true })
      if (s.isDirectory()) {
        walk(abs, r)
        continue
      }
      const content = s.isSymbolicLink() ? `link=${fs.readlinkSync(abs)}` : s.isFile() ? sha256(fs.readFileSync(abs)) : "special"
      out.set(r, `ino=${s.ino} size=${s.size} mode=${s.mode} mtime=${s.mtimeNs} ctime=${s.ctimeNs} ${content}`)
    }
  }
  walk(ws, "")
  return out
}

/** The first few differences between two fingerprints (empty when equal). */
const fingerprintDiff = (before: Map<string, string>, after: Map<string, string>): Array<string> => {
  const diffs: Array<string> = []
  for (const [k, v] of before) {
    const w = after.get(k)
    if (w === undefined) diffs.push(`${k}: removed`)
    else if (w !== v) diffs.push(`${k}: ${v} -> ${w}`)
  }
  for (const k of after.keys()) if (!before.has(k)) diffs.push(`${k}: added`)
  return diffs
}

/** One hash over a whole fingerprint (reported, so two runs can be compared by eye). */
const treeHash = (fp: Map<string, string>): string =>
  sha256([...fp].filter(([k]) => !k.endsWith("/")).map(([k, v]) => `${k} ${v.slice(v.lastIndexOf(" ") + 1)}`).join("\n"))

// ---------------------------------------------------------------------------------------------
// The measured operations

interface Setup {
  readonly size: Size
  readonly workload: Workload
  readonly shared: string
  readonly direct: string
  readonly artifacts: string
  readonly runtime: ManagedRuntime.ManagedRuntime<Engine, unknown>
  readonly engine: Workspace
  readonly treeBefore: Map<string, string>
  readonly workspaceBytes: number
  /** Postimage hash per path, as the direct engine recorded it (first run; every run must agree). */
  readonly directHashes: Map<string, string>
  /** Postimage hash per path in the last changeset exported. */
  readonly lastPostimages: Map<string, string>
  childMs: Array<number>
  exportMs: Array<number>
  stagingMs: Array<number>
  directMs: Array<number>
  overlayRuns: number
  directRuns: number
}

const threadId = "bench-overlay-child" as ThreadId
const taskId = "bench-child" as TaskId
const writeScope = WriteScope.makeUnsafe(["packages"])

/** Runs the child once; returns its time, its finish step's time, or what was wrong. */
const runChild = async (s: Setup): Promise<{ ms: number; exportMs: number } | { error: string }> => {
  const blobs = path.join(s.artifacts, `run-${s.overlayRuns++}`, "blobs")
  let finishHandedOut = 0
  let sessionEnd = 0
  const script = s.workload.script
  const driver = scripted((steps) => {
    const action = script[steps.length]
    if (steps.length === script.length - 1) finishHandedOut = nowMs()
    return action
  })
  const program = Session.run({ mode: "changeset_export", threadId, taskId, writeScope }).pipe(
    Effect.provideService(Driver, driver),
    Effect.provide(BlobStore.layerDirectory(blobs)),
    Effect.tap(() => Effect.sync(() => {
      sessionEnd = nowMs()
    }))
  )
  gc()
  const t0 = nowMs()
  const result = await s.runtime.runPromise(program)
  const ms = nowMs() - t0
  const wrong = checkSession(s, result, blobs)
  if (wrong !== undefined) return { error: wrong }
  return { ms, exportMs: sessionEnd - finishHandedOut }
}

/** Checks a child's session result and its blob directory. */
const checkSession = (s: Setup, result: Session.SessionResult, blobs: string): string | undefined => {
  const w = s.workload
  if (result.status !== "finished") return `session ended ${result.status}${result.error === undefined ? "" : `: ${result.error.code}: ${result.error.message}`}`
  if (result.steps.length !== w.script.length) return `session took ${result.steps.length} steps, expected ${w.script.length}`
  let read = 0
  for (const [k, step] of result.steps.entries()) {
    const o = step.observation
    if (!o.ok) return `step ${k} (${JSON.stringify(step.action).slice(0, 120)}) refused: ${o.code}: ${o.message}`
    if (typeof step.action === "object" && step.action !== null && "read_file" in step.action) {
      const expected = w.reads[read++]!
      const data = o.data as { path?: string; text?: string } | undefined
      if (data?.path !== expected.path || data.text !== expected.text) return `step ${k}: read_file ${expected.path} returned other content`
    }
  }
  if (read !== READS) return `${read} reads, expected ${READS}`
  const c: Changeset | undefined = result.changeset
  if (c === undefined) return "finished without a changeset"
  return checkChangeset(s, c, blobs)
}

const checkChangeset = (s: Setup, c: Changeset, blobs: string): string | undefined => {
  const edits = new Map(s.workload.edits.map((e) => [e.path, e]))
  if (c.entries.length !== PATCHES) return `changeset has ${c.entries.length} entries, expected ${PATCHES}`
  if (!c.exportable) return "changeset is not exportable"
  const seen = new Set<string>()
  s.lastPostimages.clear()
  for (const e of c.entries) {
    const edit = edits.get(e.path)
    if (edit === undefined) return `changeset names ${e.path}, which the child never patched`
    if (seen.has(e.path)) return `changeset names ${e.path} twice`
    seen.add(e.path)
    if (e.kind !== "update" || !e.exportable) return `${e.path}: entry ${e.kind}, exportable ${String(e.exportable)}; expected an exportable update`
    if (e.preimage?.hash !== edit.originalHash) return `${e.path}: preimage ${String(e.preimage?.hash)}, expected ${edit.originalHash}`
    if (e.postimage?.hash !== edit.expectedHash) return `${e.path}: postimage ${String(e.postimage?.hash)}, expected ${edit.expectedHash}`
    const direct = s.directHashes.get(e.path)
    if (direct !== undefined && e.postimage.hash !== direct) return `${e.path}: postimage ${e.postimage.hash}, the direct engine produced ${direct}`
    s.lastPostimages.set(e.path, e.postimage.hash)
  }
  const wantBlobs = [...new Set(s.workload.edits.map((e) => e.expectedHash))].sort()
  if (JSON.stringify([...c.blobs.hashes]) !== JSON.stringify(wantBlobs)) return `changeset lists ${c.blobs.hashes.length} blobs, not the ${wantBlobs.length} postimages`
  const onDisk = fs.readdirSync(path.join(blobs, "sha256"))
  if (onDisk.length !== wantBlobs.length) return `blob directory holds ${onDisk.length} files, expected ${wantBlobs.length}: ${onDisk.slice(0, 5).join(", ")}`
  for (const h of wantBlobs) {
    const got = sha256(fs.readFileSync(blobPath(blobs, h as Parameters<typeof blobPath>[1])))
    if (got !== h) return `blob ${h} holds bytes hashing to ${got}`
  }
  return undefined
}

/** The 100 patches through the durable engine, one transaction each, files restored untimed first. */
const runDirect = async (s: Setup): Promise<{ ms: number } | { error: string }> => {
  const run = s.directRuns++
  for (const e of s.workload.edits) writeSynced(path.join(s.direct, e.path), e.original)
  const records: Array<Awaited<ReturnType<Workspace["applyPatch"]>>> = []
  gc()
  const t0 = nowMs()
  for (const [k, e] of s.workload.edits.entries()) {
    records.push(await s.engine.applyPatch(e.patch, { threadId: "bench-overlay-direct", turnId: `run-${run}-${k}` }))
  }
  const ms = nowMs() - t0
  for (const [k, e] of s.workload.edits.entries()) {
    const r = records[k]!
    const c = r.changes[0]
    if (r.changes.length !== 1 || c?.path !== e.path || c.kind !== "update") return { error: `${e.path}: unexpected record ${JSON.stringify(r.changes).slice(0, 300)}` }
    if (c.after?.hash !== e.expectedHash) return { error: `${e.path}: engine recorded postimage ${String(c.after?.hash)}, expected ${e.expectedHash}` }
    const onDisk = sha256(fs.readFileSync(path.join(s.direct, e.path)))
    if (onDisk !== e.expectedHash) return { error: `${e.path}: engine left bytes hashing to ${onDisk}, expected ${e.expectedHash}` }
    const known = s.directHashes.get(e.path)
    if (known !== undefined && known !== c.after.hash) return { error: `${e.path}: engine produced ${c.after.hash}, an earlier run ${known}` }
    s.directHashes.set(e.path, c.after.hash)
  }
  return { ms }
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
  if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(warmup) || warmup < 0) {
    process.stderr.write("usage: npm run bench -- overlay [--json] [--runs N>=1] [--warmup N>=0] [--only 2k|20k] [--dir DIR]\n")
    process.exit(2)
  }
  const only = flag("--only")
  const sizes = SIZES.filter((n) => only === undefined || only.split(",").includes(label(n)))
  if (sizes.length === 0) {
    process.stderr.write(`bench: --only takes ${SIZES.map(label).join(", ")}\n`)
    process.exit(2)
  }
  const baseDir = flag("--dir") ?? os.tmpdir()
  const tmp = fs.mkdtempSync(path.join(baseDir, "forkjoin-bench-overlay-"))
  const figures: Array<Figure> = []
  let failed = false
  const report = (f: Figure): void => {
    const figure: Figure = { ...f, load1: round(os.loadavg()[0] ?? 0, 2) }
    figures.push(figure)
    if (figure.error !== undefined) failed = true
    if (json) emitJson(figure)
  }

  const started = Date.now()
  const ready: Array<Setup> = []
  const cleanups: Array<() => Promise<void>> = []
  try {
    // Build both copies of each workspace, then one `sync` so no timed run pays their writeback.
    const built: Array<{ size: Size; shared: string; direct: string; workspaceBytes: number }> = []
    for (const size of sizes) {
      const t0 = Date.now()
      const shared = path.join(tmp, `shared-${label(size)}`)
      const direct = path.join(tmp, `direct-${label(size)}`)
      const workspaceBytes = buildWorkspace(shared, size)
      buildWorkspace(direct, size)
      built.push({ size, shared, direct, workspaceBytes })
      note(`built ${label(size)}: 2 x ${size} files, ${round(workspaceBytes / (1024 * 1024), 1)} MB each, in ${round((Date.now() - t0) / 1000, 1)} s`)
    }
    spawnSync("sync")
    for (const b of built) {
      // Fingerprinted before any engine opens on it.
      const treeBefore = fingerprint(b.shared)
      // The children's engine: durable history in the shared workspace's `.forkjoin/`, as a run has it.
      const runtime = ManagedRuntime.make(
        Engine.layer({ root: b.shared }).pipe(Layer.provide(layerSqlite(path.join(b.shared, ".forkjoin", "history.db"))))
      )
      cleanups.push(() => runtime.dispose())
      await runtime.runPromise(Effect.void)
      const engine = await openWorkspace(b.direct)
      cleanups.push(() => engine.close())
      ready.push({
        ...b,
        workload: makeWorkload(b.size),
        artifacts: path.join(tmp, `artifacts-${label(b.size)}`),
        runtime,
        engine,
        treeBefore,
        directHashes: new Map(),
        lastPostimages: new Map(),
        childMs: [],
        exportMs: [],
        stagingMs: [],
        directMs: [],
        overlayRuns: 0,
        directRuns: 0
      })
    }
    spawnSync("sync")

    {
      type Task = { readonly s: Setup; readonly kind: "overlay" | "direct" }
      const tasks: Array<Task> = ready.flatMap((s) => [{ s, kind: "overlay" as const }, { s, kind: "direct" as const }])
      note(`measuring: ${warmup} warm-up + ${runs} runs of ${tasks.length} tasks (child: ${READS} reads + ${PATCHES} patches + export; direct: ${PATCHES} durable applies)`)
      const broken = new Set<string>()
      const errors = new Map<string, string>()
      for (let i = 0; i < warmup + runs; i++) {
        // Alternate the order so neither side always runs right after the other's fsyncs.
        const order = i % 2 === 0 ? tasks : [...tasks].reverse()
        for (const { s, kind } of order) {
          const key = `${kind}-${label(s.size)}`
          if (broken.has(key)) continue
          try {
            const r: { ms: number; exportMs?: number } | { error: string } = kind === "overlay" ? await runChild(s) : await runDirect(s)
            if ("error" in r) {
              broken.add(key)
              errors.set(key, `run ${i}${i < warmup ? " (warm-up)" : ""}: ${r.error}`)
              continue
            }
            if (i < warmup) continue
            if (r.exportMs !== undefined) {
              s.childMs.push(r.ms)
              s.exportMs.push(r.exportMs)
              s.stagingMs.push(r.ms - r.exportMs)
            } else {
              s.directMs.push(r.ms)
            }
          } catch (e) {
            broken.add(key)
            errors.set(key, `run ${i}: threw: ${errorText(e)}`)
          }
        }
      }

      // The shared trees must be exactly as they were before any child ran.
      const treeAfter = new Map<Size, Map<string, string>>()
      for (const s of ready) {
        const after = fingerprint(s.shared)
        treeAfter.set(s.size, after)
        const diffs = fingerprintDiff(s.treeBefore, after)
        if (diffs.length > 0) errors.set(`tree-${label(s.size)}`, `the shared ${label(s.size)} workspace changed: ${diffs.slice(0, 5).join("; ")}${diffs.length > 5 ? ` (+${diffs.length - 5} more)` : ""}`)
        // The last changeset against the direct engine, whatever the run order was.
        const l = label(s.size)
        if (!broken.has(`overlay-${l}`) && !broken.has(`direct-${l}`)) {
          const same = s.lastPostimages.size === PATCHES && s.directHashes.size === PATCHES &&
            [...s.lastPostimages].every(([p, h]) => s.directHashes.get(p) === h)
          if (!same) errors.set(`overlay-${l}`, `the changeset's ${s.lastPostimages.size} postimages differ from the direct engine's ${s.directHashes.size}`)
        }
      }

      const bySize = new Map(ready.map((s) => [s.size, s]))
      const small = bySize.get(2_000)
      for (const s of ready) {
        const l = label(s.size)
        const overlayError = errors.get(`overlay-${l}`) ?? errors.get(`tree-${l}`)
        const directError = errors.get(`direct-${l}`)
        const common = {
          files: s.size,
          workspaceMb: round(s.workspaceBytes / (1024 * 1024), 1),
          reads: READS,
          patches: PATCHES
        }
        const tree = { treeUnchanged: errors.get(`tree-${l}`) === undefined, treeHash: treeHash(treeAfter.get(s.size)!) }
        const childMedian = s.childMs.length > 0 ? median(s.childMs) : null
        const exportMedian = s.exportMs.length > 0 ? median(s.exportMs) : null
        const directMedian = s.directMs.length > 0 ? median(s.directMs) : null
        // A broken 2k child is no peer (its error is on its own figures).
        const smallOk = small !== undefined && small !== s && !errors.has("overlay-2k") && !errors.has("tree-2k")
        const smallChild = smallOk && small.childMs.length > 0 ? median(small.childMs) : null
        const smallExport = smallOk && small.exportMs.length > 0 ? median(small.exportMs) : null

        // overlay_child_ms: the 20k figure against the 2k one (target), the 2k one against the direct engine.
        {
          const metric = `overlay_child_ms_${l}`
          if (overlayError !== undefined || childMedian === null) report(errorFigure(BENCH, metric, overlayError ?? "no runs"))
          else {
            const scaled = s.size !== 2_000
            const peer = scaled ? smallChild : directMedian
            report({
              bench: BENCH,
              metric,
              ours: round(childMedian),
              peer: peer === null ? null : round(peer),
              ratio: peer === null ? null : round(childMedian / peer),
              peerName: scaled ? "overlay child, 2k workspace" : "direct engine, 2k workspace (100 durable transactions)",
              unit: "ms",
              n: s.childMs.length,
              ...(scaled ? { target: RATIO_TARGET, targetKind: "ratio_max" as const, ...(peer === null ? {} : { pass: childMedian / peer <= RATIO_TARGET }) } : {}),
              ...common,
              blobStore: "directory, fsync",
              // Median per run of the child's time before `finish`: 200 reads + 100 staged patches.
              stagingMs: round(median(s.stagingMs)),
              directEngineMs: directMedian === null ? null : round(directMedian),
              oursSpread: spread(s.childMs),
              ...tree,
              ...(scaled && peer === null ? { peerError: "no 2k overlay runs (--only, or the 2k child failed)" } : {}),
              ...(!scaled && peer === null ? { peerError: directError ?? "no direct engine runs" } : {})
            })
          }
        }
        {
          const metric = `export_ms_${l}`
          if (overlayError !== undefined || exportMedian === null) report(errorFigure(BENCH, metric, overlayError ?? "no runs"))
          else {
            const scaled = s.size !== 2_000
            report({
              bench: BENCH,
              metric,
              ours: round(exportMedian),
              peer: scaled && smallExport !== null ? round(smallExport) : null,
              ratio: scaled && smallExport !== null ? round(exportMedian / smallExport) : null,
              peerName: scaled ? "export, 2k workspace" : null,
              unit: "ms",
              n: s.exportMs.length,
              ...(scaled ? { target: RATIO_TARGET, targetKind: "ratio_max" as const, ...(smallExport === null ? {} : { pass: exportMedian / smallExport <= RATIO_TARGET }) } : {}),
              ...common,
              measures: "finish step of the child's session: Overlay.export, 100 fsynced blob puts, changeset decode",
              blobs: PATCHES,
              oursSpread: spread(s.exportMs),
              ...(scaled && smallExport === null ? { peerError: "no 2k overlay runs (--only, or the 2k child failed)" } : {})
            })
          }
        }
        {
          const metric = `direct_engine_ms_${l}`
          if (directError !== undefined || directMedian === null) report(errorFigure(BENCH, metric, directError ?? "no runs"))
          else {
            report({
              bench: BENCH,
              metric,
              ours: round(directMedian),
              peer: childMedian === null ? null : round(childMedian),
              ratio: childMedian === null ? null : round(directMedian / childMedian),
              peerName: `overlay child, ${l} workspace (${READS} reads + ${PATCHES} patches + export)`,
              unit: "ms",
              n: s.directMs.length,
              ...common,
              durable: true,
              transactions: PATCHES,
              perApplyMs: round(directMedian / PATCHES),
              oursSpread: spread(s.directMs),
              ...(childMedian === null ? { peerError: overlayError ?? "no overlay runs" } : {})
            })
          }
        }
      }
    }
  } catch (e) {
    report(errorFigure(BENCH, "setup", `threw: ${errorText(e)}`))
  } finally {
    for (const c of cleanups.reverse()) await c().catch((e: unknown) => note(`cleanup failed: ${errorText(e)}`))
    fs.rmSync(tmp, { recursive: true, force: true })
  }
  note(`done in ${round((Date.now() - started) / 1000, 1)} s`)
  if (!json) printTable(figures)
  if (failed) {
    note("FAILED: at least one figure has an error (see above)")
    process.exitCode = 1
  }
}

await main()
