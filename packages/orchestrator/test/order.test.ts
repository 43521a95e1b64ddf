/**
 * Completion-order independence of the join (SPEC §6.4: "results, merge plan and merge
 * execution are deterministic whatever the completion order"). Scripted children run as real
 * `changeset_export` sessions, concurrently, and a controller grants their steps one by one in a
 * chosen interleaving, so the order in which they finish (and export their changesets) is
 * exactly the order we pick. The join (`Join.start`, children in task order) must give the same
 * merge plan, outcomes (statuses, conflict / auto-merged / drift paths, transactions), conflicts
 * and final workspace bytes for every interleaving, and so must `Run.runPlan` at any concurrency.
 * Layers are `Run.layer`, as the CLI's `orchestratorLayer` builds them (the engine, with the
 * history and merge stores over one SQLite connection).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Conflicts from "@forkjoin/orchestrator/Conflicts"
import * as Join from "@forkjoin/orchestrator/Join"
import * as OrchestratorRun from "@forkjoin/orchestrator/Run"
import * as Artifacts from "@forkjoin/runtime/Artifacts"
import { refusalsOf } from "@forkjoin/runtime/Children"
import * as Interleave from "@forkjoin/runtime/Interleave"
import * as RunPlan from "@forkjoin/runtime/RunPlan"
import * as WriteScope from "@forkjoin/runtime/WriteScope"
import { MergeRunId, TaskId, ThreadId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as fc from "fast-check"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { prng } from "../../../test/support/random.ts"
import { filesOnly, readTree } from "../../../test/support/tree.ts"

// -------------------------------------------------------------------------------------
// scenarios: a workspace and scripted children
// -------------------------------------------------------------------------------------

const FILES = ["src/a.txt", "src/b.txt", "lib/c.txt", "lib/d.txt"] as const
const LINES = 12
const SCOPE = ["src", "lib", "new", "moved"]

const lineOf = (file: number, i: number) => `${FILES[file]} line ${i}`
const initialFiles = (): Record<string, string> =>
  Object.fromEntries(FILES.map((f, k) => [f, Array.from({ length: LINES }, (_, i) => `${lineOf(k, i)}\n`).join("")]))

/** One edit of a child; `same` makes two children's edits identical (they converge). */
type Edit =
  | { readonly kind: "update"; readonly file: number; readonly line: number; readonly same: boolean }
  | { readonly kind: "add"; readonly common: boolean }
  | { readonly kind: "delete"; readonly file: number }
  | { readonly kind: "move"; readonly file: number }
  | { readonly kind: "revert"; readonly file: number; readonly line: number }

interface ChildSpec {
  readonly mode: "transactional_write" | "read_only"
  readonly edits: ReadonlyArray<Edit>
  /** Extra `read_file` / `list_dir` steps, so children take different numbers of steps. */
  readonly reads: number
}

interface Scenario {
  readonly children: ReadonlyArray<ChildSpec>
}

const patchOf = (...body: ReadonlyArray<string>) => ({ apply_patch: { patch: ["*** Begin Patch", ...body, "*** End Patch"].join("\n") } })

const actionsOfEdit = (id: string, j: number, e: Edit): ReadonlyArray<unknown> => {
  switch (e.kind) {
    case "update": {
      const old = lineOf(e.file, e.line)
      return [patchOf(`*** Update File: ${FILES[e.file]}`, "@@", `-${old}`, `+${old} ${e.same ? "changed alike" : `changed by ${id}`}`)]
    }
    case "add":
      return [patchOf(`*** Add File: new/${e.common ? "common" : `${id}-${j}`}.txt`, `+${e.common ? "common" : `added by ${id}`}`)]
    case "delete":
      return [patchOf(`*** Delete File: ${FILES[e.file]}`)]
    case "move": {
      const first = lineOf(e.file, 0)
      return [patchOf(`*** Update File: ${FILES[e.file]}`, `*** Move to: moved/${id}/${path.basename(FILES[e.file]!)}`, "@@", `-${first}`, `+${first} moved by ${id}`)]
    }
    case "revert": {
      // Written, then put back: the entry drops out of the changeset (a `noop` child if alone).
      const old = lineOf(e.file, e.line)
      const tmp = `${old} for a moment`
      return [
        patchOf(`*** Update File: ${FILES[e.file]}`, "@@", `-${old}`, `+${tmp}`),
        patchOf(`*** Update File: ${FILES[e.file]}`, "@@", `-${tmp}`, `+${old}`)
      ]
    }
  }
}

