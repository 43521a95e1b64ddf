/**
 * Rollback of one child (SPEC §6.8): after two children are applied, `rollback_transaction` of
 * the first restores exactly its files, keeps its sibling's, and appends a record linked to the
 * undone transaction (history stays append-only).
 *
 * Owns the scenario's fixtures and expectations, not the rollback.
 */
import * as OrchestratorRollback from "@forkjoin/orchestrator/Rollback"
import { TransactionId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as path from "node:path"
import {
  childTransaction,
  editTask,
  inWorkspace,
  makeDirectory,
  planOf,
  PROBE_THREAD,
  records,
  runPlan,
  type Scenario,
  transactionsOf,
  writeFiles
} from "../internal/harness.ts"

/**
 * `rollback_one_child`: children a (an update and an add) and b are applied; rolling back a's
 * transaction restores a's files byte-exact and leaves b's change in place.
 *
 * @category constants
 * @since 0.1.0
 */
export const rollbackOneChild: Scenario = ({ dir, checks }) =>
  Effect.gen(function*() {
    const ws = yield* makeDirectory(path.join(dir, "ws"))
    yield* writeFiles(ws, { "a/x.txt": "x1\nx2\n", "b/y.txt": "y\n" })
    const plan = planOf([
      editTask("a", ["a"], ["*** Update File: a/x.txt", "@@", "-x1", "+X1", " x2", "*** Add File: a/new.txt", "+new"]),
      editTask("b", ["b"], ["*** Update File: b/y.txt", "@@", "-y", "+Y"])
    ])
    yield* inWorkspace(ws, Effect.gen(function*() {
      const outcome = yield* runPlan(plan, dir)
      checks.equal("both children are applied", outcome.run.outcomes.map((o) => [o.childId, o.status]), [["a", "applied"], ["b", "applied"]])
      const txA = childTransaction(outcome.runId, "a")
      const txB = childTransaction(outcome.runId, "b")
      const record = yield* OrchestratorRollback.rollbackTransaction(TransactionId.make(txA), { threadId: PROBE_THREAD })
      checks.files("child a's files are back byte-exact", ws, { "a/x.txt": "x1\nx2\n", "a/new.txt": undefined })
      checks.files("child b's file is kept", ws, { "b/y.txt": "Y\n" })
      checks.equal("the rollback's record is linked to child a's transaction", [record.transactionId, record.links.rollbackOf ?? "no link"], [`rollback:${txA}`, txA])
      checks.equal("history keeps both children's records and appends the rollback", transactionsOf(yield* records), [txA, txB, `rollback:${txA}`])
    }))
  })
