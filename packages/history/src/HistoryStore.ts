/**
 * The durable patch history (SPEC §4.1–4.3, §4.5): content-addressed blobs (snapshots), the
 * journal of intents, and PatchHistoryRecords with per-environment commit ordinals; also the
 * database's own identity (a history id, the resets that adopted it), the acknowledgements of
 * `commit_state_uncertain` outcomes, and retention (dropping old snapshots' content while every
 * record keeps its hashes). This module owns the service contracts: `HistoryContent`,
 * `HistoryJournal`, `HistoryRecords`, `HistoryIdentityStore`, and `HistoryStore`, all four in
 * one. The SQLite implementation lives in `HistoryStoreSqlite.ts` (its layers) and one file per
 * service in `internal/store/`, the snapshot storage under it in `SnapshotStore.ts`. It does
 * not own filesystem writes (the engine does), what a workspace remembers of its history (the
 * engine's `identity.json`), nor query views (`Views.ts`).
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import {
  EnvironmentId,
  type JournalIntent,
  PatchHistoryRecord,
  type RecordDraft,
  type RecordId,
  type Sha256Hash,
  type ThreadId,
  type TransactionId,
  type TurnId,
  UtcTimestamp
} from "@forkjoin/schema"

/**
 * A storage failure: the operation (`HistoryStore.commitIntent:insert`), a reason, the cause.
 * `Pruned`: the snapshot's content was dropped by retention (`pruneSnapshots`).
 *
 * @category errors
 * @since 0.1.0
 */
export class StoreError extends Schema.TaggedError<StoreError>()("StoreError", {
  operation: Schema.String,
  reason: Schema.Literals(["Busy", "Constraint", "Corrupt", "NotFound", "Io", "Schema", "Pruned"]),
  detail: Schema.optional(Schema.String),
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return `${this.operation} failed (${this.reason})${this.detail === undefined ? "" : `: ${this.detail}`}`
  }
}

/**
 * Bytes and files written, for budgets (SPEC §3 `budget_exceeded`).
 *
 * @category models
 * @since 0.1.0
 */
export interface Usage {
  readonly bytes: number
  readonly files: number
}

/**
 * One database's identity as one environment sees it: where it is, its history id (none until
 * one is established), and how far the environment's records and open intents go.
 *
 * @category models
 * @since 0.1.0
 */
export const HistoryIdentity = Schema.Struct({
  /** The database file's absolute path; undefined for an in-memory database. */
  location: Schema.UndefinedOr(Schema.String),
  /** `hist-<32 hex>`, minted once per database; undefined until `establishIdentity`. */
  historyId: Schema.UndefinedOr(Schema.String),
  /** The environment's highest commit ordinal (0 without records). */
  lastOrdinal: Schema.Int,
  /** The environment's open intents: each may still become a record (startup repair). */
  openIntents: Schema.Int
})

/**
 * @category models
 * @since 0.1.0
 */
export type HistoryIdentity = typeof HistoryIdentity.Type

/**
 * Why a workspace's remembered history was replaced: its database was missing or empty, held
 * another history, or was an older copy of it.
 *
 * @category models
 * @since 0.1.0
 */
export const HistoryResetReason = Schema.Literals(["missing", "different", "older"])

/**
 * @category models
 * @since 0.1.0
 */
export type HistoryResetReason = typeof HistoryResetReason.Type

/**
 * A deliberate reset (`forkjoin repair --reset-history`): from `resetAt` on, the environment's
 * history is `historyId`; before it was `previousHistoryId` up to record `previousLastOrdinal`.
 *
 * @category models
 * @since 0.1.0
 */
export const HistoryReset = Schema.Struct({
  environmentId: EnvironmentId,
  resetAt: UtcTimestamp,
  historyId: Schema.String,
  previousHistoryId: Schema.String,
  previousLastOrdinal: Schema.Int,
  reason: HistoryResetReason
})

/**
 * @category models
 * @since 0.1.0
 */
export type HistoryReset = typeof HistoryReset.Type

/**
 * A `commit_state_uncertain` record and, once someone checked its files, its acknowledgement.
 *
 * @category models
 * @since 0.1.0
 */
export const UncertainRecord = Schema.Struct({
  record: PatchHistoryRecord,
  acknowledgedAt: Schema.UndefinedOr(UtcTimestamp),
  note: Schema.UndefinedOr(Schema.String)
})

/**
 * @category models
 * @since 0.1.0
 */
export type UncertainRecord = typeof UncertainRecord.Type