const idOf = (i: number) => `child-${i}`

/** The child's script: its reads, then its edits, then `finish`. */
const scriptOf = (spec: ChildSpec, i: number): ReadonlyArray<unknown> => [
  ...Array.from({ length: spec.reads }, (_, r) => (r % 2 === 0 ? { read_file: { path: FILES[r % FILES.length] } } : { list_dir: { path: "src" } })),
  ...spec.edits.flatMap((e, j) => actionsOfEdit(idOf(i), j, e)),
  { finish: {} }
]

const arbEdit: fc.Arbitrary<Edit> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("update" as const), file: fc.nat(1), line: fc.nat(LINES - 1), same: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("add" as const), common: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("delete" as const), file: fc.nat(FILES.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("move" as const), file: fc.nat(FILES.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("revert" as const), file: fc.nat(FILES.length - 1), line: fc.nat(LINES - 1) }) }
)

const arbChild: fc.Arbitrary<ChildSpec> = fc.record({
  mode: fc.constantFrom("transactional_write" as const, "transactional_write" as const, "transactional_write" as const, "read_only" as const),
  edits: fc.array(arbEdit, { minLength: 1, maxLength: 3 }),
  reads: fc.nat(4)
})

const arbScenario: fc.Arbitrary<Scenario> = fc.record({ children: fc.array(arbChild, { minLength: 2, maxLength: 5 }) })

// -------------------------------------------------------------------------------------
// running a scenario in a fresh workspace
// -------------------------------------------------------------------------------------

/** Everything the join decided, and the files it left (base64, `.forkjoin/` excluded). */
interface Observed {
  readonly mergePlan: unknown
  readonly status: string
  readonly outcomes: unknown
  readonly conflicts: unknown
  readonly files: Readonly<Record<string, string>>
}

/** The orchestrator's layer, as the CLI builds it: the engine, and both stores over one connection. */
const workspaceLayer = (root: string) => OrchestratorRun.layer(root, path.join(root, ".forkjoin", "history.db"))

/** A fresh workspace with the initial files, removed after `use`. */
const withWorkspace = <A, E, R>(use: (root: string) => Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "fj-order-")))
      for (const [rel, text] of Object.entries(initialFiles())) {
        fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true })
        fs.writeFileSync(path.join(root, rel), text)
      }
      return root
    }),
    use,
    (root) => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true }))
  )

const liveFiles = (root: string): Record<string, string> =>
  Object.fromEntries(
    [...filesOnly(readTree(root))].filter(([p]) => !p.startsWith(".forkjoin/")).map(([p, latin1]) => [p, Buffer.from(latin1, "latin1").toString("base64")])
  )

const observe = (root: string, runId: MergeRunId) =>
  Effect.gen(function*() {
    const run = yield* Join.loadRun(runId)
    const conflicts = yield* Conflicts.list({ runId })
    return {
      mergePlan: run.mergePlan,
      status: run.status,
      outcomes: run.outcomes,
      // createdAt is the clock's, not the join's decision.
      conflicts: conflicts.map(({ createdAt: _createdAt, ...c }) => c),
      files: liveFiles(root)
    } satisfies Observed
  })

const readJson = (file: string): unknown => (fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : undefined)

const RUN_ID = MergeRunId.make("run-order")

/**
 * Runs the children as concurrent sessions, granting their steps in `schedule` order (a child
 * index per step), so they finish in the order of their last scheduled step; then joins them.
 * Returns what the join did and the order the children finished in.
 */
