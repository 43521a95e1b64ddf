/**
 * `cluster-wire` bench: bytes shipped per child on a runner, against the workspace size. A
 * 20,000-file workspace (20 packages × 20 modules × 50 files of about 1 KiB) is snapshotted
 * into a manifest tree and served on loopback; a child reads 8 files in 8 modules through a
 * `BaselineView`, edits them, and its changeset comes back through `ChangesetWire.send`
 * (only missing blobs uploaded). Counted at the client: request and answer body bytes.
 *
 * Figures: `cluster_wire_bytes_per_child` (bytes both ways; peer: the workspace's file bytes;
 * target ratio <= 0.01, O(touched) not O(repo)), `cluster_wire_requests_per_child`, and
 * `cluster_wire_snapshot_ms` (the parent's snapshot, once per run), and
 * `cluster_runner_checkout_ms_20k`: a runner's own checkout of the whole baseline for a child
 * that tests its work (`childVerify`), made once per baseline, with the attempt's time and the
 * next attempt's (which reuses it). Deterministic: one run.
 * A read that returns other bytes than the file's makes the bench exit 1.
 *
 * Usage: `npm run bench -- cluster-wire [--json] [--dir DIR]`.
 */
import * as fs from "node:fs"
import os from "node:os"
import path from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Engine } from "../../packages/engine/src/Engine.ts"
import { layerMemory } from "../../packages/history/src/HistoryStoreSqlite.ts"
import { BlobStore, makeMemory } from "../../packages/runtime/src/BlobStore.ts"
import * as Overlay from "../../packages/runtime/src/Overlay.ts"
import * as WriteScope from "../../packages/runtime/src/WriteScope.ts"
import { TaskId, ThreadId } from "../../packages/schema/src/index.ts"
import * as Baseline from "../../packages/cluster/src/Baseline.ts"
import * as ChangesetWire from "../../packages/cluster/src/ChangesetWire.ts"
import * as ChildAttempt from "../../packages/cluster/src/ChildAttempt.ts"
import { sign } from "../../packages/cluster/src/ClusterAuth.ts"
import * as ObjectClient from "../../packages/cluster/src/ObjectClient.ts"
import * as Objects from "../../packages/cluster/src/Objects.ts"
import * as ObjectServer from "../../packages/cluster/src/ObjectServer.ts"
import { type Figure, emitJson, errorFigure, note, printTable, round, wantsJson } from "./harness.ts"

const BENCH = "cluster-wire"
const pad = (n: number) => String(n).padStart(2, "0")
const fileAt = (p: number, m: number, f: number) => `pkg-${pad(p)}/mod-${pad(m)}/file-${pad(f)}.ts`
const TOUCHED = [fileAt(0, 0, 0), fileAt(0, 1, 7), fileAt(3, 4, 9), fileAt(3, 5, 1), fileAt(7, 7, 7), fileAt(11, 0, 49), fileAt(15, 19, 3), fileAt(19, 19, 19)]

const contentOf = (p: number, m: number, f: number) =>
  Array.from({ length: 24 }, (_, i) => `export const v${p}_${m}_${f}_${i} = ${(p * 1_000_003 + m * 7919 + f * 31 + i) % 1_000_000}\n`).join("")

