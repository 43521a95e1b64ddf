/**
 * Completion-order independence (SPEC §6.4): scripted children run as real concurrent
 * sessions whose steps are granted one at a time (`@forkjoin/runtime/Interleave`), so the order in
 * which they finish is exactly the one chosen. The same children finishing in task order, in
 * reverse order and interleaved must give the same merge plan, outcomes, conflicts and bytes.
 *
 * Owns the scenario's children, schedules and comparison, not the join.
 */
import * as Conflicts from "@forkjoin/orchestrator/Conflicts"
import * as Join from "@forkjoin/orchestrator/Join"
import * as Artifacts from "@forkjoin/runtime/Artifacts"
import * as Interleave from "@forkjoin/runtime/Interleave"
import * as WriteScope from "@forkjoin/runtime/WriteScope"
import { MergeRunId, TaskId, ThreadId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as path from "node:path"
import {
  canonical,
  inWorkspace,
  makeDirectory,
  numberedLines,
  patchOf,
  PROBE_THREAD,
  type Scenario,
  ScenarioError,
  workspaceTree,
  writeFiles
} from "../internal/harness.ts"

const FILES = { "f.txt": numberedLines("f", 10), "g.txt": numberedLines("g", 5) }
const SCOPE = ["f.txt", "g.txt", "new"]

const edit = (file: string, old: string, to: string) => ({ apply_patch: { patch: patchOf(`*** Update File: ${file}`, "@@", `-${old}`, `+${to}`) } })
const read = (file: string) => ({ read_file: { path: file } })
const FINISH = { finish: {} }

interface Child {
  readonly mode: "transactional_write" | "read_only"
  readonly script: ReadonlyArray<unknown>
}

/** Applied, auto-merged, conflicted, applied, converged (no-op) and read-only children, in task order. */
const CHILDREN: ReadonlyArray<Child> = [
  { mode: "transactional_write", script: [edit("f.txt", "f2", "F2 by c0"), { apply_patch: { patch: patchOf("*** Add File: new/c0.txt", "+c0") } }, FINISH] },
  { mode: "transactional_write", script: [read("f.txt"), read("g.txt"), edit("f.txt", "f9", "F9 by c1"), FINISH] },
  { mode: "transactional_write", script: [edit("f.txt", "f2", "F2 by c2"), FINISH] },
  { mode: "transactional_write", script: [read("g.txt"), edit("g.txt", "g3", "G3 alike"), FINISH] },
  { mode: "transactional_write", script: [edit("g.txt", "g3", "G3 alike"), FINISH] },
  { mode: "read_only", script: [read("f.txt"), read("g.txt"), FINISH] }
]

const idOf = (i: number) => TaskId.make(`c${i}`)
const RUN_ID = MergeRunId.make("run-probe-order")

/** Every child's steps, child after child: they finish in task order. */
const SEQUENTIAL: ReadonlyArray<number> = CHILDREN.flatMap((c, i) => c.script.map(() => i))

/** One step of each unfinished child in turn, starting from the last child. */
const roundRobin = (): ReadonlyArray<number> => {
  const left = CHILDREN.map((c) => c.script.length)
  const out: Array<number> = []
  while (left.some((n) => n > 0)) {
    for (let i = CHILDREN.length - 1; i >= 0; i--) {
      if (left[i]! > 0) {
        left[i]! -= 1
        out.push(i)
      }
    }
  }
  return out
}

/** What the join decided and the files it left. */
const observe = (ws: string) =>
  Effect.gen(function*() {
    const run = yield* Join.loadRun(RUN_ID)
    const conflicts = yield* Conflicts.list({ runId: RUN_ID })
    return {
      mergePlan: run.mergePlan,
      outcomes: run.outcomes,
      // The timestamp is the clock's, not the join's decision.
      conflicts: conflicts.map(({ createdAt: _createdAt, ...c }) => c),
      files: workspaceTree(ws)
    }
  })

/**
 * Runs the children in the workspace `ws`, granting their steps in `schedule` order (a child
 * index per step), then joins them; returns what the join did and the order they finished in.
 */
const runScheduled = (ws: string, schedule: ReadonlyArray<number>) =>
  inWorkspace(ws, Effect.gen(function*() {
    const runDirectory = Artifacts.defaultRunDirectory(ws, RUN_ID)
    const { finished, results } = yield* Interleave.runScheduled({
      runDirectory,
      threadOf: (id) => ThreadId.make(`${RUN_ID}/${id}`),
      children: CHILDREN.map((spec, i) => ({ id: idOf(i), mode: spec.mode, writeScope: WriteScope.makeUnsafe(SCOPE), script: spec.script })),
      schedule
    })
    const unfinished = results.findIndex((r) => r.status !== "finished")
    if (unfinished >= 0) {
      return yield* new ScenarioError({ operation: `Running child ${idOf(unfinished)}`, detail: `the session ended ${results[unfinished]!.status}` })
    }
    yield* Join.start({
      runId: RUN_ID,
      callerThreadId: PROBE_THREAD,
      runDirectory,
      atomic: false,
      children: CHILDREN.map((spec, i): Join.JoinChild => {
        const namespace = path.join(runDirectory, "subagents", idOf(i))
        const file = path.join(namespace, "changeset.json")
        return {
          id: idOf(i),
          mode: spec.mode,
          ...(spec.mode === "transactional_write" ? { writeScope: WriteScope.makeUnsafe(SCOPE) } : {}),
          changeset: spec.mode === "transactional_write" && fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : undefined,
          blobDirectory: path.join(namespace, "blobs")
        }
      })
    })
    return { observed: yield* observe(ws), finished }
  }))

/**
 * `completion_order_independent`: six children (applied, auto-merged, conflicted, applied,
 * converged, read-only) finishing in task order, in reverse and interleaved give one result.
 *
 * @category constants
 * @since 0.1.0
 */
export const completionOrderIndependent: Scenario = ({ dir, checks }) =>
  Effect.gen(function*() {
    const runIn = (name: string, schedule: ReadonlyArray<number>) =>
      Effect.gen(function*() {
        const ws = yield* makeDirectory(path.join(dir, name))
        yield* writeFiles(ws, FILES)
        return yield* runScheduled(ws, schedule)
      })
    const reference = yield* runIn("task-order", SEQUENTIAL)
    checks.equal(
      "in task order the children end applied, auto_merged, conflicted_unresolved, applied and noop",
      reference.observed.outcomes.map((o) => [o.childId, o.status]),
      [["c0", "applied"], ["c1", "auto_merged"], ["c2", "conflicted_unresolved"], ["c3", "applied"], ["c4", "noop"]]
    )
    const others = [
      { name: "reverse", schedule: [...SEQUENTIAL].reverse(), order: [5, 4, 3, 2, 1, 0] },
      { name: "interleaved", schedule: roundRobin(), order: undefined }
    ] as const
    for (const { name, order, schedule } of others) {
      const other = yield* runIn(name, schedule)
      if (order !== undefined) checks.equal(`children finish in ${name} order`, other.finished, order)
      else {
        checks.that(`children finish ${name}, not in task order`, other.finished.some((c, k) => c !== k), () => `finished in order ${other.finished.join(",")}`)
      }
      for (const key of ["mergePlan", "outcomes", "conflicts", "files"] as const) {
        checks.that(`${name} completion gives the same ${key}`, canonical(other.observed[key]) === canonical(reference.observed[key]), () =>
          `task order: ${canonical(reference.observed[key])}; ${name}: ${canonical(other.observed[key])}`)
      }
    }
  })