const runScheduled = (scenario: Scenario, schedule: ReadonlyArray<number>) =>
  withWorkspace((root) =>
    Effect.gen(function*() {
      const runDirectory = Artifacts.defaultRunDirectory(root, RUN_ID)
      const { finished, results } = yield* Interleave.runScheduled({
        runDirectory,
        threadOf: (id) => ThreadId.make(`${RUN_ID}/${id}`),
        children: scenario.children.map((spec, i) => ({
          id: TaskId.make(idOf(i)),
          mode: spec.mode,
          writeScope: WriteScope.makeUnsafe(SCOPE),
          script: scriptOf(spec, i)
        })),
        schedule
      })
      results.forEach((r, i) => assert.strictEqual(r.status, "finished", `${idOf(i)}: ${JSON.stringify(r.error)}`))

      yield* Join.start({
        runId: RUN_ID,
        callerThreadId: ThreadId.make("order-test"),
        runDirectory,
        atomic: false,
        children: scenario.children.map((spec, i): Join.JoinChild => {
          const namespace = path.join(runDirectory, "subagents", idOf(i))
          // What `Run.runPlan` hands the join: the child's refused edits (a patch of a file it deleted).
          const refusals = refusalsOf(results[i]!.steps)
          return {
            id: TaskId.make(idOf(i)),
            mode: spec.mode,
            ...(refusals.length === 0 ? {} : { refusals }),
            ...(spec.mode === "transactional_write" ? { writeScope: WriteScope.makeUnsafe(SCOPE) } : {}),
            changeset: spec.mode === "transactional_write" ? readJson(path.join(namespace, "changeset.json")) : undefined,
            blobDirectory: path.join(namespace, "blobs")
          }
        })
      })
      return { observed: yield* observe(root, RUN_ID), finished }
    }).pipe(Effect.provide(workspaceLayer(root)))
  )

/** The plan file value of a scenario (what `forkjoin run` would read). */
const planOf = (scenario: Scenario): unknown => ({
  schemaVersion: 1,
  tasks: scenario.children.map((spec, i) => ({
    id: idOf(i),
    mode: spec.mode,
    ...(spec.mode === "transactional_write" ? { writeScope: SCOPE } : {}),
    actions: scriptOf(spec, i)
  }))
})

/** The whole run through `Run.runPlan` (children at `concurrency`), its random run id renamed to RUN_ID. */
const runPlanned = (scenario: Scenario, concurrency: number) =>
  withWorkspace((root) =>
    Effect.gen(function*() {
      const plan = RunPlan.decode(planOf(scenario))
      if (Result.isFailure(plan)) return assert.fail(plan.failure.message)
      const outcome = yield* OrchestratorRun.runPlan(plan.success, { planDirectory: root, callerThreadId: ThreadId.make("order-test"), concurrency, admission: { _tag: "Exempt", reason: "test workspace" } })
      const observed = yield* observe(root, outcome.runId)
      return JSON.parse(JSON.stringify(observed).replaceAll(outcome.runId, RUN_ID)) as Observed
    }).pipe(Effect.provide(workspaceLayer(root)))
  )

/** Every child's steps, in task order: each child finishes before the next starts. */
const sequential = (scenario: Scenario): Array<number> => scenario.children.flatMap((spec, i) => scriptOf(spec, i).map(() => i))

/** Every child's steps, interleaved at random (seeded). */
const shuffled = (scenario: Scenario, seed: number): Array<number> => {
  const steps = sequential(scenario)
  const r = prng(seed)
  for (let k = steps.length - 1; k > 0; k--) {
    const j = r.int(k + 1)
    ;[steps[k], steps[j]] = [steps[j]!, steps[k]!]
  }
  return steps
}

// -------------------------------------------------------------------------------------
// tests
// -------------------------------------------------------------------------------------

