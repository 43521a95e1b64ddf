/**
 * The session's actions as `effect/ai` tools: each with a description and its parameters as a
 * Schema, whose JSON Schema is what a model (or an MCP client) sees. The session actions
 * (`read_file`, `list_dir`, `apply_patch`, batches, `finish`) keep the argument schemas of
 * `@forkjoin/runtime/Action`; the parent's orchestration tools (`run_subagents`,
 * `resolve_conflict`, `rollback_transaction`, the history views) get theirs here.
 *
 * Owns the tool surface. Does not own what a tool does (the session, `Parent`, `McpTools`).
 *
 * @since 0.1.0
 */
import { ActionArguments } from "@forkjoin/runtime/Action"
import { TaskId, ThreadIdInput } from "@forkjoin/schema"
import * as Tool from "effect/ai/Tool"
import * as Schema from "effect/Schema"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * One child task of `run_subagents` as a model gives it: a prompt (or, over MCP, scripted
 * actions or a changeset file, confined to the workspace by `HostTools`), a mode and, when it
 * writes, its scope.
 *
 * @category models
 * @since 0.1.0
 */
export const SubagentTask = Schema.Struct({
  id: TaskId,
  mode: Schema.Literals(["transactional_write", "read_only"]),
  prompt: Schema.optionalKey(Schema.String.check(Schema.isNonEmpty())),
  writeScope: Schema.optionalKey(Schema.Array(Schema.String)),
  maxAttempts: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 3 }))),
  timeoutMs: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThan(0))),
  actions: Schema.optionalKey(Schema.Array(Schema.Unknown)),
  changesetFile: Schema.optionalKey(Schema.String)
})

/**
 * `run_subagents`' arguments.
 *
 * @category models
 * @since 0.1.0
 */
export const RunSubagentsArgs = Schema.Struct({
  tasks: Schema.Array(SubagentTask),
  atomic: Schema.optionalKey(Schema.Boolean)
})

/**
 * `resolve_conflict`'s arguments.
 *
 * @category models
 * @since 0.1.0
 */
export const ResolveConflictArgs = Schema.Struct({
  conflictId: Schema.String,
  resolution: Schema.Literals(["apply", "discard", "content"]),
  content: Schema.optionalKey(Schema.String)
})

/**
 * `rollback_transaction`'s arguments.
 *
 * @category models
 * @since 0.1.0
 */
export const RollbackArgs = Schema.Struct({ transactionId: Schema.String, strict: Schema.optionalKey(Schema.Boolean) })

/**
 * `history_timeline`'s arguments: a thread (default the caller's; an id by the one id rule), newest
 * pages via `cursor`.
 *
 * @category models
 * @since 0.1.0
 */
export const TimelineArgs = Schema.Struct({
  thread: Schema.optionalKey(ThreadIdInput),
  cursor: Schema.optionalKey(Schema.String)
})

/**
 * `history_file`'s arguments: one workspace-relative path.
 *
 * @category models
 * @since 0.1.0
 */
export const FileHistoryArgs = Schema.Struct({ path: Schema.String, cursor: Schema.optionalKey(Schema.String) })

/**
 * `gate_decision`'s arguments (none).
 *
 * @category models
 * @since 0.1.0
 */
export const GateArgs = Tool.EmptyParams

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

const PATCH_FORMAT = "A patch in the apply_patch format: '*** Begin Patch', then '*** Add File: PATH' (lines prefixed '+'), " +
  "'*** Delete File: PATH' or '*** Update File: PATH' (optional '*** Move to: PATH', then '@@' hunks of ' ', '-', '+' lines), " +
  "then '*** End Patch'. Paths are workspace-relative."

/**
 * `read_file`: one workspace file (every model sees the session tools; children get no batches).
 *
 * @category constructors
 * @since 0.1.0
 */
export const readFile = Tool.make("read_file", {
  description: "Read one workspace file (workspace-relative path).",
  parameters: ActionArguments.read_file
})

/**
 * `list_dir`: one directory's entries.
 *
 * @category constructors
 * @since 0.1.0
 */
export const listDir = Tool.make("list_dir", {
  description: "List a workspace directory ('.' for the root).",
  parameters: ActionArguments.list_dir
})

/**
 * `apply_patch`: one patch, all or nothing (staged in a child's overlay).
 *
 * @category constructors
 * @since 0.1.0
 */
export const applyPatch = Tool.make("apply_patch", {
  description: `Apply a patch, all or nothing. ${PATCH_FORMAT}`,
  parameters: ActionArguments.apply_patch
})

