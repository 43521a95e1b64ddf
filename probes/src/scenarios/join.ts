/**
 * The join's ordinary paths (SPEC §6.6–6.7): disjoint children applied one transaction each;
 * two children editing one file in different places merged by hunk; overlapping edits held
 * back as a conflict (finish refused) and then resolved with the parent's text. Each runs a
 * scripted plan through the real orchestrator in its own workspace and checks child statuses,
 * bytes on disk and history records.
 *
 * Owns the scenarios' fixtures and expectations, not the join.
 */
import * as Conflicts from "@forkjoin/orchestrator/Conflicts"
import * as Join from "@forkjoin/orchestrator/Join"
import { sha256 } from "@forkjoin/patch/Bytes"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as path from "node:path"
import {
  changedPaths,
  childTransaction,
  editTask,
  inWorkspace,
  makeDirectory,
  numberedLines,
  planOf,
  records,
  runPlan,
  type Scenario,
  transactionsOf,
  writeFiles
} from "../internal/harness.ts"

const statusOf = (outcomes: ReadonlyArray<{ readonly childId: string; readonly status: string }>, id: string) =>
  outcomes.find((o) => o.childId === id)?.status ?? "no outcome"

/**
 * `disjoint_children_applied`: two children with disjoint scopes (an update, an add and a
 * delete; an update) are both applied, each as its own transaction in its own thread.
 *
 * @category scenarios
 * @since 0.1.0
 */
export const disjointChildrenApplied: Scenario = ({ dir, checks }) =>
  Effect.gen(function*() {
    const ws = yield* makeDirectory(path.join(dir, "ws"))
    yield* writeFiles(ws, { "a/x.txt": "x1\nx2\n", "a/old.txt": "old\n", "b/y.txt": "y1\ny2\n", "shared.txt": "shared\n" })
    const plan = planOf([
      editTask("a", ["a"], ["*** Update File: a/x.txt", "@@", " x1", "-x2", "+X2", "*** Add File: a/new.txt", "+new", "*** Delete File: a/old.txt"]),
      editTask("b", ["b"], ["*** Update File: b/y.txt", "@@", "-y1", "+Y1"])
    ])
    yield* inWorkspace(ws, Effect.gen(function*() {
      const outcome = yield* runPlan(plan, dir)
      const outcomes = outcome.run.outcomes
      checks.equal("child a ends applied", statusOf(outcomes, "a"), "applied")
      checks.equal("child b ends applied", statusOf(outcomes, "b"), "applied")
      checks.equal("the join ends applied", outcome.run.status, "applied")
      checks.equal("finish is accepted", outcome.finish.ok, true)
      checks.files("child a's files are written byte-exact", ws, { "a/x.txt": "x1\nX2\n", "a/new.txt": "new\n", "a/old.txt": undefined })
      checks.files("child b's files are written byte-exact", ws, { "b/y.txt": "Y1\ny2\n" })
      checks.files("shared.txt unchanged", ws, { "shared.txt": "shared\n" })
      const rs = yield* records
      const txA = childTransaction(outcome.runId, "a")
      const txB = childTransaction(outcome.runId, "b")
      checks.equal("history has one record per applied child", transactionsOf(rs), [txA, txB])
      checks.equal(
        "each record is in its child's thread and linked to the run",
        rs.map((r) => [r.threadId, r.links.mergeRunId ?? "no link", r.outcome]),
        [[`${outcome.runId}/a`, outcome.runId, "applied"], [`${outcome.runId}/b`, outcome.runId, "applied"]]
      )
      checks.equal("each record changes only its child's paths", rs.map(changedPaths), [["a/new.txt", "a/old.txt", "a/x.txt"], ["b/y.txt"]])
    }))
  })

/**
 * `same_file_auto_merged`: two children edit one file far apart; the second is merged onto
 * the first by diff3 (`auto_merged`), byte-exact.
 *
 * @category scenarios
 * @since 0.1.0
 */
