/**
 * The responses of the history views (SPEC §4.4): timeline, turn aggregate, record diff and
 * file history. Every response is a page: `items`, `coverage` (how certain the items are),
 * `truncated` (a cap cut something), `nextCursor` (opaque; absent on the last page) and
 * `caps` (the limits that were in force and whether they were applied). The JSON on the CLI
 * (`forkjoin history ... --json`) is this schema's encoding.
 *
 * Owns the shapes only; computing them belongs to `@forkjoin/history` (`Views.ts`).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { ConflictReason } from "./Conflict.ts"
import { ConflictId, MergeRunId, RecordId, RelativePath, Sha256Hash, TaskId, ThreadId, TransactionId, TurnId } from "./Ids.ts"
import { Authority, ChangeKind, ChangeMerge, Exactness, FileChange, Outcome, PatchHistoryRecord, Provenance } from "./PatchHistoryRecord.ts"
import { Snapshot } from "./Snapshot.ts"
import { UtcTimestamp } from "./UtcTimestamp.ts"

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * A change on disk that history has not recorded (an edit made outside forkjoin), as a view
 * found it: the path, the hash history last recorded and the hash on disk now (`null`: no
 * file). A view only reports it; the next write or merge of the path records it as a gap.
 *
 * @category models
 * @since 0.1.0
 */
export const UnrecordedChange = Schema.Struct({
  path: RelativePath,
  recordedHash: Schema.NullOr(Sha256Hash),
  diskHash: Schema.NullOr(Sha256Hash)
})

/**
 * @category models
 * @since 0.1.0
 */
export type UnrecordedChange = typeof UnrecordedChange.Type

/**
 * How certain the records behind a response are: counts of `exact` / `partial` / `uncertain`
 * records, `gaps`, `providerAggregates` and how many of those a verification record proved
 * (`verifiedAggregates`). `records` is how many records were counted. `unrecordedChanges`
 * (file view, first page) lists what differs on disk and is not recorded yet.
 *
 * @category models
 * @since 0.1.0
 */
export const Coverage = Schema.Struct({
  records: Count,
  exact: Count,
  partial: Count,
  uncertain: Count,
  gaps: Count,
  providerAggregates: Count,
  verifiedAggregates: Count,
  unrecordedChanges: Schema.optionalKey(Schema.Array(UnrecordedChange))
})

/**
 * @category models
 * @since 0.1.0
 */
export type Coverage = typeof Coverage.Type

/**
 * The caps in force for one response: page size (`limit`, after clamping `requestedLimit`
 * to 1..1000) and response bytes (`maxBytes`), and which of them cut the response.
 *
 * @category models
 * @since 0.1.0
 */
export const ViewCaps = Schema.Struct({
  requestedLimit: Schema.optionalKey(Schema.Int),
  limit: Count,
  limitClamped: Schema.Boolean,
  maxBytes: Count,
  bytesCapApplied: Schema.Boolean,
  maxDiffLines: Schema.optionalKey(Count),
  diffCapApplied: Schema.optionalKey(Schema.Boolean)
})

/**
 * @category models
 * @since 0.1.0
 */
export type ViewCaps = typeof ViewCaps.Type

/**
 * A conflict a join held back, as views list it beside the records (the full record, with
 * its sides and rendered text, is `forkjoin conflicts`'s).
 *
 * @category models
 * @since 0.1.0
 */
export const ConflictSummary = Schema.Struct({
  conflictId: ConflictId,
  runId: MergeRunId,
  childId: TaskId,
  path: RelativePath,
  status: Schema.Literals(["open", "resolved"]),
  reason: ConflictReason
})

/**
 * @category models
 * @since 0.1.0
 */
export type ConflictSummary = typeof ConflictSummary.Type

const page = <Item extends Schema.Top>(item: Item) =>
  Schema.Struct({
    items: Schema.Array(item),
    coverage: Coverage,
    truncated: Schema.Boolean,
    nextCursor: Schema.NullOr(Schema.String),
    caps: ViewCaps,
    /** Conflicts of the threads (timeline) or the path (file) shown, on a first page, when there are any. */
    conflicts: Schema.optionalKey(Schema.Array(ConflictSummary))
  })

/**
 * One page of a thread's or turn's timeline: whole records in commit order.
 *
 * @category models
 * @since 0.1.0
 */
