/**
 * `Gc.gc` over real runs (issue 9 item 7): finished and export-only runs go once older than
 * the limit, with the bytes they held; fresh ones stay; a blocked run with an open conflict
 * and an interrupted (`running`) run stay at any age, and their joins still complete from what
 * gc left. The merge runs themselves stay in history. Also: the pure verdict, leftovers of an
 * interrupted gc, and links (never followed). Layers are `Run.layer` (engine, history and merge
 * stores over one SQLite file), as the CLI builds them; "later" is a clock shifted forward for
 * the gc call only.
 */
import { assert, describe, it } from "@effect/vitest"
import { Engine } from "@forkjoin/engine/Engine"
import { MergeStore } from "@forkjoin/history/MergeStore"
import * as Artifacts from "@forkjoin/runtime/Artifacts"
import * as Children from "@forkjoin/runtime/Children"
import * as RunPlan from "@forkjoin/runtime/RunPlan"
import { ConflictId, EnvironmentId, MergeRunId, TaskId, ThreadId } from "@forkjoin/schema/Ids"
import type { MergeRun } from "@forkjoin/schema/MergeRun"
import { UtcTimestamp } from "@forkjoin/schema/UtcTimestamp"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import * as Conflicts from "../src/Conflicts.ts"
import * as Gc from "../src/Gc.ts"
import * as OrchestratorRun from "../src/Run.ts"

