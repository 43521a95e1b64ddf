/**
 * The durable patch history (SPEC §4.1–4.3, §4.5): content-addressed blobs, the journal of
 * intents, and PatchHistoryRecords with per-environment commit ordinals. This module owns the
 * service contract; the SQLite implementation lives in `HistoryStoreSqlite.ts`. It does not
 * own filesystem writes (the engine does) nor query views (`Views.ts`).
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import type {
  EnvironmentId,
  JournalIntent,
  PatchHistoryRecord,
  RecordDraft,
  Sha256Hash,
  ThreadId,
  TransactionId,
  TurnId
} from "@forkjoin/schema"

/**
 * A storage failure: the operation (`HistoryStore.commitIntent:insert`), a reason, the cause.
 *
 * @category errors
 * @since 0.1.0
 */
export class StoreError extends Schema.TaggedError<StoreError>()("StoreError", {
  operation: Schema.String,
  reason: Schema.Literals(["Busy", "Constraint", "Corrupt", "NotFound", "Io", "Schema"]),
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
 * The history store of one database.
 *
 * @category services
 * @since 0.1.0
 */
export class HistoryStore extends Context.Service<HistoryStore, {
  /** Stores blobs once per sha256 (idempotent); returns their hashes in input order. */
  readonly putBlobs: (blobs: ReadonlyArray<Uint8Array>) => Effect.Effect<ReadonlyArray<Sha256Hash>, StoreError>
  /** Reads one blob. */
  readonly getBlob: (hash: Sha256Hash) => Effect.Effect<Option.Option<Uint8Array>, StoreError>
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
   * and marks the intent `committed`. Returns the stored record.
   */
  readonly commitIntent: (
    intentId: string,
    draft: RecordDraft,
    committedAtMillis: number
  ) => Effect.Effect<PatchHistoryRecord, StoreError>
  /** Closes an intent without a record (`aborted` or `uncertain`), with a note. */
  readonly closeIntent: (
    intentId: string,
    status: "aborted" | "uncertain",
    note: string
  ) => Effect.Effect<void, StoreError>
  /** Open intents of an environment, oldest first (startup repair). */
  readonly openIntents: (environmentId: EnvironmentId) => Effect.Effect<ReadonlyArray<JournalIntent>, StoreError>
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
}>()("forkjoin/history/HistoryStore") {}
