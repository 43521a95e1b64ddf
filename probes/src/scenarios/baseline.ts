/**
 * The join's baseline verification (SPEC §6.6 step 2): a child whose file changed outside the
 * join since it started is refused (`baseline_drift`), and a child whose file an earlier
 * sibling changed while the child's own starting content is nowhere to be found cannot be
 * merged exactly (`baseline_unverifiable`). In both, the refused child writes nothing and no
 * record of it exists, while its sibling is applied.
 *
 * Owns the scenarios' fixtures and expectations, not the join.
 */
import * as Effect from "effect/Effect"
import * as path from "node:path"
import {
  changesetTask,
  childTransaction,
  editTask,
  exportChild,
  inWorkspace,
  makeDirectory,
  planOf,
  records,
  runPlan,
  type Scenario,
  transactionsOf,
  writeFiles
} from "../internal/harness.ts"

const outcomeOf = (outcomes: ReadonlyArray<{ readonly childId: string; readonly status: string; readonly driftPaths?: ReadonlyArray<string> }>, id: string) =>
  outcomes.find((o) => o.childId === id)

/**
 * `baseline_drift_refused`: after the children ran, `shared.txt` is edited outside the join;
 * child b (which edited it) ends `baseline_drift` and the outside edit stays, byte-exact.
 *
 * @category constants
 * @since 0.1.0
 */
export const baselineDriftRefused: Scenario = ({ dir, checks }) =>
  Effect.gen(function*() {
    const ws = yield* makeDirectory(path.join(dir, "ws"))
    const outside = "s1\ns2 edited outside\ns3\n"
    yield* writeFiles(ws, { "shared.txt": "s1\ns2\ns3\n", "other/o.txt": "o\n" })
    const plan = planOf([
      editTask("a", ["other"], ["*** Update File: other/o.txt", "@@", "-o", "+O"]),
      editTask("b", ["shared.txt"], ["*** Update File: shared.txt", "@@", " s1", "-s2", "+S2 by b"])
    ], { between: [{ write: { path: "shared.txt", content: outside } }] })
    yield* inWorkspace(ws, Effect.gen(function*() {
      const outcome = yield* runPlan(plan, dir)
      const b = outcomeOf(outcome.run.outcomes, "b")
      checks.equal("child b ends baseline_drift", b?.status ?? "no outcome", "baseline_drift")
      checks.equal("child b names shared.txt as drifted", b?.driftPaths ?? [], ["shared.txt"])
      checks.files("shared.txt keeps the outside edit byte-exact", ws, { "shared.txt": outside })
      checks.equal("child a ends applied", outcomeOf(outcome.run.outcomes, "a")?.status ?? "no outcome", "applied")
      checks.files("child a's file is written byte-exact", ws, { "other/o.txt": "O\n" })
      // The outside edit itself may be recorded as a gap; only the children's transactions count here.
      const joined = transactionsOf(yield* records).filter((t) => t.startsWith("subagent_merge:"))
      checks.equal("history has a record of child a only", joined, [childTransaction(outcome.runId, "a")])
      checks.equal("finish is refused", outcome.finish.ok, false)
    }))
  })

/**
 * `baseline_unverifiable_refused`: child b's changeset was exported from an older `f.txt`
 * (the file was then edited outside forkjoin); child a changes `f.txt` first in the join, so b
 * needs a three-way merge whose base (b's preimage) history never held: b ends
 * `baseline_unverifiable` and writes nothing.
 *
 * @category constants
 * @since 0.1.0
 */
export const baselineUnverifiableRefused: Scenario = ({ dir, checks }) =>
  Effect.gen(function*() {
    const ws = yield* makeDirectory(path.join(dir, "ws"))
    const input = path.join(dir, "input")
    const numbered = (edit: (n: number) => string) => Array.from({ length: 10 }, (_, i) => `${edit(i + 1)}\n`).join("")
    const edited = numbered((n) => (n === 2 ? "f2 edited outside" : `f${n}`))
    const afterA = numbered((n) => (n === 2 ? "f2 edited outside" : n === 5 ? "F5 by a" : `f${n}`))
    yield* writeFiles(ws, { "f.txt": numbered((n) => `f${n}`) })
    yield* inWorkspace(ws, Effect.gen(function*() {
      yield* exportChild(editTask("b", ["f.txt"], ["*** Update File: f.txt", "@@", " f7", "-f8", "+F8 by b"]), input)
      // Outside forkjoin: history never sees the content child b started from.
      yield* writeFiles(ws, { "f.txt": edited })
      const outcome = yield* runPlan(planOf([
        editTask("a", ["f.txt"], ["*** Update File: f.txt", "@@", " f4", "-f5", "+F5 by a"]),
        changesetTask("b", ["f.txt"], "subagents/b/changeset.json")
      ]), input)
      const b = outcomeOf(outcome.run.outcomes, "b")
      checks.equal("child a ends applied", outcomeOf(outcome.run.outcomes, "a")?.status ?? "no outcome", "applied")
      checks.equal("child b ends baseline_unverifiable", b?.status ?? "no outcome", "baseline_unverifiable")
      checks.equal("child b names f.txt", b?.driftPaths ?? [], ["f.txt"])
      checks.files("f.txt holds child a's edit only, byte-exact", ws, { "f.txt": afterA })
      checks.equal("history has a record of child a only", transactionsOf(yield* records), [childTransaction(outcome.runId, "a")])
      checks.equal("finish is refused", outcome.finish.ok, false)
    }))
  })
