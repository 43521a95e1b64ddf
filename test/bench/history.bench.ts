/**
 * `history` bench: the history views and provider-aggregate ingestion at scale.
 *
 * Seeds N records (default 1,000,000; `--records N` to change) over 50 threads (thread-0 the
 * parent of the other 49) and 10,000 paths through the store API (`appendRecords`, batches
 * of 10,000 per transaction), 5% of them on one hot path and 0.5% moves, plus one 500-record
 * turn. Then reports:
 *
 * 1. `file_page1_ms` / `file_page10_ms`          `file` of the hot path from thread-0 (scope:
 *                                                 all 50 threads), pages 1 and 10 of 100 items,
 *                                                 median. Target <= 5 ms.
 * 2. `timeline_page1_ms` / `timeline_page10_ms`  `timeline` of thread-7, pages 1 and 10.
 *                                                 Target <= 5 ms.
 * 3. `turn_aggregate_500_ms`                     `turn` aggregate of the 500-record turn.
 * 4. `ingest_records_per_s`                      Codex turn diffs through `ingestMany`, batches
 *                                                 of 1,000. Target >= 10,000 records/s.
 * 5. `db_bytes_per_record`                       database bytes excluding the blobs table,
 *                                                 per record (SQLite `dbstat`).
 * plus `seed_records_per_s` (how fast the seeding went).
 *
 * Usage: `npm run bench -- history [--json] [--records N] [--db FILE]`. The database lives in
 * a temp directory, removed at the end, unless `--db FILE` keeps it (and reuses it when it
 * exists: no seeding; ingestion then adds to it).
 */
import { HistoryStore } from "../../packages/history/src/HistoryStore.ts"
import { ProviderAggregates } from "../../packages/history/src/ProviderAggregates.ts"
import { HistoryViews } from "../../packages/history/src/Views.ts"
import type { EnvironmentId, RecordDraft, ThreadId } from "../../packages/schema/src/index.ts"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { type Figure, emitJson, median, note, printTable, round, wantsJson } from "./harness.ts"

const BENCH = "history"
const argv = process.argv.slice(2)
const json = wantsJson(argv)
const recordsFlag = argv.indexOf("--records")
const N = recordsFlag >= 0 ? Number(argv[recordsFlag + 1]) : 1_000_000
const THREADS = 50
const PATHS = 10_000
const BATCH = 10_000
const HOT = "src/hot/module.ts"
const BIG_TURN = "turn-big"
const ENV = "env-bench" as EnvironmentId

const figures: Array<Figure> = []
const emit = (f: Figure) => {
  figures.push(f)
  if (json) emitJson(f)
}