/**
 * `finish`: ends the session (a child exports its changeset).
 *
 * @category constructors
 * @since 0.1.0
 */
export const finish = Tool.make("finish", {
  description: "End the session when the task is done. A child's staged edits are exported only on finish."
})

/**
 * `begin_batch`: the parent's model-managed batch opens.
 *
 * @category constructors
 * @since 0.1.0
 */
export const beginBatch = Tool.make("begin_batch", { description: "Open a batch: later apply_patch calls stage until commit_batch applies them as one transaction." })

/**
 * `commit_batch`: the batch's patches as one transaction.
 *
 * @category constructors
 * @since 0.1.0
 */
export const commitBatch = Tool.make("commit_batch", { description: "Apply every patch staged since begin_batch as one transaction." })

/**
 * `abort_batch`: the batch is dropped.
 *
 * @category constructors
 * @since 0.1.0
 */
export const abortBatch = Tool.make("abort_batch", { description: "Drop the open batch; nothing is written." })

/**
 * `run_subagents`: children forked and joined.
 *
 * @category constructors
 * @since 0.1.0
 */
export const runSubagents = Tool.make("run_subagents", {
  description: "Fork children that work concurrently, then join their changesets into the workspace. Each task has an id, a " +
    "mode ('transactional_write' with a writeScope of files/directories it may change, or 'read_only') and a prompt. " +
    "The result is the join's outcome per child and any conflicts held back; resolve every conflict before finish.",
  parameters: RunSubagentsArgs
})

/**
 * `resolve_conflict`: one held conflict closed.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolveConflict = Tool.make("resolve_conflict", {
  description: "Resolve a conflict the join held back: 'apply' takes the child's side of the conflicting hunks onto the live " +
    "file as it is now (its other changes stay; a conflict without hunks (binary, deleted, added on both sides, moved and " +
    "edited) takes the child's whole file), 'discard' keeps the live file, 'content' writes the given text.",
  parameters: ResolveConflictArgs
})

/**
 * `rollback_transaction`: one transaction undone.
 *
 * @category constructors
 * @since 0.1.0
 */
export const rollbackTransaction = Tool.make("rollback_transaction", {
  description: "Undo exactly one transaction (a child's merge, a patch, a resolution) as a new transaction. A path changed " +
    "since is merged with the later changes; where that merge is not clean nothing is written and each such path is held as " +
    "a conflict (rollback_conflicted, with its conflictIds): resolve each with resolve_conflict, and the whole rollback is " +
    "applied when the last is resolved. strict: true refuses any changed path instead (rollback_drift).",
  parameters: RollbackArgs
})

/**
 * `history_timeline`: a thread's records, a page at a time.
 *
 * @category constructors
 * @since 0.1.0
 */
export const historyTimeline = Tool.make("history_timeline", {
  description: "The transactions of a thread (default: yours) and its children, oldest first, a page at a time.",
  parameters: TimelineArgs
})

/**
 * `history_file`: one file's recorded changes.
 *
 * @category constructors
 * @since 0.1.0
 */
export const historyFile = Tool.make("history_file", {
  description: "Every recorded change of one file, following moves, a page at a time.",
  parameters: FileHistoryArgs
})

/**
 * Any of the tools above (their parameter schemas need no services).
 *
 * @category models
 * @since 0.1.0
 */
export type SessionTool =
  | typeof readFile
  | typeof listDir
  | typeof applyPatch
  | typeof finish
  | typeof beginBatch
  | typeof commitBatch
  | typeof abortBatch
  | typeof runSubagents
  | typeof resolveConflict
  | typeof rollbackTransaction
  | typeof historyTimeline
  | typeof historyFile

/**
 * A child's tools: read, list, patch (staged in its overlay), finish.
 *
 * @category constructors
 * @since 0.1.0
 */
export const childTools: ReadonlyArray<SessionTool> = [readFile, listDir, applyPatch, finish]

/**
 * A read-only child's tools.
 *
 * @category constructors
 * @since 0.1.0
 */
export const readOnlyTools: ReadonlyArray<SessionTool> = [readFile, listDir, finish]

/**
 * The parent's tools: the session's, batches, orchestration and history.
 *
 * @category constructors
 * @since 0.1.0
 */
export const parentTools: ReadonlyArray<SessionTool> = [
  readFile,
  listDir,
  applyPatch,
  beginBatch,
  commitBatch,
  abortBatch,
  runSubagents,
  resolveConflict,
  rollbackTransaction,
  historyTimeline,
  historyFile,
  finish
]