const main = async () => {
  const argv = process.argv.slice(2)
  const json = wantsJson(argv)
  const dirAt = argv.indexOf("--dir")
  const tmp = fs.mkdtempSync(path.join(dirAt === -1 ? os.tmpdir() : argv[dirAt + 1]!, "fj-bench-cluster-wire-"))
  const figures: Array<Figure> = []
  const report = (f: Figure) => {
    figures.push(f)
    if (json) emitJson(f)
  }
  try {
    const ws = path.join(tmp, "ws")
    let workspaceBytes = 0
    for (let p = 0; p < 20; p++) {
      for (let m = 0; m < 20; m++) {
        const dir = path.join(ws, `pkg-${pad(p)}`, `mod-${pad(m)}`)
        fs.mkdirSync(dir, { recursive: true })
        for (let f = 0; f < 50; f++) {
          const text = contentOf(p, m, f)
          workspaceBytes += Buffer.byteLength(text)
          fs.writeFileSync(path.join(dir, `file-${pad(f)}.ts`), text)
        }
      }
    }
    fs.mkdirSync(path.join(ws, ".forkjoin"))
    note(`workspace: 20,000 files, ${workspaceBytes} bytes`)
    const program = Effect.gen(function*() {
      const started = Date.now()
      const baseline = yield* Baseline.snapshot
      const snapshotMs = Date.now() - started
      const objects = yield* Objects.make(baseline)
      const claimed = new Set<string>()
      const claim = (attempt: string) => Effect.sync(() => (claimed.has(attempt) ? false : (claimed.add(attempt), true)))
      const running = yield* Effect.provideService(ObjectServer.serve({ claim }), Objects.Objects, objects)
      const client = ObjectClient.make({ url: running.url, secret: running.secret })
      const view = ObjectClient.baselineView(client, baseline.tree.root)
      // The child's edits, staged as a runner's overlay would stage them; its blobs in the runner's store.
      const staged = yield* Overlay.make({ writeScope: WriteScope.makeUnsafe(["pkg-00", "pkg-03", "pkg-07", "pkg-11", "pkg-15", "pkg-19"]) })
      for (const p of TOUCHED) {
        const bytes = yield* view.read(p)
        if (bytes === undefined || Buffer.compare(Buffer.from(bytes), fs.readFileSync(path.join(ws, p))) !== 0) {
          return yield* Effect.die(new Error(`${p} read other bytes than the file's`))
        }
        yield* staged.writeFile(p, new TextEncoder().encode(`${new TextDecoder().decode(bytes)}// edited\n`))
      }
      const runnerStore = makeMemory()
      const changeset = yield* Effect.provideService(
        staged.export({ childId: TaskId.make("edit"), taskId: TaskId.make("edit"), threadId: ThreadId.make("bench") }),
        BlobStore,
        runnerStore
      )
      yield* Effect.provideService(ChangesetWire.send(client, changeset), BlobStore, runnerStore)
      const stats = client.stats()
      // A child with a check: the runner checks the whole baseline out once, then reuses it.
      const checkDir = fs.mkdtempSync(path.join(tmp, "runner-"))
      const side = ChildAttempt.runnerSide(Option.some(running.secret), checkDir)
      const task = { id: "checked", mode: "transactional_write", writeScope: ["pkg-00"], actions: [{ apply_patch: { patch: `*** Begin Patch\n*** Add File: pkg-00/checked.ts\n+// checked\n*** End Patch` } }, { finish: {} }], childVerify: { command: ["true"], timeoutMs: 600_000 } }
      const attempt = (n: number) =>
        Effect.gen(function*() {
          const unsigned: ChildAttempt.AttemptRequest = {
            runId: "bench", taskId: TaskId.make("checked"), attempt: n, plan: JSON.stringify({ schemaVersion: 1, tasks: [task] }), objects: running.url, root: baseline.tree.root
          }
          const auth = sign(running.secret, { method: ChildAttempt.SIGNED_METHOD, path: ChildAttempt.entityId("bench", "checked", n), time: Date.now(), body: ChildAttempt.signedBytes(unsigned) })
          const t0 = Date.now()
          const reply = yield* ChildAttempt.runAttempt({ ...unsigned, auth }, side, { runner: "bench", nth: n })
          if (reply.childVerify?.status !== "passed") return yield* Effect.die(new Error(`the check ended ${JSON.stringify(reply.error ?? reply.childVerify)}`))
          return { reply, ms: Date.now() - t0 }
        })
      const first = yield* attempt(1)
      const second = yield* attempt(2)
      return { stats, snapshotMs, nodes: baseline.tree.nodes.size, first, second }
    })
    const layer = Layer.mergeAll(Engine.layer({ root: ws }).pipe(Layer.provide(layerMemory)), BlobStore.layerMemory)
    const { first, nodes, second, snapshotMs, stats } = await Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(layer)))
    const shipped = stats.received + stats.sent
    const ratio = shipped / workspaceBytes
    report({
      bench: BENCH,
      metric: "cluster_wire_bytes_per_child",
      ours: shipped,
      peer: workspaceBytes,
      ratio: round(ratio, 5),
      peerName: "the workspace's file bytes (20,000 files)",
      unit: "bytes",
      n: 1,
      target: 0.01,
      targetKind: "ratio_max",
      pass: ratio <= 0.01,
      received: stats.received,
      sent: stats.sent,
      touchedFiles: TOUCHED.length,
      nodes
    })
    report({ bench: BENCH, metric: "cluster_wire_requests_per_child", ours: stats.requests, peer: null, ratio: null, peerName: null, unit: "requests", n: 1 })
    report({ bench: BENCH, metric: "cluster_wire_snapshot_ms", ours: snapshotMs, peer: null, ratio: null, peerName: null, unit: "ms", n: 1 })
    const checkout = first.reply.checkout
    report({
      bench: BENCH, metric: "cluster_runner_checkout_ms_20k", ours: checkout?.ms ?? null, peer: null, ratio: null, peerName: null, unit: "ms", n: 1,
      files: checkout?.files, bytes: checkout?.bytes, attemptMs: first.ms, nextAttemptMs: second.ms,
      measures: "a runner's own checkout of the 20,000-file baseline for a child's check (once per baseline); the next child's attempt reuses it"
    })
  } catch (e) {
    report(errorFigure(BENCH, "setup", `threw: ${e instanceof Error ? e.message : String(e)}`))
    process.exitCode = 1
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
  if (!json) printTable(figures)
}

await main()
