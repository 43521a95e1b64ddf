/**
 * Turning a child's plan outcome into its outcome: applying a ready plan as the child's
 * transaction, holding a conflicted child back with its conflict values, and telling how an
 * already-landed transaction landed after a crash.
 */
import { Engine, Grants } from "@forkjoin/engine/Engine"
import * as Fault from "@forkjoin/engine/Fault"
import { HistoryContent } from "@forkjoin/history/HistoryStore"
import type { ChildConflict, ChildPlanOutcome } from "@forkjoin/merge/ChildPlan"
import type { Plan } from "@forkjoin/patch"
import { snapshotOf } from "@forkjoin/patch/Snapshot"
import type { EngineError } from "@forkjoin/schema/EngineError"
import {
  type Changeset,
  type ChildOutcome,
  type ConflictRecord,
  conflictIdOf,
  type MergeRun,
  type MergeRunId,
  type PatchHistoryRecord,
  type TaskId,
  TransactionId
} from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { storeFailure } from "../OrchestratorError.ts"
import type { Planned } from "./inputs.ts"
import type { Refused } from "./landing.ts"
import { asPaths, childThread, type JoinChild, type Joined, JOIN_TURN, now } from "./model.ts"

/** Child transactions this process committed (for the `merge:after-child` fault). */
let childTransactions = 0

/**
 * Applies one child's plan as its own transaction, in the child's thread, linked to the run.
 * Under the engine's lock every path must still land where admission found it, inside the
 * child's `writeScope` (a link swapped in since is `path_outside_scope` or `path_redirected`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const applyChildPlan = (runId: MergeRunId, childId: TaskId, plan: Plan, transactionId: TransactionId, writeScope: ReadonlyArray<string>) =>
  Engine.use((engine) =>
    engine.applyPlan({
      threadId: childThread(runId, childId),
      turnId: JOIN_TURN,
      transactionId,
      // The plan's `before` of every path is the exact live content, checked under the lock.
      grant: Grants.full,
      links: { mergeRunId: runId },
      writeScope,
      plan
    }))

/**
 * The child status of an engine refusal that a link swapped in after admission caused: a path
 * leading out of the scope is `scope_violation`, one leading elsewhere inside it `path_refused`
 * (the join never writes through a link it did not resolve). Others: none.
 */
export const landingRefusal = (e: EngineError): Extract<Refused["status"], "scope_violation" | "path_refused"> | undefined =>
  e.code === "path_outside_scope" ? "scope_violation" : e.code === "path_redirected" ? "path_refused" : undefined

/** Turns a plan outcome into the child's outcome, applying it through the engine when ready. */
export const settle = (run: MergeRun, child: JoinChild, planned: Planned, transactionId: TransactionId) =>
  Effect.gen(function*() {
    const base = { childId: child.id, ...(planned.warnings === undefined ? {} : { warnings: planned.warnings }) } as const
    switch (planned._tag) {
      case "Invalid":
        return { outcome: { ...base, status: "invalid_changeset", reason: planned.reason }, conflicts: [] } satisfies Joined
      case "Unverifiable":
        return { outcome: { ...base, status: "baseline_unverifiable", driftPaths: planned.paths, reason: planned.reason }, conflicts: [] } satisfies Joined
      case "Drift":
        return {
          outcome: { ...base, status: "baseline_drift", driftPaths: planned.paths, reason: `the live ${planned.paths.join(", ")} no longer match what the child started from` },
          conflicts: []
        } satisfies Joined
      case "Noop":
        return { outcome: { ...base, status: "noop" }, conflicts: [] } satisfies Joined
      case "Conflicted":
        return { outcome: { ...base, status: "conflicted_unresolved", conflictPaths: planned.conflicts.map((c) => c.path) }, conflicts: yield* conflictRecords(run, child.id, planned.conflicts) } satisfies Joined
      case "Ready": {
        const applied = yield* applyChildPlan(run.runId, child.id, planned.plan, transactionId, child.writeScope ?? []).pipe(Effect.result)
        if (Result.isSuccess(applied)) {
          childTransactions += 1
          // Crash tests: the transaction is committed, its outcome not yet recorded.
          yield* Fault.afterChild(childTransactions)
        }
        if (Result.isFailure(applied)) {
          const e = applied.failure
          const refused = landingRefusal(e)
          if (refused !== undefined) {
            return { outcome: { ...base, status: refused, reason: `${e.message} Nothing of the child was applied.` }, conflicts: [] } satisfies Joined
          }
          if (e.code === "stale_file") {
            return { outcome: { ...base, status: "baseline_drift", driftPaths: asPaths(e.paths), reason: e.message }, conflicts: [] } satisfies Joined
          }
          const failed = asPaths(e.paths)[0]
          return {
            outcome: { ...base, status: "apply_failed_rolled_back", ...(failed === undefined ? {} : { failedPath: failed }), reason: `${e.code}: ${e.message}` },
            conflicts: []
          } satisfies Joined
        }
        return { outcome: { ...base, ...landed(planned), transactionId }, conflicts: [] } satisfies Joined
      }
    }
  })