describe("the join does not depend on the order children finish in", () => {
  // Applied, auto-merged, conflicted, no-op (reverted), converged (same edit) and read-only children in one run.
  const example: Scenario = {
    children: [
      { mode: "transactional_write", reads: 0, edits: [{ kind: "update", file: 0, line: 1, same: false }, { kind: "add", common: false }] },
      { mode: "transactional_write", reads: 3, edits: [{ kind: "update", file: 0, line: 9, same: false }] },
      { mode: "transactional_write", reads: 1, edits: [{ kind: "update", file: 0, line: 1, same: false }] },
      { mode: "read_only", reads: 2, edits: [{ kind: "delete", file: 2 }] },
      { mode: "transactional_write", reads: 0, edits: [{ kind: "revert", file: 1, line: 4 }] },
      { mode: "transactional_write", reads: 2, edits: [{ kind: "update", file: 1, line: 6, same: true }, { kind: "move", file: 3 }] },
      { mode: "transactional_write", reads: 0, edits: [{ kind: "update", file: 1, line: 6, same: true }] }
    ]
  }

  it.effect("task order and reverse completion order give the same plan, outcomes, conflicts and bytes", () =>
    Effect.gen(function*() {
      const inOrder = yield* runScheduled(example, sequential(example))
      assert.deepStrictEqual(inOrder.finished, [0, 1, 2, 3, 4, 5, 6])
      const o = inOrder.observed.outcomes as ReadonlyArray<{ childId: string; status: string; conflictPaths?: ReadonlyArray<string>; autoMergedPaths?: ReadonlyArray<string> }>
      // The example exercises what it claims to (child-3 is read-only: no outcome).
      assert.deepStrictEqual(o.map((c) => [c.childId, c.status]), [
        ["child-0", "applied"],
        ["child-1", "auto_merged"],
        ["child-2", "conflicted_unresolved"],
        ["child-4", "noop"],
        ["child-5", "applied"],
        // The same edit as child-5: it converges, nothing is left to apply.
        ["child-6", "noop"]
      ])
      assert.deepStrictEqual(o[1]!.autoMergedPaths, ["src/a.txt"])
      assert.deepStrictEqual(o[2]!.conflictPaths, ["src/a.txt"])
      assert.strictEqual(inOrder.observed.status, "blocked")

      // Reverse: the last task finishes first; its steps all run before any earlier task's last step.
      const reversed = [...sequential(example)].reverse()
      const backwards = yield* runScheduled(example, reversed)
      assert.deepStrictEqual(backwards.finished, [6, 5, 4, 3, 2, 1, 0])
      assert.deepStrictEqual(backwards.observed, inOrder.observed)
    }))

  it.effect("any interleaving of the children's steps, and runPlan at any concurrency, give the same join (property)", () =>
    Effect.gen(function*() {
      let runs = 0
      const finishingOrders = new Set<string>()
      let notInTaskOrder = 0
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(arbScenario, fc.array(fc.nat(), { minLength: 2, maxLength: 2 }), fc.integer({ min: 1, max: 5 }), async (scenario, seeds, concurrency) => {
            const reference = await Effect.runPromise(runScheduled(scenario, sequential(scenario)))
            for (const seed of seeds) {
              const other = await Effect.runPromise(runScheduled(scenario, shuffled(scenario, seed)))
              runs += 1
              finishingOrders.add(other.finished.join(","))
              if (other.finished.some((c, k) => c !== k)) notInTaskOrder += 1
              assert.deepStrictEqual(other.observed, reference.observed, `finished in order ${other.finished.join(",")}`)
            }
            assert.deepStrictEqual(await Effect.runPromise(runPlanned(scenario, concurrency)), reference.observed, `runPlan, concurrency ${concurrency}`)
          }),
          { seed: 20261130, numRuns: 40, endOnFailure: true }
        )
      )
      // The property really saw children finish out of task order, in many different orders.
      assert.isAbove(notInTaskOrder, runs / 2)
      assert.isAbove(finishingOrders.size, 10)
    }), 300_000)
})