const DAY = 86_400_000
const sandboxes: Array<string> = []
afterAll(() => {
  for (const dir of sandboxes.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

const lines = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}\n`).join("")
const FILES = { "m/f.txt": lines("f", 6), "m/other.txt": "o1\n", "n/g.txt": "g1\n" }

/** A fresh real workspace holding FILES and the layer over its default history database. */
const workspace = () => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "fj-gc-")))
  sandboxes.push(root)
  for (const [rel, text] of Object.entries(FILES)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true })
    fs.writeFileSync(path.join(root, rel), text)
  }
  return { root, layer: OrchestratorRun.layer(root, path.join(root, ".forkjoin", "history.db")) }
}

const patchOf = (...body: ReadonlyArray<string>) => ({ apply_patch: { patch: ["*** Begin Patch", ...body, "*** End Patch"].join("\n") } })
const edit = (id: string, scope: string, ...patches: ReadonlyArray<ReadonlyArray<string>>) => ({
  id,
  mode: "transactional_write",
  writeScope: [scope],
  actions: [...patches.map((body) => patchOf(...body)), { finish: {} }]
})
const planOf = (...tasks: ReadonlyArray<unknown>): RunPlan.RunPlan => {
  const r = RunPlan.decode({ schemaVersion: 1, tasks })
  if (Result.isFailure(r)) throw r.failure
  return r.success
}

/** Two children editing disjoint folders: the join applies both. */
const disjoint = () =>
  planOf(
    edit("one", "m", ["*** Update File: m/other.txt", "@@", "-o1", "+O1"]),
    edit("two", "n", ["*** Update File: n/g.txt", "@@", "-g1", "+G1"])
  )

/** The second child overlaps the first on m/f.txt (a conflict) and also edits m/other.txt. */
const conflicting = () =>
  planOf(
    edit("first", "m", ["*** Update File: m/f.txt", "@@", "-f1", "+F1-first"]),
    edit("second", "m", ["*** Update File: m/f.txt", "@@", "-f1", "+F1-second", "*** Update File: m/other.txt", "@@", "-o1", "+O1"])
  )

const runPlan = (plan: RunPlan.RunPlan) =>
  OrchestratorRun.runPlan(plan, { planDirectory: os.tmpdir(), callerThreadId: ThreadId.make("gc-test"), admission: { _tag: "Exempt", reason: "test workspace" } })

/** An export-only run (children only, no merge run), in the default run folder. */
const exportOnly = (plan: RunPlan.RunPlan, runId: string) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    yield* Children.runExportOnly(plan, { runId, runDirectory: Artifacts.defaultRunDirectory(engine.root, runId) })
  })

/** `Gc.gc` as if it ran `offsetMillis` from now. */
const gcAt = (offsetMillis: number, olderThan: Duration.Duration = Duration.days(7)) =>
  Effect.gen(function*() {
    const real = yield* Clock.Clock
    const shifted: Clock.Clock = {
      currentTimeMillisUnsafe: () => real.currentTimeMillisUnsafe() + offsetMillis,
      currentTimeMillis: Effect.sync(() => real.currentTimeMillisUnsafe() + offsetMillis),
      currentTimeNanosUnsafe: () => real.currentTimeNanosUnsafe() + BigInt(offsetMillis) * 1_000_000n,
      currentTimeNanos: Effect.sync(() => real.currentTimeNanosUnsafe() + BigInt(offsetMillis) * 1_000_000n),
      monotonicTimeNanosUnsafe: () => real.monotonicTimeNanosUnsafe(),
      monotonicTimeNanos: real.monotonicTimeNanos,
      sleep: (d) => real.sleep(d)
    }
    return yield* Gc.gc({ olderThan }).pipe(Effect.provideService(Clock.Clock, shifted))
  })

const runFolder = (root: string, runId: string) => path.join(Gc.runsDirectoryOf(root), runId)

/** Every file below `dir` with its bytes, for "left exactly as it was" checks. */
const filesBelow = (dir: string): Record<string, string> => {
  const out: Record<string, string> = {}
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const abs = path.join(d, e.name)
      if (e.isDirectory()) walk(abs)
      else out[path.relative(dir, abs)] = fs.readFileSync(abs).toString("base64")
    }
  }
  walk(dir)
  return out
}

/** The bytes of every file below `dir`. */
const bytesBelow = (dir: string): number =>
  Object.keys(filesBelow(dir)).reduce((n, rel) => n + fs.statSync(path.join(dir, rel)).size, 0)

describe("Gc.gc", () => {
  it.live("removes an old applied run and an old export-only run with the bytes they held; the merge run stays in history", () => {
    const { layer, root } = workspace()
    return Effect.gen(function*() {
      const applied = yield* runPlan(disjoint())
      assert.strictEqual(applied.run.status, "applied")
      yield* exportOnly(disjoint(), "run-export-only")
      const appliedBytes = bytesBelow(runFolder(root, applied.runId))
      const exportBytes = bytesBelow(runFolder(root, "run-export-only"))
      assert.isAbove(appliedBytes, 0)
      assert.isAbove(exportBytes, 0)

      const report = yield* gcAt(8 * DAY)
      assert.deepStrictEqual(report, {
        removed: [{ runId: applied.runId, bytes: appliedBytes }, { runId: "run-export-only", bytes: exportBytes }].sort((a, b) => (a.runId < b.runId ? -1 : 1)),
        kept: []
      })
      assert.deepStrictEqual(fs.readdirSync(Gc.runsDirectoryOf(root)), [])
      const store = yield* MergeStore
      assert.isTrue(Option.isSome(yield* store.getRun(applied.runId)))
      // Nothing left to do: a second gc removes nothing.
      assert.deepStrictEqual(yield* gcAt(8 * DAY), { removed: [], kept: [] })
    }).pipe(Effect.provide(layer))
  })

  it.live("keeps a run younger than the limit (by its merge run's updatedAt, or its files' mtimes without one)", () => {
    const { layer, root } = workspace()
    return Effect.gen(function*() {
      const applied = yield* runPlan(disjoint())
      yield* exportOnly(disjoint(), "run-export-only")
      const both = [applied.runId as string, "run-export-only"].sort()
      for (const offset of [0, 6 * DAY]) {
        const report = yield* gcAt(offset)
        assert.deepStrictEqual(report, { removed: [], kept: both.map((runId) => ({ runId, reason: "recent" as const })) })
      }
      const hourly = yield* gcAt(2 * 3_600_000, Duration.hours(3))
      assert.deepStrictEqual(hourly.removed, [])
      assert.deepStrictEqual(fs.readdirSync(Gc.runsDirectoryOf(root)).sort(), both)
      // At exactly the limit the run is old enough.
      const limit = yield* gcAt(7 * DAY + 1_000)
      assert.deepStrictEqual(limit.removed.map((r) => r.runId), both)
    }).pipe(Effect.provide(layer))
  })

  it.live("keeps a blocked run with an open conflict at any age; resolving it afterwards still applies the rest of the child", () => {
    const { layer, root } = workspace()
    return Effect.gen(function*() {
      const blocked = yield* runPlan(conflicting())
      assert.strictEqual(blocked.run.status, "blocked")
      const folder = runFolder(root, blocked.runId)
      const before = filesBelow(folder)

      const report = yield* gcAt(365 * DAY, Duration.millis(0))
      assert.deepStrictEqual(report, { removed: [], kept: [{ runId: blocked.runId, reason: "blocked" }] })
      assert.deepStrictEqual(filesBelow(folder), before)

      // The child's remainder (m/other.txt) comes from the run folder gc left alone.
      const conflictId = ConflictId.make(`${blocked.runId}/second:m/f.txt`)
      const resolved = yield* Conflicts.resolve(conflictId, { kind: "apply" })
      assert.strictEqual(resolved.outcome?.status, "resolved")
      assert.strictEqual(fs.readFileSync(path.join(root, "m/other.txt"), "utf8"), "O1\n")
      assert.strictEqual(fs.readFileSync(path.join(root, "m/f.txt"), "utf8"), FILES["m/f.txt"].replace("f1\n", "F1-second\n"))

      // Now finished: the run goes once old.
      const after = yield* gcAt(8 * DAY)
      assert.deepStrictEqual(after.removed.map((r) => r.runId), [blocked.runId])
      assert.isFalse(fs.existsSync(folder))
    }).pipe(Effect.provide(layer))
  })

  it.live("keeps an interrupted (running) run at any age; resuming it afterwards joins the pending child", () => {
    const { layer, root } = workspace()
    return Effect.gen(function*() {
      // Interrupted right after the first child's outcome is recorded, as a crash would leave it.
      const exit = yield* Effect.exit(OrchestratorRun.runPlan(disjoint(), {
        planDirectory: os.tmpdir(),
        callerThreadId: ThreadId.make("gc-test"),
        admission: { _tag: "Exempt", reason: "test workspace" },
        progress: (line) => (line.startsWith("joined ") ? Effect.interrupt : Effect.void)
      }))
      assert.isTrue(Exit.isFailure(exit))
      const engine = yield* Engine
      const store = yield* MergeStore
      const running = yield* store.listRuns({ environmentId: engine.environmentId, status: "running" })
      assert.strictEqual(running.length, 1)
      const runId = running[0]!.runId
      assert.deepStrictEqual(running[0]!.outcomes.map((o) => o.status), ["applied", "pending"])

      const report = yield* gcAt(365 * DAY, Duration.millis(0))
      assert.deepStrictEqual(report, { removed: [], kept: [{ runId, reason: "running" }] })

      const resumed = yield* OrchestratorRun.resume(runId)
      assert.strictEqual(resumed.run.status, "applied")
      assert.strictEqual(fs.readFileSync(path.join(root, "n/g.txt"), "utf8"), "G1\n")
      assert.deepStrictEqual((yield* gcAt(8 * DAY)).removed.map((r) => r.runId), [runId])
    }).pipe(Effect.provide(layer))
  })

  it.live("removes the leftover of an interrupted gc; never follows a link in the runs folder; refuses a runs folder that is a link", () => {
    const { layer, root } = workspace()
    const outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "fj-gc-outside-")))
    sandboxes.push(outside)
    fs.writeFileSync(path.join(outside, "keep.txt"), "not forkjoin's\n")
    return Effect.gen(function*() {
      const runs = Gc.runsDirectoryOf(root)
      fs.mkdirSync(path.join(runs, ".gc-run-old.0f0e", "subagents", "t"), { recursive: true })
      fs.writeFileSync(path.join(runs, ".gc-run-old.0f0e", "subagents", "t", "trace.json"), "[]\n")
      fs.symlinkSync(outside, path.join(runs, "run-link"))
      fs.writeFileSync(path.join(runs, "notes.txt"), "a stray file\n")
      const report = yield* gcAt(8 * DAY, Duration.millis(0))
      assert.deepStrictEqual(report, { removed: [{ runId: "run-old", bytes: 3 }], kept: [] })
      assert.deepStrictEqual(fs.readdirSync(runs).sort(), ["notes.txt", "run-link"])
      assert.deepStrictEqual(fs.readdirSync(outside), ["keep.txt"])

      fs.rmSync(runs, { recursive: true })
      fs.symlinkSync(outside, runs)
      const refused = yield* Effect.flip(gcAt(8 * DAY, Duration.millis(0)))
      assert.strictEqual(refused.code, "artifacts_unavailable")
      assert.deepStrictEqual(fs.readdirSync(outside), ["keep.txt"])
    }).pipe(Effect.provide(layer))
  })
})

describe("Gc.verdictOf", () => {
  const run = (status: MergeRun["status"], updatedAt: string): MergeRun => ({
    schemaVersion: 1,
    runId: MergeRunId.make("run-x"),
    environmentId: EnvironmentId.make("env-x"),
    threadId: ThreadId.make("run-x"),
    callerThreadId: ThreadId.make("cli"),
    runDirectory: "/ws/.forkjoin/runs/run-x",
    atomic: false,
    status,
    mergePlan: {
      strategy: "transactional_parent_merge",
      requiresParentMerge: false,
      readOnlyResultIds: [],
      mutatingResultIds: [TaskId.make("t")],
      changesetResultIds: [TaskId.make("t")],
      missingChangesetResultIds: [],
      writeScopes: {},
      overlaps: []
    },
    outcomes: [],
    createdAt: UtcTimestamp.make(updatedAt),
    updatedAt: UtcTimestamp.make(updatedAt)
  })
  const t0 = Date.parse("2026-01-01T00:00:00.000Z")
  const old = "2025-12-01T00:00:00.000Z"

  it("unfinished and conflicted runs stay at any age; finished ones go at the limit; export-only runs are dated by their files", () => {
    assert.deepStrictEqual(Gc.verdictOf({ run: run("running", old), openConflicts: 0, lastWrittenMillis: 0 }, t0, 0), { _tag: "Keep", reason: "running" })
    assert.deepStrictEqual(Gc.verdictOf({ run: run("blocked", old), openConflicts: 1, lastWrittenMillis: 0 }, t0, 0), { _tag: "Keep", reason: "blocked" })
    for (const status of ["applied", "partial", "failed"] as const) {
      assert.deepStrictEqual(Gc.verdictOf({ run: run(status, old), openConflicts: 1, lastWrittenMillis: 0 }, t0, 0), { _tag: "Keep", reason: "open_conflicts" })
      assert.deepStrictEqual(Gc.verdictOf({ run: run(status, old), openConflicts: 0, lastWrittenMillis: t0 }, t0, 31 * DAY), { _tag: "Remove" })
      assert.deepStrictEqual(Gc.verdictOf({ run: run(status, old), openConflicts: 0, lastWrittenMillis: 0 }, t0, 31 * DAY + 1), { _tag: "Keep", reason: "recent" })
    }
    assert.deepStrictEqual(Gc.verdictOf({ run: undefined, openConflicts: 0, lastWrittenMillis: t0 - DAY }, t0, DAY), { _tag: "Remove" })
    assert.deepStrictEqual(Gc.verdictOf({ run: undefined, openConflicts: 0, lastWrittenMillis: t0 - DAY + 1 }, t0, DAY), { _tag: "Keep", reason: "recent" })
    // A clock set back (a date in the future) is never old.
    assert.deepStrictEqual(Gc.verdictOf({ run: undefined, openConflicts: 0, lastWrittenMillis: t0 + DAY }, t0, 0), { _tag: "Keep", reason: "recent" })
  })
})
