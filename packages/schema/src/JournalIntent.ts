/**
 * The journal intent (SPEC §3 stage 7, §4.5): what the engine is about to commit, written
 * durably before the first rename so startup repair can finish or undo it after a crash.
 * It holds the record draft (everything but the ordinal and commit time) and, per path, the
 * pre/post content hashes whose blobs are stored beside it.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { EnvironmentId, RelativePath, Sha256Hash, TransactionId } from "./Ids.ts"
import { draftFields } from "./PatchHistoryRecord.ts"
import { FileMode } from "./Snapshot.ts"
import { UtcTimestamp } from "./UtcTimestamp.ts"

/**
 * One path the intent touches: its content hash before and after (`null` = absent) and mode.
 * A move contributes two entries (source: post `null`; destination: post hash).
 *
 * @category models
 * @since 0.1.0
 */
export const IntentEntry = Schema.Struct({
  path: RelativePath,
  pre: Schema.NullOr(Sha256Hash),
  post: Schema.NullOr(Sha256Hash),
  preMode: Schema.optionalKey(FileMode),
  postMode: Schema.optionalKey(FileMode)
})

/**
 * @category models
 * @since 0.1.0
 */
export type IntentEntry = typeof IntentEntry.Type

/**
 * A PatchHistoryRecord before commit: every field but `commitOrdinal` and `committedAt`,
 * which the store assigns in the transaction that closes the intent.
 *
 * @category models
 * @since 0.1.0
 */
export const RecordDraft = Schema.Struct(draftFields)

/**
 * @category models
 * @since 0.1.0
 */
export type RecordDraft = typeof RecordDraft.Type

/**
 * Lifecycle of an intent: `open` until the record commits (`committed`) or the engine
 * restores the pre-state (`aborted`), or repair cannot prove either (`uncertain`).
 *
 * @category models
 * @since 0.1.0
 */
export const IntentStatus = Schema.Literals(["open", "committed", "aborted", "uncertain"])

/**
 * @category models
 * @since 0.1.0
 */
export type IntentStatus = typeof IntentStatus.Type

/**
 * The journal intent, schemaVersion 1.
 *
 * @category models
 * @since 0.1.0
 */
export const JournalIntent = Schema.Struct({
  schemaVersion: Schema.Literal(1),
  intentId: Schema.String.check(Schema.isNonEmpty()),
  environmentId: EnvironmentId,
  transactionId: TransactionId,
  createdAt: UtcTimestamp,
  draft: RecordDraft,
  entries: Schema.Array(IntentEntry),
  /** Directories the commit creates (parents first), so an undo can remove them again. */
  createdDirectories: Schema.Array(RelativePath)
})

/**
 * @category models
 * @since 0.1.0
 */
export type JournalIntent = typeof JournalIntent.Type

/**
 * The intent as a JSON string (the journal's TEXT column).
 *
 * @category models
 * @since 0.1.0
 */
export const JournalIntentFromJson = Schema.fromJsonString(JournalIntent)