/**
 * How a ready plan landed: `auto_merged` with the merged paths, else `applied`. `mergedPaths`
 * (how each was merged) is there when some path was merged by syntax tree; without it, every
 * merged path was merged by lines, as outcomes have always said.
 */
export const landed = (planned: Extract<ChildPlanOutcome, { _tag: "Ready" }>) =>
  planned.autoMerged.length === 0
    ? { status: "applied" } as const
    : {
      status: "auto_merged",
      autoMergedPaths: planned.autoMerged,
      ...(planned.mergedPaths.some((m) => m.method !== "line") ? { mergedPaths: planned.mergedPaths } : {})
    } as const

/**
 * Conflict values as records, their three sides stored in history first so resolving needs no
 * child artifact; `owner` gives each record's id and what it belongs to (a join's run and
 * child, or a rollback's transaction).
 */
export const heldConflictRecords = <C extends Omit<ChildConflict, "moveFrom">>(
  conflicts: ReadonlyArray<C>,
  owner: (c: C) => Pick<ConflictRecord, "conflictId" | "runId" | "childId" | "kind" | "transactionId" | "threadId">
) =>
  Effect.gen(function*() {
    const history = yield* HistoryContent
    const createdAt = yield* now
    const sides = conflicts.flatMap((c) => [c.base, c.ours, c.theirs].filter((s): s is Uint8Array => s !== undefined))
    yield* history.putBlobs(sides).pipe(Effect.mapError(storeFailure("Storing a conflict's sides")))
    return conflicts.map((c): ConflictRecord => ({
      schemaVersion: 1,
      ...owner(c),
      path: c.path,
      reason: c.reason,
      ...(c.base === undefined ? {} : { base: snapshotOf(c.base, 0o644) }),
      ...(c.ours === undefined ? {} : { ours: snapshotOf(c.ours, 0o644) }),
      ...(c.theirs === undefined ? {} : { theirs: snapshotOf(c.theirs, 0o644) }),
      hunks: c.hunks,
      text: c.text,
      status: "open",
      createdAt
    }))
  })

/** A join child's conflicts as records (see `heldConflictRecords`). */
const conflictRecords = (run: MergeRun, childId: TaskId, conflicts: ReadonlyArray<ChildConflict>) =>
  heldConflictRecords(conflicts, (c) => ({ conflictId: conflictIdOf(run.runId, childId, c.path), runId: run.runId, childId }))

/**
 * The outcome of a child whose transaction history already holds (the process died after the
 * engine committed, before the outcome was stored), told from the record: a path the child
 * touched whose recorded content differs from the child's postimage was merged; a child none
 * of whose paths the record names changed nothing.
 */
export const recoveredOutcome = (
  childId: TaskId,
  changeset: Changeset | undefined,
  records: ReadonlyArray<PatchHistoryRecord>,
  transactionId: TransactionId
): ChildOutcome => {
  if (changeset === undefined) return { childId, status: "applied", transactionId }
  const changes = new Map(records.flatMap((r) => r.changes.map((c) => [c.path, c] as const)))
  const touched = changeset.entries.filter((e) => changes.has(e.path))
  if (touched.length === 0) return { childId, status: "noop" }
  const merged = touched.filter((e) => changes.get(e.path)?.after?.hash !== e.postimage?.hash).map((e) => e.path)
  if (merged.length === 0) return { childId, status: "applied", transactionId }
  // How each was merged, as the record says (a record without `merge`: by lines).
  const mergedPaths = merged.map((p) => ({ path: p, ...(changes.get(p)?.merge ?? { method: "line" as const }) }))
  const structured = mergedPaths.some((m) => m.method !== "line")
  return { childId, status: "auto_merged", transactionId, autoMergedPaths: merged, ...(structured ? { mergedPaths } : {}) }
}
