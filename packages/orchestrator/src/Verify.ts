/**
 * The verified join (a plan's `verify` command): after a child's transaction, or once after an
 * atomic join's one transaction, the command runs in the workspace; exit 0 within the time
 * limit passes, anything else fails and the join rolls that transaction back
 * (`verification_failed_rolled_back`). A rollback that is refused (the command changed the
 * child's files itself) leaves the child `verification_failed`, not settled, listed by
 * `forkjoin status` until its transaction is rolled back. A join resumed after a crash sees a
 * verification's rollback already in history and reports it, rather than the child as applied.
 *
 * The command runs in a process group of its own: at the time limit the whole group is killed,
 * and the outcome is decided when the command itself exits, never by when its output pipes
 * close (a background process it leaves keeps them open; it is ended too). The command's last
 * output lines are kept in the child's artifacts.
 *
 * Owns the command's log and the verification's outcome; running it is `@forkjoin/runtime/Command`
 * (shared with a task's `childVerify`). Does not own the rollback (`Rollback`).
 *
 * @since 0.1.0
 */
import { Engine } from "@forkjoin/engine/Engine"
import * as Fault from "@forkjoin/engine/Fault"
import { HistoryRecords, type StoreError } from "@forkjoin/history/HistoryStore"
import { MergeStore } from "@forkjoin/history/MergeStore"
import {
  type ChildOutcome,
  type EnvironmentId,
  type MergeRun,
  type MergeRunId,
  type TaskId,
  TransactionId,
  type VerifyCommand
} from "@forkjoin/schema"
import * as Command from "@forkjoin/runtime/Command"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"
import { type Joined, runThread, SETTLED, transactionOf } from "./internal/model.ts"
import { storeFailure } from "./OrchestratorError.ts"
import * as Rollback from "./Rollback.ts"

/**
 * The outcome of one verification: passed or not, a one-line summary and where the log is.
 *
 * @category models
 * @since 0.1.0
 */
export interface VerifyResult {
  readonly ok: boolean
  readonly summary: string
  readonly log: string
}

/**
 * Where a child's verification log goes: `<run>/subagents/<task-id>/verify.log`; an atomic
 * join's one verification (no `childId`) logs to `<run>/verify.log`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const logFile = (runDirectory: string, childId?: TaskId): string =>
  childId === undefined ? path.join(runDirectory, "verify.log") : path.join(runDirectory, "subagents", childId, "verify.log")

/**
 * Runs `verify.command` in `cwd` (no shell) in a process group of its own, kills the group at
 * the time limit, and decides when the command exits (then ends what it left running); writes
 * the last output lines to `log`. Never fails: a command that cannot start is a failed
 * verification.
 *
 * @category constructors
 * @since 0.1.0
 */
export const run = (verify: VerifyCommand, cwd: string, log: string): Effect.Effect<VerifyResult> =>
  Command.run({ argv: verify.command, cwd, timeoutMs: verify.timeoutMs }).pipe(
    Effect.map((result) => {
      const summary = result._tag === "passed"
        ? "verification passed"
        : result._tag === "timed_out"
        ? `verification timed out after ${verify.timeoutMs} ms`
        : result._tag === "not_started"
        ? `verification command '${verify.command[0]}' could not start (${result.error.message})`
        : `verification failed (${Command.describeEnd(result)})`
      try {
        fs.mkdirSync(path.dirname(log), { recursive: true })
        fs.writeFileSync(log, [`$ ${verify.command.join(" ")}`, ...result.tail, `# ${summary}`].join("\n") + "\n")
      } catch {
        // The log is a convenience; the outcome does not depend on it.
      }
      return { ok: result._tag === "passed", summary, log }
    })
  )

/** The transaction `Rollback` writes to undo `transactionId`. */
const rollbackTransactionOf = (transactionId: TransactionId): TransactionId => TransactionId.make(`rollback:${transactionId}`)

/** Whether history holds an applied rollback of `transactionId`. */
const rolledBack = (environmentId: EnvironmentId, transactionId: TransactionId): Effect.Effect<boolean, StoreError, HistoryRecords> =>
  HistoryRecords.use((history) => history.recordsByTransaction(environmentId, rollbackTransactionOf(transactionId))).pipe(
    Effect.map((records) => records.some((r) => r.outcome === "applied"))
  )

/** Verification rollbacks this process applied (for the `verify:after-rollback` fault). */
let verificationRollbacks = 0

/**
 * The outcomes of `landed` (children applied by `transactionId`) after `check` decided: as
 * they were when it passed; else the transaction is rolled back, and each is
 * `verification_failed_rolled_back`, or `verification_failed` (still applied) when the
 * rollback is refused. A rollback already in history (the join crashed right after it) is
 * reported without running the command again.
 */