export const TimelinePage = page(PatchHistoryRecord)

/**
 * @category models
 * @since 0.1.0
 */
export type TimelinePage = typeof TimelinePage.Type

/**
 * One path's net change across a turn: `kind` (`add`, `update`, `delete`, `move`), the path
 * at the end of the turn (`path`) and at its start (`moveFrom`, moves only), the snapshots at
 * both ends when known, the records that touched it, and the least certain `exactness`.
 * `pruned` lists the snapshots whose content retention dropped (their hashes stay).
 *
 * @category models
 * @since 0.1.0
 */
export const TurnPathChange = Schema.Struct({
  kind: Schema.Literals(["add", "update", "delete", "move"]),
  path: RelativePath,
  moveFrom: Schema.optionalKey(RelativePath),
  before: Schema.optionalKey(Snapshot),
  after: Schema.optionalKey(Snapshot),
  exactness: Exactness,
  records: Schema.Array(RecordId),
  pruned: Schema.optionalKey(Schema.Array(Sha256Hash))
})

/**
 * @category models
 * @since 0.1.0
 */
export type TurnPathChange = typeof TurnPathChange.Type

/**
 * One page of a turn aggregate (items sorted by path).
 *
 * @category models
 * @since 0.1.0
 */
export const TurnPage = page(TurnPathChange)

/**
 * @category models
 * @since 0.1.0
 */
export type TurnPage = typeof TurnPage.Type

/**
 * One change of a record as a unified diff (`---`/`+++`/`@@` hunks, 3 lines of context), or
 * a one-line summary for binary content. `source` says where the text came from: both
 * blobs, the provider's own event (an aggregate whose content was not recorded), nothing, or
 * `pruned`: retention dropped a side's content (the diff is then a one-line note; `pruned`
 * lists those snapshots). `overwritten` is the destination's previous content when an add or
 * move replaced a file; `merge`, how a join merged it (the change's own `merge`).
 *
 * @category models
 * @since 0.1.0
 */
export const RecordDiffFile = Schema.Struct({
  kind: ChangeKind,
  path: RelativePath,
  moveFrom: Schema.optionalKey(RelativePath),
  beforeHash: Schema.optionalKey(Sha256Hash),
  afterHash: Schema.optionalKey(Sha256Hash),
  overwritten: Schema.optionalKey(Snapshot),
  merge: Schema.optionalKey(ChangeMerge),
  binary: Schema.Boolean,
  source: Schema.Literals(["blobs", "provider_event", "unavailable", "pruned"]),
  pruned: Schema.optionalKey(Schema.Array(Sha256Hash)),
  linesAdded: Count,
  linesRemoved: Count,
  diff: Schema.String,
  truncated: Schema.Boolean
})

/**
 * @category models
 * @since 0.1.0
 */
export type RecordDiffFile = typeof RecordDiffFile.Type

/**
 * One page of a record diff (one item per change, in record order).
 *
 * @category models
 * @since 0.1.0
 */
export const DiffPage = page(RecordDiffFile)

/**
 * @category models
 * @since 0.1.0
 */
export type DiffPage = typeof DiffPage.Type

/**
 * One step of a file's history: the record's identity and labels plus the one change that
 * touched the file (under whichever name it had then). `pruned` lists the change's snapshots
 * whose content retention dropped (their hashes stay).
 *
 * @category models
 * @since 0.1.0
 */
export const FileHistoryItem = Schema.Struct({
  recordId: RecordId,
  threadId: ThreadId,
  turnId: TurnId,
  transactionId: TransactionId,
  commitOrdinal: Schema.Int,
  committedAt: UtcTimestamp,
  authority: Authority,
  provenance: Provenance,
  exactness: Exactness,
  outcome: Outcome,
  change: FileChange,
  pruned: Schema.optionalKey(Schema.Array(Sha256Hash))
})

/**
 * @category models
 * @since 0.1.0
 */
export type FileHistoryItem = typeof FileHistoryItem.Type

/**
 * One page of a file's history across the caller's thread and its descendants, in commit
 * order, following moves in both directions.
 *
 * @category models
 * @since 0.1.0
 */
export const FilePage = page(FileHistoryItem)

/**
 * @category models
 * @since 0.1.0
 */
export type FilePage = typeof FilePage.Type