export const sameFileAutoMerged: Scenario = ({ dir, checks }) =>
  Effect.gen(function*() {
    const ws = yield* makeDirectory(path.join(dir, "ws"))
    const original = numberedLines("m", 12)
    yield* writeFiles(ws, { "m.txt": original })
    const plan = planOf([
      editTask("top", ["m.txt"], ["*** Update File: m.txt", "@@", " m1", "-m2", "+M2 by top"]),
      editTask("bottom", ["m.txt"], ["*** Update File: m.txt", "@@", "-m11", "+M11 by bottom", " m12"])
    ])
    yield* inWorkspace(ws, Effect.gen(function*() {
      const outcome = yield* runPlan(plan, dir)
      const outcomes = outcome.run.outcomes
      checks.equal("child top ends applied", statusOf(outcomes, "top"), "applied")
      checks.equal("child bottom ends auto_merged", statusOf(outcomes, "bottom"), "auto_merged")
      checks.equal("child bottom names m.txt as auto-merged", outcomes.find((o) => o.childId === "bottom")?.autoMergedPaths ?? [], ["m.txt"])
      checks.files("m.txt holds both edits byte-exact", ws, { "m.txt": original.replace("m2\n", "M2 by top\n").replace("m11\n", "M11 by bottom\n") })
      checks.equal("no conflict is recorded", outcome.conflicts.length, 0)
      checks.equal("the join ends applied", outcome.run.status, "applied")
      checks.equal("finish is accepted", outcome.finish.ok, true)
      checks.equal("history has one record per applied child", transactionsOf(yield* records), [
        childTransaction(outcome.runId, "top"),
        childTransaction(outcome.runId, "bottom")
      ])
    }))
  })

/**
 * `overlap_conflict_resolved`: two children change the same line; the second is held back
 * unapplied as a conflict value and finish is refused; resolving it with the parent's text
 * applies that text and the rest of the child, and finish is then accepted.
 *
 * @category scenarios
 * @since 0.1.0
 */
export const overlapConflictResolved: Scenario = ({ dir, checks }) =>
  Effect.gen(function*() {
    const ws = yield* makeDirectory(path.join(dir, "ws"))
    const original = "c1\nc2\nc3\nc4\nc5\n"
    const ours = "c1\nc2\nC3 by a\nc4\nc5\n"
    const theirs = "c1\nc2\nC3 by b\nc4\nc5\n"
    const merged = "c1\nc2\nC3 by a and b\nc4\nc5\n"
    yield* writeFiles(ws, { "c.txt": original })
    const plan = planOf([
      editTask("a", ["c.txt"], ["*** Update File: c.txt", "@@", " c2", "-c3", "+C3 by a"]),
      editTask("b", ["c.txt", "notes"], ["*** Update File: c.txt", "@@", " c2", "-c3", "+C3 by b", "*** Add File: notes/b.txt", "+from b"])
    ])
    yield* inWorkspace(ws, Effect.gen(function*() {
      const outcome = yield* runPlan(plan, dir)
      const outcomes = outcome.run.outcomes
      const txA = childTransaction(outcome.runId, "a")
      const txB = childTransaction(outcome.runId, "b")
      checks.equal("child a ends applied", statusOf(outcomes, "a"), "applied")
      checks.equal("child b ends conflicted_unresolved", statusOf(outcomes, "b"), "conflicted_unresolved")
      checks.equal("child b's conflict is at c.txt", outcomes.find((o) => o.childId === "b")?.conflictPaths ?? [], ["c.txt"])
      checks.files("nothing of child b is applied", ws, { "c.txt": ours, "notes/b.txt": undefined })
      checks.equal("the join ends blocked", outcome.run.status, "blocked")
      checks.equal("finish is refused with unresolved_subagent_conflicts", outcome.finish.ok ? "accepted" : outcome.finish.code, "unresolved_subagent_conflicts")
      const open = outcome.conflicts.filter((c) => c.status === "open")
      checks.equal("one open conflict is recorded for child b at c.txt", open.map((c) => [c.childId, c.path]), [["b", "c.txt"]])
      checks.equal(
        "the conflict keeps base, ours and theirs",
        open.map((c) => [c.base?.hash, c.ours?.hash, c.theirs?.hash]),
        [[sha256(original), sha256(ours), sha256(theirs)]]
      )
      checks.equal("history has no record of child b while it is held back", transactionsOf(yield* records), [txA])
      const conflict = open[0]
      if (conflict === undefined) return
      const resolved = yield* Conflicts.resolve(conflict.conflictId, { kind: "content", bytes: new TextEncoder().encode(merged) })
      checks.equal("child b ends resolved", resolved.outcome?.status ?? "still waiting", "resolved")
      checks.files("the parent's text and the rest of child b are applied byte-exact", ws, { "c.txt": merged, "notes/b.txt": "from b\n" })
      checks.equal("the conflict is closed", (yield* Conflicts.list({ runId: outcome.runId, status: "open" })).length, 0)
      const finished = yield* Conflicts.finish(outcome.runId).pipe(Effect.result)
      checks.that("finish is accepted after the resolution", Result.isSuccess(finished), () => (Result.isFailure(finished) ? finished.failure.message : ""))
      checks.equal("the join ends applied after the resolution", (yield* Join.loadRun(outcome.runId)).status, "applied")
      checks.equal("history records the resolution, then the rest of child b", transactionsOf(yield* records), [
        txA,
        `conflict_resolution:${conflict.conflictId}`,
        txB
      ])
    }))
  })