const verified = (
  mergeRun: MergeRun,
  verify: VerifyCommand,
  transactionId: TransactionId,
  landed: ReadonlyArray<ChildOutcome>,
  log: string,
  whose: string
) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const rolledBackAs = (reason: string) =>
      landed.map((o): ChildOutcome => ({ childId: o.childId, status: "verification_failed_rolled_back", transactionId, reason }))
    if (yield* rolledBack(engine.environmentId, transactionId).pipe(Effect.mapError(storeFailure("Reading a transaction")))) {
      return rolledBackAs(`the verification failed and ${whose} transaction was rolled back (log: ${log})`)
    }
    const result = yield* run(verify, engine.root, log)
    if (result.ok) return landed
    // Strict: an automatic undo never holds conflicts; a drifted workspace is left to the user.
    const undone = yield* Rollback.rollbackTransaction(transactionId, { threadId: runThread(mergeRun.runId), strict: true }).pipe(Effect.result)
    if (Result.isSuccess(undone)) {
      verificationRollbacks += 1
      // Crash tests: the rollback is committed, the outcome not yet recorded.
      yield* Fault.afterVerifyRollback(verificationRollbacks)
      return rolledBackAs(`${result.summary}; ${whose} transaction was rolled back (log: ${result.log})`)
    }
    const reason = `${result.summary} (log: ${result.log}), and rolling ${whose} transaction back was refused ` +
      `(${undone.failure.code}): ${undone.failure.message} The change is still in the workspace: put the files right, then ` +
      `'forkjoin rollback ${transactionId}' ('forkjoin status' lists it until then).`
    return landed.map((o): ChildOutcome => ({ ...o, status: "verification_failed", transactionId, reason }))
  })

/**
 * Verifies one child just joined (`outcome` settled with a transaction): its outcome as it
 * stands when the command passes, else after rolling its transaction back.
 *
 * @category constructors
 * @since 0.1.0
 */
export const child = (mergeRun: MergeRun, verify: VerifyCommand, outcome: ChildOutcome, transactionId: TransactionId) =>
  Effect.map(
    verified(mergeRun, verify, transactionId, [outcome], logFile(mergeRun.runDirectory, outcome.childId), "the child's"),
    (outcomes) => outcomes[0] ?? outcome
  )

/**
 * Verifies an atomic join once, after its one transaction: a failure rolls the whole
 * transaction back and every child it applied is `verification_failed_rolled_back`. A resumed
 * join whose verification had already passed (some outcomes recorded) does not run it again.
 *
 * @category constructors
 * @since 0.1.0
 */
export const atomic = (mergeRun: MergeRun, verify: VerifyCommand, joined: ReadonlyArray<Joined>) =>
  Effect.gen(function*() {
    const transactionId = transactionOf(mergeRun.runId)
    const landed = joined.filter((j) => j.outcome.transactionId === transactionId && SETTLED.has(j.outcome.status)).map((j) => j.outcome)
    if (landed.length === 0) return joined
    const passedBefore = mergeRun.outcomes.some((o) => o.transactionId === transactionId && SETTLED.has(o.status))
    const engine = yield* Engine
    const undoneBefore = yield* rolledBack(engine.environmentId, transactionId).pipe(Effect.mapError(storeFailure("Reading a transaction")))
    if (passedBefore && !undoneBefore) return joined
    const outcomes = yield* verified(mergeRun, verify, transactionId, landed, logFile(mergeRun.runDirectory), "the atomic join's")
    const byChild = new Map(outcomes.map((o) => [o.childId, o]))
    return joined.map((j): Joined => ({ ...j, outcome: byChild.get(j.outcome.childId) ?? j.outcome }))
  })

/**
 * A child whose verification failed while its change stayed applied, and the transaction that
 * undoes it.
 *
 * @category models
 * @since 0.1.0
 */
export interface VerificationFailure {
  readonly runId: MergeRunId
  readonly childId: TaskId
  readonly transactionId: TransactionId
}

/**
 * The `verification_failed` children of the environment's runs whose transaction no rollback
 * has undone yet, newest run first: what `forkjoin status` lists.
 *
 * @category constructors
 * @since 0.1.0
 */
export const failures = (environmentId: EnvironmentId): Effect.Effect<ReadonlyArray<VerificationFailure>, StoreError, MergeStore | HistoryRecords> =>
  Effect.gen(function*() {
    // Such a child leaves its run partial or failed: the other runs need not be read.
    const runs = yield* MergeStore.use((store) =>
      Effect.map(
        Effect.all([store.listRuns({ environmentId, status: "partial" }), store.listRuns({ environmentId, status: "failed" })]),
        ([partial, failed]) => [...partial, ...failed].sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0))
      )
    )
    const out: Array<VerificationFailure> = []
    for (const r of runs) {
      for (const o of r.outcomes) {
        if (o.status !== "verification_failed" || o.transactionId === undefined) continue
        if (!(yield* rolledBack(environmentId, o.transactionId))) out.push({ runId: r.runId, childId: o.childId, transactionId: o.transactionId })
      }
    }
    return out
  })
