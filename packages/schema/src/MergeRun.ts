/**
 * The join's records (SPEC §6.5, §6.6): the merge plan computed from what children actually
 * touched, each child's outcome, and the merge run that ties them together. The run and the
 * outcomes are durable (schemaVersion 2; 1 before outcomes listed refusals) so a join
 * interrupted by a crash resumes and applies every child at most once.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { GateDecision } from "./Autonomy.ts"
import { EnvironmentId, MergeRunId, RelativePath, TaskId, ThreadId, TransactionId } from "./Ids.ts"
import { ChangeMerge, RecordWarning } from "./PatchHistoryRecord.ts"
import { UtcTimestamp } from "./UtcTimestamp.ts"

/**
 * Which children the join must apply and where their actual changes overlap (paths two or
 * more children touched, from the changesets, not from declared scopes).
 *
 * @category models
 * @since 0.1.0
 */
export const MergePlan = Schema.Struct({
  strategy: Schema.Literals(["read_only", "transactional_parent_merge"]),
  requiresParentMerge: Schema.Boolean,
  readOnlyResultIds: Schema.Array(TaskId),
  mutatingResultIds: Schema.Array(TaskId),
  changesetResultIds: Schema.Array(TaskId),
  missingChangesetResultIds: Schema.Array(TaskId),
  writeScopes: Schema.Record(Schema.String, Schema.Array(RelativePath)),
  overlaps: Schema.Array(Schema.Struct({ path: RelativePath, resultIds: Schema.Array(TaskId) }))
})

/**
 * @category models
 * @since 0.1.0
 */
export type MergePlan = typeof MergePlan.Type

/**
 * What the join did with one child. `pending` until the join reaches it. `verification_failed`:
 * the plan's verification failed and its rollback was refused, so the change is still applied.
 * `path_refused`: a path it writes is one the workspace's safety rules refuse (a denied name
 * such as `.git`, a link leading out or that does not resolve), so nothing of it was applied.
 *
 * @category models
 * @since 0.1.0
 */
export const ChildOutcomeStatus = Schema.Literals([
  "pending",
  "applied",
  "auto_merged",
  "noop",
  "baseline_drift",
  "baseline_unverifiable",
  "invalid_changeset_path",
  "path_refused",
  "scope_violation",
  "apply_failed_rolled_back",
  "verification_failed_rolled_back",
  "verification_failed",
  "conflicted_unresolved",
  "missing_changeset",
  "invalid_changeset",
  "discarded",
  "resolved"
])

/**
 * @category models
 * @since 0.1.0
 */
export type ChildOutcomeStatus = typeof ChildOutcomeStatus.Type

/**
 * How a child's outcome stands, for every reader (the join, the command line, the page):
 * `landed` (its change is in the workspace), `unchanged` (it had nothing to apply), `dropped`
 * (its conflicts were discarded: nothing more to do, nothing landed), `held` (it waits on
 * something: the join, a conflict to resolve, a baseline or changeset to fix) or `failed`.
 *
 * @category models
 * @since 0.1.0
 */
export const ChildOutcomeClass = Schema.Literals(["landed", "unchanged", "dropped", "held", "failed"])

/**
 * @category models
 * @since 0.1.0
 */
export type ChildOutcomeClass = typeof ChildOutcomeClass.Type

// Exhaustive: a new status fails the typecheck until it is classified here.
const CLASSES: { readonly [S in ChildOutcomeStatus]: ChildOutcomeClass } = {
  pending: "held",
  applied: "landed",
  auto_merged: "landed",
  noop: "unchanged",
  baseline_drift: "held",
  baseline_unverifiable: "held",
  invalid_changeset_path: "failed",
  path_refused: "failed",
  scope_violation: "failed",
  apply_failed_rolled_back: "failed",
  verification_failed_rolled_back: "failed",
  verification_failed: "failed",
  conflicted_unresolved: "held",
  missing_changeset: "held",
  invalid_changeset: "failed",
  discarded: "dropped",
  resolved: "landed"
}

/**
 * The class of a child outcome's status.
 *
 * @category combinators
 * @since 0.1.0
 */
export const classOf = (status: ChildOutcomeStatus): ChildOutcomeClass => CLASSES[status]

/**
 * The statuses of `classes`, in the schema's order.
 *
 * @category combinators
 * @since 0.1.0
 */
export const statusesOf = (...classes: ReadonlyArray<ChildOutcomeClass>): ReadonlyArray<ChildOutcomeStatus> =>
  ChildOutcomeStatus.literals.filter((status) => classes.includes(CLASSES[status]))

/**
 * Whether a child with this status needs nothing more: it landed, had nothing to apply, or
 * was discarded.
 *
 * @category combinators
 * @since 0.1.0
 */
export const isSettled = (status: ChildOutcomeStatus): boolean => {
  const c = CLASSES[status]
  return c === "landed" || c === "unchanged" || c === "dropped"
}

/**
 * One action of a child that was refused: its 1-based `step` in the child's trace
 * (`trace.json`), the `tool` it called, the `path` refused (as the child wrote it; absent when
 * the refusal names none) and the refusal's stable `code`.
 *
 * @category models
 * @since 0.1.0
 */
export const ChildRefusal = Schema.Struct({
  step: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  tool: Schema.String,
  path: Schema.optionalKey(Schema.String),
  code: Schema.String
})

/**
 * @category models
 * @since 0.1.0
 */
