/**
 * The durable record of one transaction (SPEC §4.1, schemaVersion 1): which execution made
 * which file changes, with what authority, and how certain the record is. Its encoding is the
 * JSON stored in SQLite, printed by `forkjoin apply --json` and served by the history views.
 *
 * `committedAt` is a `UtcTimestamp`: a canonical UTC ISO-8601 string on both the Type and the
 * Encoded side (not a `DateTime.Utc`), so records stay plain JSON-compatible data that
 * round-trips byte for byte and sorts lexicographically in SQLite.
 *
 * Beyond field shapes the schema enforces the invariants the spec states: a change carries
 * only the sides its kind allows (`moveFrom` only on moves, no `before` on adds, no `after` on
 * deletes, `overwritten` only on adds and moves); an `exact` record carries every side its
 * kinds require; a provider aggregate is never `exact`; `commit_state_uncertain` is
 * `uncertain`; a `gap` has `provenance: unknown`; each path changes at most once; and a
 * rollback's `links.rollbackOf` matches its `rollback:<txn>` transaction id. It does not own
 * computing records (the engine) nor ordinal allocation (the store).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import {
  ConflictId,
  EnvironmentId,
  InvocationId,
  MergeRunId,
  RecordId,
  RelativePath,
  ThreadId,
  TransactionId,
  TurnId
} from "./Ids.ts"
import { Snapshot } from "./Snapshot.ts"
import { UtcTimestamp } from "./UtcTimestamp.ts"

/**
 * Which mechanism's account of the change this record is.
 *
 * @category models
 * @since 0.1.0
 */
export const Authority = Schema.Literals([
  "native_patch_engine",
  "codex_aggregate_event",
  "managed_claude_patch_engine",
  "unsupported"
])

/**
 * @category models
 * @since 0.1.0
 */
export type Authority = typeof Authority.Type

/**
 * Where the record came from: the engine itself, a managed Claude engine, startup repair, an
 * ingested provider aggregate, or nobody known (a gap).
 *
 * @category models
 * @since 0.1.0
 */
export const Provenance = Schema.Literals([
  "native_engine",
  "managed_claude",
  "recovery",
  "provider_aggregate",
  "unknown"
])

/**
 * @category models
 * @since 0.1.0
 */
export type Provenance = typeof Provenance.Type

/**
 * How certain the record is: `exact` (every before/after is known and recoverable),
 * `partial` or `uncertain`.
 *
 * @category models
 * @since 0.1.0
 */
export const Exactness = Schema.Literals(["exact", "partial", "uncertain"])

/**
 * @category models
 * @since 0.1.0
 */
export type Exactness = typeof Exactness.Type

/**
 * What happened to the transaction: `applied`, `partial`, `commit_state_uncertain` (startup
 * repair could not prove either side) or `gap` (changes found with no intent).
 *
 * @category models
 * @since 0.1.0
 */
export const Outcome = Schema.Literals(["applied", "partial", "commit_state_uncertain", "gap"])

/**
 * @category models
 * @since 0.1.0
 */
export type Outcome = typeof Outcome.Type

/**
 * The kind of one file change. `update` edits a file in place (patch chunks), `replace`
 * substitutes its whole content, `move` renames it (possibly with edits).
 *
 * @category models
 * @since 0.1.0
 */
export const ChangeKind = Schema.Literals(["add", "replace", "update", "delete", "move"])

/**
 * @category models
 * @since 0.1.0
 */
export type ChangeKind = typeof ChangeKind.Type

const fileChangeIssues = (c: {
  readonly kind: ChangeKind
  readonly path: RelativePath
  readonly moveFrom?: RelativePath
  readonly before?: Snapshot
  readonly after?: Snapshot
  readonly overwritten?: Snapshot
}): Array<Schema.FilterIssue> => {
  const issues: Array<Schema.FilterIssue> = []
  if (c.kind === "move") {
    if (c.moveFrom === undefined) issues.push({ path: ["moveFrom"], issue: "a move change needs moveFrom" })
    else if (c.moveFrom === c.path) issues.push({ path: ["moveFrom"], issue: "a move's moveFrom must differ from its path" })
  } else if (c.moveFrom !== undefined) {
    issues.push({ path: ["moveFrom"], issue: `only a move change may have moveFrom, not ${c.kind}` })
  }
  if (c.kind === "add" && c.before !== undefined) {
    issues.push({ path: ["before"], issue: "an add change has no before snapshot (a replaced file goes in overwritten)" })
  }
  if (c.kind === "delete" && c.after !== undefined) {
    issues.push({ path: ["after"], issue: "a delete change has no after snapshot" })
  }
  if (c.overwritten !== undefined && c.kind !== "add" && c.kind !== "move") {
    issues.push({ path: ["overwritten"], issue: `only an add or move change may have overwritten, not ${c.kind}` })
  }
  return issues
}

