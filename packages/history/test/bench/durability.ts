/**
 * Durable-apply cost of the history store (not a test): per iteration, `openIntent` with two
 * small blobs and `commitIntent` on a SQLite file, against the floor of one raw `INSERT` with
 * synchronous=FULL into the same file. Also times the same store calls on `:memory:` (no
 * fsync) to show the store's own CPU overhead. Prints medians and p90s in microseconds.
 *
 *   npx esbuild packages/history/test/bench/durability.ts --bundle --platform=node --format=esm \
 *     --external:better-sqlite3 --outfile=node_modules/.cache/forkjoin-history/durability.mjs
 *   node node_modules/.cache/forkjoin-history/durability.mjs [iterations=1000] [dir]
 */
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { layerMemory, layerSqlite } from "@forkjoin/history/HistoryStoreSqlite"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { freshEnvironment, planned } from "../fixtures.ts"

const iterations = Number(process.argv[2] ?? 1000)
const base = fs.mkdtempSync(path.join(process.argv[3] ?? os.tmpdir(), "forkjoin-history-bench-"))
const file = path.join(base, "history.db")

const quantile = (values: ReadonlyArray<number>, q: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}
const us = (ms: number) => Math.round(ms * 1000)
const row = (name: string, samples: ReadonlyArray<number>) =>
  `${name.padEnd(34)} median ${String(us(quantile(samples, 0.5))).padStart(6)} us   p90 ${
    String(us(quantile(samples, 0.9))).padStart(6)
  } us`

const measure = (withRaw: boolean) =>
  Effect.gen(function*() {
    const store = yield* HistoryStore
    const env = freshEnvironment("bench")
    const open: Array<number> = []
    const commit: Array<number> = []
    const rawInsert: Array<number> = []
    let insert: (() => void) | undefined
    let close = () => {}
    if (withRaw) {
      // A second connection to the same file, with the same durability as the store.
      const db = new Database(file)
      db.pragma("journal_mode = WAL")
      db.pragma("synchronous = FULL")
      db.exec("CREATE TABLE IF NOT EXISTS bench_raw (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
      const stmt = db.prepare("INSERT INTO bench_raw (v) VALUES (?)")
      insert = () => stmt.run("a small row")
      close = () => db.close()
    }
    for (let i = 0; i < iterations; i++) {
      // Two small blobs: a file's before and after content, as the engine passes them.
      const p = planned({ environmentId: env, files: [{ path: `src/f${i}.ts`, before: `old ${i}\n`, after: `new ${i}\n` }] })
      const t0 = performance.now()
      yield* store.openIntent(p.intent, p.blobs)
      const t1 = performance.now()
      yield* store.commitIntent(p.intent.intentId, p.draft, Date.now())
      const t2 = performance.now()
      open.push(t1 - t0)
      commit.push(t2 - t1)
      if (insert !== undefined) {
        const t3 = performance.now()
        insert()
        rawInsert.push(performance.now() - t3)
      }
    }
    close()
    return { open, commit, rawInsert }
  })

const main = Effect.gen(function*() {
  const disk = yield* measure(true).pipe(Effect.provide(layerSqlite(file)))
  const memory = yield* measure(false).pipe(Effect.provide(layerMemory))
  const lines = [
    `history store durability, ${iterations} sequential iterations, node ${process.version}, ${file}`,
    row("openIntent (2 blobs), file", disk.open),
    row("commitIntent, file", disk.commit),
    row("raw INSERT synchronous=FULL, file", disk.rawInsert),
    row("openIntent (2 blobs), :memory:", memory.open),
    row("commitIntent, :memory:", memory.commit),
    `ratio (open + commit) / raw insert, medians: ${
      ((quantile(disk.open, 0.5) + quantile(disk.commit, 0.5)) / quantile(disk.rawInsert, 0.5)).toFixed(2)
    }`
  ]
  process.stdout.write(`${lines.join("\n")}\n`)
})

Effect.runPromise(main).finally(() => fs.rmSync(base, { recursive: true, force: true }))