export type ChildRefusal = typeof ChildRefusal.Type

/**
 * A path of a child merged with an earlier sibling's change, and how (`ChangeMerge`).
 *
 * @category models
 * @since 0.1.0
 */
export const MergedPath = Schema.Struct({
  path: RelativePath,
  ...ChangeMerge.fields
})

/**
 * @category models
 * @since 0.1.0
 */
export type MergedPath = typeof MergedPath.Type

/**
 * How a child's own check (its task's `childVerify`) ended on its last attempt: `passed`,
 * `failed` (a non-zero exit or a signal), `timed_out`, `not_started` (the command could not be
 * spawned, or its throwaway copy could not be made) or `baseline_changed` (the workspace no
 * longer holds the files the child started from, so its view could not be rebuilt). `summary`
 * says what to do; `output` holds the command's last lines.
 *
 * @category models
 * @since 0.1.0
 */
export const ChildVerifyResult = Schema.Struct({
  status: Schema.Literals(["passed", "failed", "timed_out", "not_started", "baseline_changed"]),
  summary: Schema.String,
  /** The attempt this check ran after (1-based). */
  attempt: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  output: Schema.Array(Schema.String)
})

/**
 * @category models
 * @since 0.1.0
 */
export type ChildVerifyResult = typeof ChildVerifyResult.Type

/**
 * One child's outcome in a merge run: the transaction that applied it, the paths held back
 * as conflicts, the paths merged with a sibling's change (`autoMergedPaths`; `mergedPaths` says
 * how each was merged, and is there when some was merged by syntax tree: without it every one
 * was merged by lines), the path whose write failed, or a reason (what went wrong, what to
 * do), the child's refused edits (`refusals`: a refusal for its scope or policy makes it
 * `scope_violation`; others, such as one it retried past, are listed with its own status), and
 * `warnings` about how it was merged (a grammar that could not be loaded, so a line merge), and
 * `childVerify`, how the child's own check ended (optional: older runs and tasks without one).
 *
 * @category models
 * @since 0.1.0
 */
export const ChildOutcome = Schema.Struct({
  childId: TaskId,
  status: ChildOutcomeStatus,
  transactionId: Schema.optionalKey(TransactionId),
  conflictPaths: Schema.optionalKey(Schema.Array(RelativePath)),
  autoMergedPaths: Schema.optionalKey(Schema.Array(RelativePath)),
  mergedPaths: Schema.optionalKey(Schema.Array(MergedPath)),
  driftPaths: Schema.optionalKey(Schema.Array(RelativePath)),
  failedPath: Schema.optionalKey(RelativePath),
  reason: Schema.optionalKey(Schema.String),
  refusals: Schema.optionalKey(Schema.Array(ChildRefusal)),
  warnings: Schema.optionalKey(Schema.Array(RecordWarning)),
  childVerify: Schema.optionalKey(ChildVerifyResult),
  /** The cluster runner (`host:port`) its last attempt ran on, when a cluster ran it. */
  ranOn: Schema.optionalKey(Schema.String)
})

/**
 * @category models
 * @since 0.1.0
 */
export type ChildOutcome = typeof ChildOutcome.Type

/**
 * The merge status: every child landed (`applied`), some did (`partial`), none did
 * (`failed`), or open conflicts hold the run (`blocked`); `running` while the join works or
 * after it was interrupted (then `forkjoin run --resume` finishes it).
 *
 * @category models
 * @since 0.1.0
 */
export const MergeRunStatus = Schema.Literals(["running", "applied", "partial", "failed", "blocked"])

/**
 * @category models
 * @since 0.1.0
 */
export type MergeRunStatus = typeof MergeRunStatus.Type

/**
 * A check command (argv, no shell) and its time limit: a plan's optional `verify`, run in the
 * workspace after each child's transaction, and a task's `childVerify`, run in a throwaway copy.
 *
 * @category models
 * @since 0.1.0
 */
export const VerifyCommand = Schema.Struct({
  command: Schema.NonEmptyArray(Schema.String),
  timeoutMs: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 3_600_000 }))
})

/**
 * @category models
 * @since 0.1.0
 */
export type VerifyCommand = typeof VerifyCommand.Type

/**
 * One join, durable: its thread (below the caller's), where its children's changesets are
 * (`runDirectory`), the children in task order with their outcomes, the options that a
 * resumed join must honour, and the gate decision that admitted it (a `bold` skip stays on record).
 *
 * @category models
 * @since 0.1.0
 */
export const MergeRun = Schema.Struct({
  /** 2 since outcomes list refusals; runs recorded as 1 read the same, without them. */
  schemaVersion: Schema.Literals([1, 2]),
  runId: MergeRunId,
  environmentId: EnvironmentId,
  threadId: ThreadId,
  callerThreadId: ThreadId,
  runDirectory: Schema.String,
  atomic: Schema.Boolean,
  verify: Schema.optionalKey(VerifyCommand),
  /** The promotion gate's decision that let the mutating children run (absent for exempt scratch runs and older runs). */
  gate: Schema.optionalKey(GateDecision),
  status: MergeRunStatus,
  mergePlan: MergePlan,
  outcomes: Schema.Array(ChildOutcome),
  createdAt: UtcTimestamp,
  updatedAt: UtcTimestamp
})

/**
 * @category models
 * @since 0.1.0
 */
export type MergeRun = typeof MergeRun.Type