/**
 * How merged content was made: `line` (the three-way line merge) or `structured` (the
 * syntax-aware merge, by syntax tree).
 *
 * @category models
 * @since 0.1.0
 */
export const MergeMethod = Schema.Literals(["line", "structured"])

/**
 * @category models
 * @since 0.1.0
 */
export type MergeMethod = typeof MergeMethod.Type

/**
 * How a path's content was merged with a sibling's change: the `method`, and for a merge by
 * syntax tree the `language` whose grammar parsed it.
 *
 * @category models
 * @since 0.1.0
 */
export const ChangeMerge = Schema.Struct({
  method: MergeMethod,
  language: Schema.optionalKey(Schema.String.check(Schema.isPattern(/^[a-z][a-z0-9_]*$/, { expected: "a language name" })))
})

/**
 * @category models
 * @since 0.1.0
 */
export type ChangeMerge = typeof ChangeMerge.Type

/**
 * One path's net change in a transaction: `kind`, relative `path` (the destination for a
 * move), `moveFrom` (moves only), `before` (absent for adds), `after` (absent for deletes)
 * and `overwritten` (the destination's previous content when an add or move replaced a file).
 * In non-exact records `before`/`after` may also be absent when they are unknown. `merge` says
 * how a join merged the content with a sibling's change (absent when it was not merged).
 *
 * @category models
 * @since 0.1.0
 */
export const FileChange = Schema.Struct({
  kind: ChangeKind,
  path: RelativePath,
  moveFrom: Schema.optionalKey(RelativePath),
  before: Schema.optionalKey(Snapshot),
  after: Schema.optionalKey(Snapshot),
  overwritten: Schema.optionalKey(Snapshot),
  merge: Schema.optionalKey(ChangeMerge)
}).check(Schema.makeFilter(fileChangeIssues, { expected: "a consistent file change" }))

/**
 * @category models
 * @since 0.1.0
 */
export type FileChange = typeof FileChange.Type

/**
 * A directory the transaction created or removed.
 *
 * @category models
 * @since 0.1.0
 */
export const DirectoryEffect = Schema.Struct({
  kind: Schema.Literals(["created", "removed"]),
  path: RelativePath
})

/**
 * @category models
 * @since 0.1.0
 */
export type DirectoryEffect = typeof DirectoryEffect.Type

/**
 * A warning attached to a record: a stable snake_case `code`, a `message` and, when it
 * concerns one file, its `path`.
 *
 * @category models
 * @since 0.1.0
 */
export const RecordWarning = Schema.Struct({
  code: Schema.String.check(
    Schema.isPattern(/^[a-z][a-z0-9_]*$/, { expected: "a snake_case warning code" })
  ),
  message: Schema.String,
  path: Schema.optionalKey(RelativePath)
})

/**
 * @category models
 * @since 0.1.0
 */
export type RecordWarning = typeof RecordWarning.Type

/**
 * Links to other history: `rollbackOf` (the transaction this record undoes), `verifies` (the
 * provider-aggregate record this one verifies), `conflictId`, `mergeRunId`.
 *
 * @category models
 * @since 0.1.0
 */
export const RecordLinks = Schema.Struct({
  rollbackOf: Schema.optionalKey(TransactionId),
  verifies: Schema.optionalKey(RecordId),
  conflictId: Schema.optionalKey(ConflictId),
  mergeRunId: Schema.optionalKey(MergeRunId)
})

/**
 * @category models
 * @since 0.1.0
 */
export type RecordLinks = typeof RecordLinks.Type

const ROLLBACK_PREFIX = "rollback:"

