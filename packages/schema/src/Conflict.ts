/**
 * Conflicts as values (SPEC §6.7): what the join holds back instead of writing. A
 * `ConflictRecord` names the merge run, the child and the path, keeps the three sides as
 * snapshots (absent side = no file), the diff3 hunks that overlap and the conflict text a
 * person reads, and whether (and how) it was resolved. Persisted in patch history
 * (schemaVersion 1); its id is deterministic: `<run-id>/<task-id>:<path>`. A rollback that does
 * not merge cleanly holds its paths the same way (`kind: "rollback"`), with the id
 * `rollback:<transaction-id>:<path>`.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { ConflictId, MergeRunId, RelativePath, TaskId, ThreadId, TransactionId } from "./Ids.ts"
import { Snapshot } from "./Snapshot.ts"
import { UtcTimestamp } from "./UtcTimestamp.ts"

const LineNumber = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

/**
 * One overlapping region: where it starts in the base (1-based line) and each side's lines
 * there, every line with its own ending (`"a\r\n"`, or no ending on a last line).
 *
 * @category models
 * @since 0.1.0
 */
export const ConflictHunk = Schema.Struct({
  baseStart: LineNumber,
  base: Schema.Array(Schema.String),
  ours: Schema.Array(Schema.String),
  theirs: Schema.Array(Schema.String)
})

/**
 * @category models
 * @since 0.1.0
 */
export type ConflictHunk = typeof ConflictHunk.Type

/**
 * Why the sides cannot be merged automatically: text hunks that overlap; binary content
 * changed on both sides; one side deleted what the other edited; both added the path with
 * different content; a move whose source the other side edited; a clean merge that names a
 * key or member twice (`duplicate_member`) or no longer parses (`syntax_broken`).
 *
 * @category models
 * @since 0.1.0
 */
export const ConflictReason = Schema.Literals([
  "overlapping_edits",
  "binary",
  "delete_vs_edit",
  "edit_vs_delete",
  "add_vs_add",
  "move_vs_edit",
  "duplicate_member",
  "syntax_broken"
])

/**
 * @category models
 * @since 0.1.0
 */
export type ConflictReason = typeof ConflictReason.Type

/**
 * How a conflict was closed: `apply` (the child's side of the conflicting hunks onto the live
 * file, or its whole version for a conflict without hunks; re-verified), `discard` (keep the
 * live file), `content` (text the parent supplied). `transactionId` is the engine
 * transaction that wrote it (none for `discard`).
 *
 * @category models
 * @since 0.1.0
 */
export const ConflictResolution = Schema.Struct({
  kind: Schema.Literals(["apply", "discard", "content"]),
  transactionId: Schema.optionalKey(TransactionId),
  /** A rollback's `content`, kept in history until the whole rollback is applied. */
  content: Schema.optionalKey(Snapshot),
  resolvedAt: UtcTimestamp
})

/**
 * @category models
 * @since 0.1.0
 */
export type ConflictResolution = typeof ConflictResolution.Type

/**
 * What a conflict holds back: a join's change of one child (`kind` absent or `"join"`), or a
 * path of a rollback that did not merge (`"rollback"`).
 *
 * @category models
 * @since 0.1.0
 */
export const ConflictKind = Schema.Literals(["join", "rollback"])

/**
 * @category models
 * @since 0.1.0
 */
export type ConflictKind = typeof ConflictKind.Type

/**
 * A held-back change at one path. A join's (`kind` absent or `"join"`, the default, so records
 * stored before rollbacks held conflicts decode unchanged) names `runId` and `childId`: `base`
 * is the child's preimage, `ours` the live file when the join reached it, `theirs` the child's
 * postimage. A rollback's (`kind: "rollback"`) names instead `transactionId`, the transaction
 * being undone, and `threadId`, who asked: `base` is what the transaction left at the path,
 * `ours` the live file when the rollback was asked for, `theirs` what the path held before the
 * transaction. An absent side means no file. `hunks` is empty for non-text conflicts; `text` is
 * the rendered conflict (markers for text, a one-line explanation otherwise).
 *
 * @category models
 * @since 0.1.0
 */