// Deterministic PRNG (mulberry32).
let seed = 0x5eed_4157
const rand = () => {
  seed |= 0
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const hashOf = (s: string) => `sha256:${createHash("sha256").update(s).digest("hex")}`
const HASHES = Array.from({ length: 64 }, (_, i) => hashOf(`content-${i}`))
const snap = (i: number) => ({
  hash: HASHES[i % 64]!,
  bytes: 100 + (i % 900),
  encoding: "utf8" as const,
  lineEnding: "lf" as const,
  finalNewline: true,
  mode: 0o644
})

const dbFlag = argv.indexOf("--db")
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-bench-history-"))
// `--db FILE` keeps the seeded database for re-runs (seeding is skipped when FILE exists).
const file = dbFlag >= 0 ? path.resolve(argv[dbFlag + 1]!) : path.join(dir, "history.db")
const reuse = fs.existsSync(file)
const layer = HistoryViews.layerWithStore(file, { environmentId: ENV }).pipe(
  Layer.provideMerge(Layer.empty),
  (l) => Layer.merge(l, ProviderAggregates.layerNoDeps({ environmentId: ENV }).pipe(Layer.provide(l))),
  Layer.orDie
)
const runtime = ManagedRuntime.make(layer)
const run = <A, E>(e: Effect.Effect<A, E, HistoryViews | HistoryStore | ProviderAggregates>): A => runtime.runSync(e as any) as A

const draftOf = (i: number, thread: number, turn: string, p: string, moveFrom?: string): RecordDraft => ({
  recordId: `rec-${i}`,
  threadId: `thread-${thread}`,
  turnId: turn,
  invocationId: `inv-${i}`,
  environmentId: ENV,
  transactionId: `patch:${"00000000-0000-4000-8000-" + i.toString(16).padStart(12, "0")}`,
  authority: "native_patch_engine",
  provenance: "native_engine",
  exactness: "exact",
  outcome: "applied",
  changes: [
    moveFrom === undefined
      ? { kind: "update", path: p, before: snap(i), after: snap(i + 1) }
      : { kind: "move", path: p, moveFrom, before: snap(i), after: snap(i + 1) }
  ],
  directoryEffects: [],
  warnings: [],
  links: {}
}) as unknown as RecordDraft

const timeRuns = (label: string, runs: number, f: () => unknown): Array<number> => {
  f() // warm-up
  const xs: Array<number> = []
  for (let k = 0; k < runs; k++) {
    const t0 = process.hrtime.bigint()
    f()
    xs.push(Number(process.hrtime.bigint() - t0) / 1e6)
  }
  note(`${label}: median ${round(median(xs))} ms over ${runs}`)
  return xs
}

try {
  // ---------------------------------------------------------------- seed
  if (!reuse) note(`seeding ${N} records into ${file}`)
  else note(`reusing ${file}`)
  if (!reuse) run(Effect.gen(function*() {
    const store = yield* HistoryStore
    for (let t = 1; t < THREADS; t++) yield* store.registerThread(`thread-${t}` as ThreadId, "thread-0" as ThreadId)
  }))
  const t0 = process.hrtime.bigint()
  const bigTurnAt = Math.floor(N / 2)
  let i = 0
  const base = Date.parse("2026-11-01T00:00:00.000Z")
  while (!reuse && i < N) {
    const drafts: Array<RecordDraft> = []
    for (let k = 0; k < BATCH && i < N; k++, i++) {
      const thread = Math.floor(rand() * THREADS)
      if (i >= bigTurnAt && i < bigTurnAt + 500) {
        drafts.push(draftOf(i, 3, BIG_TURN, `src/big/f${i % 700}.ts`))
        continue
      }
      const turn = `turn-${thread}-${Math.floor(i / 5000)}`
      const r = rand()
      if (r < 0.05) drafts.push(draftOf(i, thread, turn, HOT))
      else if (r < 0.055) {
        drafts.push(draftOf(i, thread, turn, `src/p${Math.floor(rand() * PATHS)}.ts`, `src/p${Math.floor(rand() * PATHS)}x.ts`))
      } else drafts.push(draftOf(i, thread, turn, `src/p${Math.floor(rand() * PATHS)}.ts`))
    }
    run(Effect.flatMap(HistoryStore, (s) => s.appendRecords(drafts, base + i)))
    if (i % 100_000 === 0) note(`  ${i} records, ${round(Number(process.hrtime.bigint() - t0) / 1e9, 1)} s`)
  }
  const seedS = Number(process.hrtime.bigint() - t0) / 1e9
  if (!reuse) emit({ bench: BENCH, metric: "seed_records_per_s", ours: Math.round(N / seedS), peer: null, ratio: null, peerName: null, unit: "records/s", n: N })

  // ---------------------------------------------------------------- views
  const pageAt = (query: (cursor: string | undefined) => { nextCursor: string | null; items: ReadonlyArray<unknown> }, page: number) => {
    let cursor: string | undefined
    for (let p = 1; p < page; p++) {
      const r = query(cursor)
      if (r.nextCursor === null) throw new Error(`only ${p} pages`)
      cursor = r.nextCursor
    }
    return cursor
  }
  const fileQuery = (cursor: string | undefined) =>
    run(Effect.flatMap(HistoryViews, (v) => v.file({ caller: "thread-0", path: HOT, limit: 100, cursor, detectGaps: false })))
  const timelineQuery = (cursor: string | undefined) =>
    run(Effect.flatMap(HistoryViews, (v) => v.timeline({ caller: "thread-7", limit: 100, cursor })))
  for (const [name, query] of [["file", fileQuery], ["timeline", timelineQuery]] as const) {
    for (const page of [1, 10]) {
      const cursor = pageAt(query, page)
      const check = query(cursor)
      if (check.items.length !== 100) throw new Error(`${name} page ${page} has ${check.items.length} items`)
      const xs = timeRuns(`${name} page ${page}`, 50, () => query(cursor))
      const m = round(median(xs))
      emit({
        bench: BENCH,
        metric: `${name}_page${page}_ms`,
        ours: m,
        peer: null,
        ratio: null,
        peerName: null,
        unit: "ms",
        n: xs.length,
        target: 5,
        targetKind: "ours_max",
        pass: m <= 5
      })
    }
  }
  const turnXs = timeRuns("turn aggregate", 20, () => {
    const r = run(Effect.flatMap(HistoryViews, (v) => v.turn({ caller: "thread-0", turn: BIG_TURN, limit: 1000 })))
    if (r.coverage.records !== 500) throw new Error(`turn has ${r.coverage.records} records`)
  })
  emit({ bench: BENCH, metric: "turn_aggregate_500_ms", ours: round(median(turnXs)), peer: null, ratio: null, peerName: null, unit: "ms", n: turnXs.length })

  // ---------------------------------------------------------------- bytes per record (before ingestion)
  const db = new Database(file, { readonly: true })
  let bytesPerRecord: number | null = null
  try {
    const total = (db.prepare("SELECT SUM(pgsize) AS b FROM dbstat").get() as { b: number }).b
    const blobs = (db.prepare("SELECT COALESCE(SUM(pgsize), 0) AS b FROM dbstat WHERE name IN ('blobs', 'sqlite_autoindex_blobs_1')").get() as { b: number }).b
    const count = (db.prepare("SELECT count(*) AS n FROM records").get() as { n: number }).n
    bytesPerRecord = round((total - blobs) / count, 1)
  } catch (e) {
    note(`dbstat unavailable: ${e instanceof Error ? e.message : String(e)}`)
  } finally {
    db.close()
  }
  emit({ bench: BENCH, metric: "db_bytes_per_record", ours: bytesPerRecord, peer: null, ratio: null, peerName: null, unit: "bytes", n: N })

  // ---------------------------------------------------------------- ingestion
  const INGEST = 20_000
  const events = Array.from({ length: INGEST }, (_, k) => ({
    format: "codex-turn-diff" as const,
    text: `diff --git a/src/i${k % PATHS}.ts b/src/i${k % PATHS}.ts\n--- a/src/i${k % PATHS}.ts\n+++ b/src/i${k % PATHS}.ts\n` +
      `@@ -1,3 +1,3 @@\n a\n-b${k}\n+c${k}\n d\n`,
    threadId: `thread-${k % THREADS}`,
    turnId: `ingest-${Math.floor(k / 100)}`
  }))
  const ti = process.hrtime.bigint()
  for (let k = 0; k < INGEST; k += 1000) {
    run(Effect.flatMap(ProviderAggregates, (pa) => pa.ingestMany(events.slice(k, k + 1000))))
  }
  const perS = Math.round(INGEST / (Number(process.hrtime.bigint() - ti) / 1e9))
  emit({
    bench: BENCH,
    metric: "ingest_records_per_s",
    ours: perS,
    peer: null,
    ratio: null,
    peerName: null,
    unit: "records/s",
    n: INGEST,
    // The harness's targets are maxima; this one is a minimum.
    targetMin: 10_000,
    pass: perS >= 10_000
  })
} finally {
  await runtime.dispose()
  fs.rmSync(dir, { recursive: true, force: true })
}
if (!json) printTable(figures)