const recordIssues = (r: {
  readonly transactionId: TransactionId
  readonly provenance: Provenance
  readonly exactness: Exactness
  readonly outcome: Outcome
  readonly changes: ReadonlyArray<FileChange>
  readonly links: RecordLinks
}): Array<Schema.FilterIssue> => {
  const issues: Array<Schema.FilterIssue> = []
  if (r.provenance === "provider_aggregate" && r.exactness === "exact") {
    issues.push({ path: ["exactness"], issue: "a provider aggregate is never exact; verification adds a linked record" })
  }
  if (r.outcome === "commit_state_uncertain" && r.exactness !== "uncertain") {
    issues.push({ path: ["exactness"], issue: "a commit_state_uncertain record must be uncertain" })
  }
  if (r.outcome === "gap" && r.provenance !== "unknown") {
    issues.push({ path: ["provenance"], issue: "a gap record has provenance unknown" })
  }
  const seen = new Set<string>()
  r.changes.forEach((c, i) => {
    if (seen.has(c.path)) issues.push({ path: ["changes", i, "path"], issue: `path ${JSON.stringify(c.path)} changes twice` })
    seen.add(c.path)
    if (r.exactness !== "exact") return
    if (c.kind !== "add" && c.before === undefined) {
      issues.push({ path: ["changes", i, "before"], issue: `an exact ${c.kind} change needs a before snapshot` })
    }
    if (c.kind !== "delete" && c.after === undefined) {
      issues.push({ path: ["changes", i, "after"], issue: `an exact ${c.kind} change needs an after snapshot` })
    }
  })
  const isRollback = r.transactionId.startsWith(ROLLBACK_PREFIX)
  const undone = r.transactionId.slice(ROLLBACK_PREFIX.length)
  if (isRollback && r.links.rollbackOf !== undone) {
    issues.push({ path: ["links", "rollbackOf"], issue: `a rollback record needs links.rollbackOf = ${JSON.stringify(undone)}` })
  } else if (!isRollback && r.links.rollbackOf !== undefined) {
    issues.push({ path: ["links", "rollbackOf"], issue: "only a rollback:<txn> transaction may set links.rollbackOf" })
  }
  return issues
}

/**
 * The fields a record has before the store commits it (no ordinal, no commit time); shared
 * with the journal's `RecordDraft`.
 *
 * @category models
 * @since 0.1.0
 */
export const draftFields = {
  recordId: RecordId,
  threadId: ThreadId,
  turnId: TurnId,
  invocationId: InvocationId,
  environmentId: EnvironmentId,
  transactionId: TransactionId,
  authority: Authority,
  provenance: Provenance,
  exactness: Exactness,
  outcome: Outcome,
  changes: Schema.Array(FileChange),
  directoryEffects: Schema.Array(DirectoryEffect),
  warnings: Schema.Array(RecordWarning),
  links: RecordLinks
}

/**
 * One committed (or uncertain, or discovered) transaction in patch history, schemaVersion 1.
 * `commitOrdinal` is a positive integer, strictly increasing per environment.
 *
 * @category models
 * @since 0.1.0
 */
export const PatchHistoryRecord = Schema.Struct({
  schemaVersion: Schema.Literal(1),
  ...draftFields,
  commitOrdinal: Schema.Int.check(Schema.isGreaterThan(0)),
  committedAt: UtcTimestamp
}).check(Schema.makeFilter(recordIssues, { expected: "a consistent patch history record" }))

/**
 * @category models
 * @since 0.1.0
 */
export type PatchHistoryRecord = typeof PatchHistoryRecord.Type

/**
 * The JSON form of a `PatchHistoryRecord` (same shape, unbranded strings).
 *
 * @category models
 * @since 0.1.0
 */
export type PatchHistoryRecordEncoded = typeof PatchHistoryRecord.Encoded

/**
 * A `PatchHistoryRecord` encoded as a JSON string (a SQLite TEXT column, a CLI line):
 * `Schema.decodeUnknownSync(PatchHistoryRecordFromJson)(text)` parses and validates,
 * `Schema.encodeSync(PatchHistoryRecordFromJson)(record)` stringifies.
 *
 * @category models
 * @since 0.1.0
 */
export const PatchHistoryRecordFromJson = Schema.fromJsonString(PatchHistoryRecord)