export const ConflictRecord = Schema.Struct({
  schemaVersion: Schema.Literal(1),
  conflictId: ConflictId,
  runId: Schema.optionalKey(MergeRunId),
  childId: Schema.optionalKey(TaskId),
  path: RelativePath,
  reason: ConflictReason,
  base: Schema.optionalKey(Snapshot),
  ours: Schema.optionalKey(Snapshot),
  theirs: Schema.optionalKey(Snapshot),
  hunks: Schema.Array(ConflictHunk),
  text: Schema.String,
  status: Schema.Literals(["open", "resolved"]),
  resolution: Schema.optionalKey(ConflictResolution),
  createdAt: UtcTimestamp,
  kind: Schema.optionalKey(ConflictKind),
  transactionId: Schema.optionalKey(TransactionId),
  threadId: Schema.optionalKey(ThreadId)
}).check(
  Schema.makeFilter((c) => {
    if (c.kind === "rollback") {
      if (c.transactionId === undefined || c.threadId === undefined || c.runId !== undefined || c.childId !== undefined) {
        return { path: ["kind"], issue: "a rollback's conflict names transactionId and threadId, and no runId or childId" }
      }
      if (c.conflictId !== `rollback:${c.transactionId}:${c.path}`) {
        return {
          path: ["conflictId"],
          issue: `a rollback's conflict id is rollback:<transaction-id>:<path>, here ${JSON.stringify(`rollback:${c.transactionId}:${c.path}`)}`
        }
      }
    } else {
      if (c.runId === undefined || c.childId === undefined || c.transactionId !== undefined || c.threadId !== undefined) {
        return { path: ["kind"], issue: "a join's conflict names runId and childId, and no transactionId or threadId" }
      }
      if (c.conflictId !== `${c.runId}/${c.childId}:${c.path}`) {
        return { path: ["conflictId"], issue: `a conflict id is <run-id>/<task-id>:<path>, here ${JSON.stringify(`${c.runId}/${c.childId}:${c.path}`)}` }
      }
    }
    if ((c.status === "resolved") !== (c.resolution !== undefined)) {
      return { path: ["resolution"], issue: "a resolved conflict has a resolution and an open one has none" }
    }
    return undefined
  }, { expected: "a consistent conflict record" })
)

/**
 * @category models
 * @since 0.1.0
 */
export type ConflictRecord = typeof ConflictRecord.Type

/**
 * The id of the conflict of `childId` at `path` in merge run `runId`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const conflictIdOf = (runId: MergeRunId, childId: TaskId, path: RelativePath): ConflictId =>
  ConflictId.make(`${runId}/${childId}:${path}`)

/**
 * The id of the held conflict at `path` of the rollback of `transactionId`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const rollbackConflictIdOf = (transactionId: TransactionId, path: RelativePath): ConflictId =>
  ConflictId.make(`rollback:${transactionId}:${path}`)

/**
 * Whose a conflict is: a join's child (`runId`, `childId`) or a rollback (`transactionId`,
 * `threadId`, who asked for it).
 *
 * @category models
 * @since 0.1.0
 */
export type ConflictOwner =
  | { readonly kind: "join"; readonly runId: MergeRunId; readonly childId: TaskId }
  | { readonly kind: "rollback"; readonly transactionId: TransactionId; readonly threadId: ThreadId }

/**
 * The owner of a conflict the schema accepted (it guarantees the fields of its kind); a value
 * built without the schema and lacking them is a defect.
 *
 * @category constructors
 * @since 0.1.0
 */
export const ownerOf = (c: ConflictRecord): ConflictOwner => {
  if (c.kind === "rollback") {
    if (c.transactionId !== undefined && c.threadId !== undefined) return { kind: "rollback", transactionId: c.transactionId, threadId: c.threadId }
  } else if (c.runId !== undefined && c.childId !== undefined) return { kind: "join", runId: c.runId, childId: c.childId }
  throw new Error(`conflict ${c.conflictId} lacks the fields of its kind`)
}
