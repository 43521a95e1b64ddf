/**
 * `child-verify` bench: what a child's own check (`childVerify`) costs before its command
 * runs, on a 2,000-file workspace (3-7 KB files, `packages/pkg-NNN/src/mod-NN/file-NN.ts`).
 *
 * 1. `view_make_ms_2k`  `CheckView.make`: walk the workspace, copy every file into a fresh temp
 *      folder (reflink where the filesystem allows, else a real copy), check the 8 changed
 *      paths against their preimage hashes and write the 8 postimages.
 * 2. `view_remove_ms_2k`  `CheckView.remove` of that folder.
 * 3. `check_true_ms_2k`  `ChildVerify.run` with `true` as the command: make, spawn, remove.
 *
 * Correctness (a wrong answer makes the bench exit 1): every view holds the 2,000 files, the 8
 * changed ones with their new bytes, and is gone after removal; the workspace is unchanged.
 * The filesystem of the temp folder is reported (`fs`), since reflinks depend on it.
 *
 * Usage: `npm run bench -- child-verify [--json] [--runs N]`, by default 11 runs after 2 warm-ups.
 */
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import os from "node:os"
import path from "node:path"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { BlobStore, makeMemory } from "../../packages/runtime/src/BlobStore.ts"
import * as CheckView from "../../packages/runtime/src/CheckView.ts"
import * as ChildVerify from "../../packages/runtime/src/ChildVerify.ts"
import { Changeset } from "../../packages/schema/src/Changeset.ts"
import { type Figure, emitJson, errorFigure, median, note, printTable, round, spread, wantsJson } from "./harness.ts"
import { mulberry32 } from "./fixture.ts"

const BENCH = "child-verify"
const FILES = 2_000
const CHANGED = 8
const sha256 = (bytes: Uint8Array | string): string => `sha256:${createHash("sha256").update(bytes).digest("hex")}`
const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6

const argv = process.argv.slice(2)
const json = wantsJson(argv)
const runsAt = argv.indexOf("--runs")
const RUNS = runsAt === -1 ? 11 : Number(argv[runsAt + 1])
const WARMUP = 2

const main = async () => {
  const figures: Array<Figure> = []
  const report = (f: Figure) => (json ? emitJson(f) : figures.push(f))
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), "fj-bench-childverify-"))
  try {
    const random = mulberry32(0x5eed_c4ec)
    const rels: Array<string> = []
    for (let i = 0; i < FILES; i++) {
      const rel = `packages/pkg-${String(Math.floor(i / 200)).padStart(3, "0")}/src/mod-${String(Math.floor(i / 20) % 10).padStart(2, "0")}/file-${String(i % 20).padStart(2, "0")}.ts`
      const size = 3000 + Math.floor(random() * 4000)
      fs.mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true })
      fs.writeFileSync(path.join(ws, rel), `// ${rel}\n${"x".repeat(size)}\n`)
      rels.push(rel)
    }
    fs.mkdirSync(path.join(ws, ".forkjoin"))
    const blobs = makeMemory()
    const changed = rels.filter((_, i) => i % (FILES / CHANGED) === 0)
    const entries = []
    for (const rel of changed) {
      const before = fs.readFileSync(path.join(ws, rel))
      const after = Buffer.concat([before, Buffer.from("// changed\n")])
      await Effect.runPromise(blobs.put(after))
      const image = { path: rel, bytes: 0, encoding: "utf8", lineEnding: "lf", finalNewline: true }
      entries.push({ path: rel, kind: "update", exportable: true, preimage: { ...image, hash: sha256(before), bytes: before.length }, postimage: { ...image, hash: sha256(after), bytes: after.length } })
    }
    const changeset = Schema.decodeUnknownSync(Changeset)({
      schemaVersion: 1, childId: "bench", taskId: "bench", threadId: "bench", writeScope: ["packages"], exportable: true,
      limits: { maxFileBytes: 1_000_000 }, blobs: { addressing: "sha256", hashes: entries.map((e) => e.postimage.hash) }, entries
    })
    const fsType = spawnSync("stat", ["-f", "-c", "%T", os.tmpdir()], { encoding: "utf8" }).stdout.trim() || "unknown"
    const makeMs: Array<number> = []
    const removeMs: Array<number> = []
    const checkMs: Array<number> = []
    for (let run = 0; run < WARMUP + RUNS; run++) {
      const t0 = nowMs()
      const dir = await Effect.runPromise(CheckView.make(ws, changeset, blobs))
      const t1 = nowMs()
      let count = 0
      const countFiles = (d: string) => {
        for (const e of fs.readdirSync(d, { withFileTypes: true })) e.isDirectory() ? countFiles(path.join(d, e.name)) : (count += 1)
      }
      countFiles(dir)
      if (count !== FILES) throw new Error(`the view holds ${count} files, not ${FILES}`)
      for (const e of entries) if (sha256(fs.readFileSync(path.join(dir, e.path))) !== e.postimage.hash) throw new Error(`${e.path} lacks its change`)
      const t2 = nowMs()
      await Effect.runPromise(CheckView.remove(dir))
      const t3 = nowMs()
      if (fs.existsSync(dir)) throw new Error("the view was not removed")
      const t4 = nowMs()
      const checked = await Effect.runPromise(
        ChildVerify.run({ command: ["true"], timeoutMs: 60_000 }, { root: ws, changeset, namespace: path.join(ws, ".forkjoin", "bench"), attempt: 1 }).pipe(
          Effect.provideService(BlobStore, blobs)
        )
      )
      const t5 = nowMs()
      if (checked.status !== "passed") throw new Error(`the check ended ${checked.status}: ${checked.summary}`)
      if (run >= WARMUP) {
        makeMs.push(t1 - t0)
        removeMs.push(t3 - t2)
        checkMs.push(t5 - t4)
      }
    }
    for (const e of entries) if (sha256(fs.readFileSync(path.join(ws, e.path))) !== e.preimage.hash) throw new Error(`the workspace's ${e.path} changed`)
    const common = { unit: "ms", n: RUNS, files: FILES, changed: CHANGED, fs: fsType, peer: null, ratio: null, peerName: null }
    report({ bench: BENCH, metric: "view_make_ms_2k", ours: round(median(makeMs)), ...common, oursSpread: spread(makeMs), measures: "walk + copy 2,000 files + check and write 8 changes" })
    report({ bench: BENCH, metric: "view_remove_ms_2k", ours: round(median(removeMs)), ...common, oursSpread: spread(removeMs) })
    report({ bench: BENCH, metric: "check_true_ms_2k", ours: round(median(checkMs)), ...common, oursSpread: spread(checkMs), measures: "ChildVerify.run with `true`: make, spawn, remove, log" })
  } catch (e) {
    report(errorFigure(BENCH, "setup", e instanceof Error ? (e.stack ?? e.message) : String(e)))
    process.exitCode = 1
  } finally {
    fs.rmSync(ws, { recursive: true, force: true })
  }
  if (!json) printTable(figures)
  if (process.exitCode === 1) note("FAILED: at least one figure has an error (see above)")
}

await main()
