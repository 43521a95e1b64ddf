/**
 * The join's vocabulary shared by its steps: the child as the join sees it, an outcome with
 * its conflicts, when a run is settled, the threads and transaction names of a run, and
 * reading a run or a transaction back.
 */
import { Engine } from "@forkjoin/engine/Engine"
import { HistoryRecords } from "@forkjoin/history/HistoryStore"
import { MergeStore } from "@forkjoin/history/MergeStore"
import { normalizePath } from "@forkjoin/patch/RelativePath"
import {
  type ChildOutcome,
  type ChildOutcomeStatus,
  type ChildRefusal,
  type ChildVerifyResult,
  type ConflictRecord,
  type MergeRunId,
  type MergeRunStatus,
  type RelativePath,
  type TaskId,
  ThreadId,
  TransactionId,
  TurnId
} from "@forkjoin/schema"
import { statusesOf } from "@forkjoin/schema/MergeRun"
import { utcTimestampFromMillis } from "@forkjoin/schema/UtcTimestamp"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import { OrchestratorError, storeFailure } from "../OrchestratorError.ts"
import type { Unread } from "./changesetFile.ts"

/**
 * One child as the join sees it: its task, and where its exported changeset and blobs are
 * (`<namespace>/changeset.json`, `<namespace>/blobs/sha256/<hex>`), or no changeset.
 *
 * @category models
 * @since 0.1.0
 */
export interface JoinChild {
  readonly id: TaskId
  readonly mode: "read_only" | "transactional_write"
  readonly writeScope?: ReadonlyArray<RelativePath>
  /** The changeset as read from its file (untrusted), `undefined` when the child exported none. */
  readonly changeset: unknown
  /** Why no changeset was read (missing, not a regular file, not JSON), when `changeset` is undefined. */
  readonly unread?: Unread
  /** The directory of its blobs (`blobs/sha256/<hex>` below it). */
  readonly blobDirectory: string
  /** Its refused edits (none for a changeset brought from elsewhere); kept on its outcome. */
  readonly refusals?: ReadonlyArray<ChildRefusal>
  /** How its own check (its task's `childVerify`) ended, when one ran; kept on its outcome. */
  readonly childVerify?: ChildVerifyResult
  /** The cluster runner its last attempt ran on, when a cluster ran it; kept on its outcome. */
  readonly ranOn?: string
}

/**
 * A child's outcome and the conflicts it holds back.
 *
 * @category models
 * @since 0.1.0
 */
export interface Joined {
  readonly outcome: ChildOutcome
  readonly conflicts: ReadonlyArray<ConflictRecord>
}

/**
 * The statuses after which a child needs nothing more.
 *
 * @category models
 * @since 0.1.0
 */
export const SETTLED: ReadonlySet<ChildOutcomeStatus> = new Set(statusesOf("landed", "unchanged", "dropped"))

/**
 * The merge status of a run from its outcomes: `blocked` while a child holds open conflicts,
 * `applied` when every child settled, `failed` when none did, `partial` otherwise.
 *
 * @category combinators
 * @since 0.1.0
 */
export const statusOf = (outcomes: ReadonlyArray<ChildOutcome>): MergeRunStatus => {
  if (outcomes.some((o) => o.status === "pending")) return "running"
  if (outcomes.some((o) => o.status === "conflicted_unresolved")) return "blocked"
  const settled = outcomes.filter((o) => SETTLED.has(o.status)).length
  if (settled === outcomes.length) return "applied"
  return settled === 0 ? "failed" : "partial"
}

/** The thread of the run, and of each child below it. */
export const runThread = (runId: MergeRunId): ThreadId => ThreadId.make(runId)

export const childThread = (runId: MergeRunId, childId: TaskId): ThreadId => ThreadId.make(`${runId}/${childId}`)

export const JOIN_TURN = TurnId.make("join")

/**
 * The transaction that applies one child (`subagent_merge:<run-id>/<task-id>`), or the whole
 * atomic join (`subagent_merge:<run-id>`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const transactionOf = (runId: MergeRunId, childId?: TaskId): TransactionId =>
  TransactionId.make(childId === undefined ? `subagent_merge:${runId}` : `subagent_merge:${runId}/${childId}`)

/**
 * The current time as a record timestamp (through `Clock`, so tests control it).
 *
 * @category constructors
 * @since 0.1.0
 */
export const now = Effect.map(Clock.currentTimeMillis, utcTimestampFromMillis)

// Engine error paths are workspace-relative; keep the ones that are valid relative paths.
export const asPaths = (paths: ReadonlyArray<string>): Array<RelativePath> =>
  paths.flatMap((p) => {
    const n = normalizePath(p)
    return Result.isSuccess(n) ? [n.success] : []
  })

/**
 * The run as stored; an unknown id is `unknown_run`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const loadRun = (runId: MergeRunId) =>
  MergeStore.use((store) => store.getRun(runId)).pipe(
    Effect.mapError(storeFailure("Reading the merge run")),
    Effect.flatMap(Option.match({
      onNone: () => Effect.fail(new OrchestratorError({ code: "unknown_run", paths: [], message: `There is no merge run '${runId}' in this workspace's history; 'forkjoin status' lists the runs.` })),
      onSome: Effect.succeed
    }))
  )

/** The paths a transaction's records changed (both ends of a move). */
export const pathsOfTransaction = (transactionId: TransactionId) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const history = yield* HistoryRecords
    const records = yield* history.recordsByTransaction(engine.environmentId, transactionId).pipe(Effect.mapError(storeFailure("Reading a transaction")))
    return records.flatMap((r) => r.changes.flatMap((c) => (c.moveFrom === undefined ? [c.path] : [c.path, c.moveFrom])))
  })