/**
 * A retention request: records committed before `committedBefore` (epoch milliseconds) no
 * longer need their snapshots' content, except the snapshots in `keep` (for example the sides
 * of open conflicts).
 *
 * @category models
 * @since 0.1.0
 */
export interface RetentionRequest {
  readonly committedBefore: number
  readonly keep?: ReadonlyArray<Sha256Hash> | undefined
}

/**
 * What retention did: snapshots whose content was dropped, the chunks removed and the stored
 * bytes they held, and the database file's size before and after (freed pages are returned to
 * the filesystem).
 *
 * @category models
 * @since 0.1.0
 */
export const RetentionReport = Schema.Struct({
  snapshotsPruned: Schema.Int,
  chunksRemoved: Schema.Int,
  bytesFreed: Schema.Int,
  databaseBytesBefore: Schema.Int,
  databaseBytesAfter: Schema.Int
})

/**
 * @category models
 * @since 0.1.0
 */
export type RetentionReport = typeof RetentionReport.Type

/**
 * The content of one history database: snapshots by sha256, verified on read, and the
 * retention of old snapshots' content.
 *
 * @category services
 * @since 0.1.0
 */
export class HistoryContent extends Context.Service<HistoryContent, {
  /** Stores blobs once per sha256 (idempotent); returns their hashes in input order. */
  readonly putBlobs: (blobs: ReadonlyArray<Uint8Array>) => Effect.Effect<ReadonlyArray<Sha256Hash>, StoreError>
  /**
   * Reads one blob, verified against its hash (`Corrupt` when the stored content does not
   * rebuild it); `Pruned` when retention dropped it, none when it was never stored.
   */
  readonly getBlob: (hash: Sha256Hash) => Effect.Effect<Option.Option<Uint8Array>, StoreError>
  /**
   * Retention: drops the content of snapshots only records committed before the limit use.
   * Kept whatever their age: snapshots of newer records, the last recorded content of every
   * path, open intents' pre and post contents, and `keep`. Records, hashes and sizes all stay;
   * reading a dropped snapshot fails with `Pruned`, the views mark it.
   */
  readonly pruneSnapshots: (request: RetentionRequest) => Effect.Effect<RetentionReport, StoreError>
}>()("forkjoin/history/HistoryContent") {}

/**
 * The journal of one history database: the intents an apply opens before it writes, closed
 * with their record (or without one), and the open ones startup repair finishes.
 *
 * @category services
 * @since 0.1.0
 */
export class HistoryJournal extends Context.Service<HistoryJournal, {
  /**
   * Durably writes an open intent and its blobs in ONE transaction (synchronous=FULL): after
   * this returns, a crash can always be repaired.
   */
  readonly openIntent: (
    intent: JournalIntent,
    blobs: ReadonlyArray<Uint8Array>,
    /** The blobs' sha256, when the caller already computed them (trusted, same process). */
    knownHashes?: ReadonlyArray<Sha256Hash>
  ) => Effect.Effect<void, StoreError>
  /**
   * In ONE transaction: assigns the environment's next `commitOrdinal` (max + 1, no gaps, no
   * collisions across processes) and `committedAt`, inserts the record built from the draft,
   * and closes the intent: `committed`, or with `close` its status and note (repair records a
   * `commit_state_uncertain` outcome and closes its intent `uncertain` at once). With
   * `recordGaps`, each path whose preimage in the draft differs from history's last content
   * (an edit made outside forkjoin) first gets a `gap` record, in the same transaction.
   * Returns the stored record.
   */
  readonly commitIntent: (
    intentId: string,
    draft: RecordDraft,
    committedAtMillis: number,
    close?: { readonly status: "uncertain"; readonly note: string },
    options?: { readonly recordGaps?: boolean }
  ) => Effect.Effect<PatchHistoryRecord, StoreError>
  /** Closes an intent without a record (`aborted` or `uncertain`), with a note. */
  readonly closeIntent: (
    intentId: string,
    status: "aborted" | "uncertain",
    note: string
  ) => Effect.Effect<void, StoreError>
  /** Open intents of an environment, oldest first (startup repair). */
  readonly openIntents: (environmentId: EnvironmentId) => Effect.Effect<ReadonlyArray<JournalIntent>, StoreError>
}>()("forkjoin/history/HistoryJournal") {}

/**
 * The record log of one history database: records without an intent, the thread tree, record
 * queries, usage for budgets, and the acknowledgements of uncertain outcomes.
 *
 * @category services
 * @since 0.1.0
 */
export class HistoryRecords extends Context.Service<HistoryRecords, {
  /** Appends a record that has no intent (gaps, uncertain outcomes, provider aggregates). */
  readonly appendRecord: (draft: RecordDraft, committedAtMillis: number) => Effect.Effect<PatchHistoryRecord, StoreError>
  /**
   * Appends many intent-less records in ONE transaction (batched ingestion, bulk import), with
   * consecutive ordinals in input order; all or nothing.
   */
  readonly appendRecords: (
    drafts: ReadonlyArray<RecordDraft>,
    committedAtMillis: number
  ) => Effect.Effect<ReadonlyArray<PatchHistoryRecord>, StoreError>
  /**
   * Records a thread and its parent (the orchestrator calls it when it forks a child). Views
   * scope a caller to its thread and descendants; an unregistered thread sees only itself.
   * Idempotent for the same parent; a different parent or a cycle fails with `Constraint`.
   */
  readonly registerThread: (threadId: ThreadId, parentThreadId?: ThreadId) => Effect.Effect<void, StoreError>
  /** Records of a transaction id, in commit order (e.g. to roll one back). */
  readonly recordsByTransaction: (
    environmentId: EnvironmentId,
    transactionId: TransactionId
  ) => Effect.Effect<ReadonlyArray<PatchHistoryRecord>, StoreError>
  /** Records of an environment with `commitOrdinal > after`, ascending, at most `limit`. */
  readonly recordsAfter: (
    environmentId: EnvironmentId,
    after: number,
    limit: number
  ) => Effect.Effect<ReadonlyArray<PatchHistoryRecord>, StoreError>
  /** Bytes/files written by applied records of a turn (or of the whole environment). */
  readonly usage: (environmentId: EnvironmentId, turnId: TurnId | undefined) => Effect.Effect<Usage, StoreError>
  /** The environment's `commit_state_uncertain` records, acknowledged or not, in commit order. */
  readonly uncertainRecords: (environmentId: EnvironmentId) => Effect.Effect<ReadonlyArray<UncertainRecord>, StoreError>
  /**
   * Durably acknowledges one `commit_state_uncertain` record of the environment (the first
   * acknowledgement is kept); `NotFound` when the environment has no such record.
   */
  readonly acknowledge: (
    environmentId: EnvironmentId,
    recordId: RecordId,
    atMillis: number,
    note: string
  ) => Effect.Effect<UncertainRecord, StoreError>
}>()("forkjoin/history/HistoryRecords") {}

/**
 * The identity of one history database: its history id and the resets that adopted it.
 *
 * @category services
 * @since 0.1.0
 */
export class HistoryIdentityStore extends Context.Service<HistoryIdentityStore, {
  /** The database's identity for `environmentId` (reads only: nothing is minted). */
  readonly identity: (environmentId: EnvironmentId) => Effect.Effect<HistoryIdentity, StoreError>
  /**
   * Gives the database its history id if it has none (once: concurrent callers get the same
   * id) and returns the identity.
   */
  readonly establishIdentity: (
    environmentId: EnvironmentId,
    atMillis: number
  ) => Effect.Effect<HistoryIdentity, StoreError>
  /**
   * In ONE transaction: establishes the history id if there is none and records that the
   * environment's previous history was replaced by this database's, and why.
   */
  readonly resetIdentity: (
    environmentId: EnvironmentId,
    atMillis: number,
    previous: { readonly historyId: string; readonly lastOrdinal: number; readonly reason: HistoryResetReason }
  ) => Effect.Effect<HistoryReset, StoreError>
  /** The environment's recorded resets, oldest first. */
  readonly historyResets: (environmentId: EnvironmentId) => Effect.Effect<ReadonlyArray<HistoryReset>, StoreError>
}>()("forkjoin/history/HistoryIdentityStore") {}

/**
 * The history store of one database: the four services above in one, for consumers that use
 * most of them (the engine). Every store layer provides it and each of them over one connection.
 *
 * @category services
 * @since 0.1.0
 */
export class HistoryStore extends Context.Service<
  HistoryStore,
  HistoryContent["Service"] & HistoryJournal["Service"] & HistoryRecords["Service"] & HistoryIdentityStore["Service"]
>()("forkjoin/history/HistoryStore") {}

/**
 * What every store layer provides: the composed store and each focused service.
 *
 * @category services
 * @since 0.1.0
 */
export type HistoryServices = HistoryStore | HistoryContent | HistoryJournal | HistoryRecords | HistoryIdentityStore
