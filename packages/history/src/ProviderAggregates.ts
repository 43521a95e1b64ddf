/**
 * Provider aggregates (SPEC §4.6): ingesting a provider's own account of a change — a Codex
 * turn diff (unified diff) or a managed Claude Edit / Write / MultiEdit tool event (JSON) —
 * as a record with the provider's authority, `provenance: provider_aggregate` and
 * `exactness: partial` (`uncertain` when part of it could not be parsed), plus its raw event;
 * and verifying one against the workspace, which adds a linked record (`links.verifies`),
 * `exact` when the workspace proves the claimed change, never editing the original.
 *
 * Ingestion is all or nothing: a malformed event (or any event of a batch) fails with an
 * `IngestError` and writes nothing. Re-ingesting the same event (same transaction id and
 * payload) returns the record already stored, and `ingestWithStatus` says it was.
 *
 * It owns parsing, record construction and verification. It does not own the views (which
 * show aggregates and their coverage) nor filesystem writes (it only reads the workspace).
 *
 * @since 0.1.0
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import { deniedByDefault } from "@forkjoin/patch/PathPolicy"
import { readWorkspaceFile } from "@forkjoin/patch/SafeRead"
import { snapshotOf } from "@forkjoin/patch/Snapshot"
import { type EnvironmentId, type FileChange, PatchHistoryRecord, RecordDraft, type Snapshot } from "@forkjoin/schema"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { StoreError } from "./HistoryStore.ts"
import { sqliteOptions } from "./HistoryStoreSqlite.ts"
import {
  type ClaimedChange,
  parseEvent,
  type PathMapper,
  type ProviderFormat
} from "./internal/providerFormats.ts"
import {
  decodeRecordJsonRow,
  insertBlobs,
  insertRecord,
  prepareRecordSync,
  type PreparedRecord,
  recordOf
} from "./internal/records.ts"
import { type PathRefusal, workspacePathOf } from "./internal/requestPath.ts"
import { type Connection, Sqlite, type SqliteOptions } from "./Sqlite.ts"

/**
 * The ingestible formats: `codex-turn-diff` (a unified diff) and `claude-tool-event` (JSON).
 *
 * @category models
 * @since 0.1.0
 */
export type { ProviderFormat } from "./internal/providerFormats.ts"

/**
 * Why an event could not be ingested or verified: `Malformed` (not the format, nothing
 * ingested), `PathRefused` (a path outside the workspace), `PathDenied` (a path the workspace
 * policy denies, `.git` or `.forkjoin` at any depth), `Conflict` (the id is taken by a
 * different event), `NotFound` / `NotAggregate` (verification of something else).
 *
 * @category errors
 * @since 0.1.0
 */
export class IngestError extends Schema.TaggedError<IngestError>()("IngestError", {
  operation: Schema.String,
  reason: Schema.Literals(["Malformed", "PathRefused", "PathDenied", "Conflict", "NotFound", "NotAggregate"]),
  detail: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return `${this.operation}: ${this.detail}`
  }
}

/**
 * One event to ingest: its `format` and raw `text`, the thread and turn it belongs to, and
 * optionally the provider's id for it (default: derived from the content, so re-ingesting
 * the same event is idempotent).
 *
 * @category models
 * @since 0.1.0
 */
export interface IngestRequest {
  readonly format: ProviderFormat
  readonly text: string
  readonly threadId: string
  readonly turnId: string
  readonly invocationId?: string | undefined
  readonly id?: string | undefined
}

/**
 * What one ingestion did: the event's record, and whether it was `alreadyRecorded` (the same
 * event was ingested before; nothing was written) rather than recorded now.
 *
 * @category models
 * @since 0.1.0
 */
export interface IngestOutcome {
  readonly record: PatchHistoryRecord
  readonly alreadyRecorded: boolean
}

/**
 * The ingestion service over one environment (and its workspace root, for absolute paths in
 * events and for verification).
 *
 * @category services
 * @since 0.1.0
 */
export class ProviderAggregates extends Context.Service<ProviderAggregates, {
  /** Ingests one event as one record (or returns the record it already became). */
  readonly ingest: (request: IngestRequest) => Effect.Effect<PatchHistoryRecord, IngestError | StoreError>
  /** `ingest`, also saying whether the event was already recorded (a re-ingestion writes nothing). */
  readonly ingestWithStatus: (request: IngestRequest) => Effect.Effect<IngestOutcome, IngestError | StoreError>
  /** Ingests many events in ONE transaction, all or nothing. */
  readonly ingestMany: (
    requests: ReadonlyArray<IngestRequest>
  ) => Effect.Effect<ReadonlyArray<PatchHistoryRecord>, IngestError | StoreError>
  /** Compares an aggregate's claimed change with the workspace and records the verification. */
  readonly verify: (recordId: string) => Effect.Effect<PatchHistoryRecord, IngestError | StoreError>
}>()("forkjoin/history/ProviderAggregates") {
  /** Over an already provided `Sqlite` opened with the store's migrations. */
  static readonly layerNoDeps = (config: {
    readonly environmentId: EnvironmentId
    readonly root?: string | undefined
  }): Layer.Layer<ProviderAggregates, never, Sqlite> => Layer.effect(ProviderAggregates, make(config))
  /** Over the database `file`. */
  static readonly layerSqlite = (
    file: string,
    config: { readonly environmentId: EnvironmentId; readonly root?: string | undefined },
    options?: Omit<SqliteOptions, "migrations">
  ): Layer.Layer<ProviderAggregates, StoreError> =>
    ProviderAggregates.layerNoDeps(config).pipe(Layer.provide(Sqlite.layer(file, sqliteOptions(options))))
}

const SQL = {
  byTransaction: "SELECT r.record_id, r.record_json, e.payload FROM records r LEFT JOIN provider_events e " +
    "ON e.record_id = r.record_id WHERE r.environment_id = ? AND r.transaction_id = ? LIMIT 1",
  insertEvent: "INSERT INTO provider_events (record_id, format, payload) VALUES (?, ?, ?)",
  recordById: "SELECT r.record_id, r.environment_id, r.record_json, e.format, e.payload FROM records r " +
    "LEFT JOIN provider_events e ON e.record_id = r.record_id WHERE r.record_id = ?"
} as const

const decodeDraft = Schema.decodeUnknownSync(RecordDraft)
const ID_PART = /^[A-Za-z0-9._:-]{1,200}$/
const DEFAULT_MODE = 0o644

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text)

/** How ingestion words a refused event path. */
const refusalDetail = (raw: string, root: string | undefined, refusal: PathRefusal): string => {
  switch (refusal) {
    case "absolute_without_root":
      return `${raw} is absolute and no workspace root is known`
    case "outside_workspace":
      return `${raw} is outside the workspace ${root}`
    case "escaping":
      return `${raw} leaves the workspace through '..'`
    case "empty":
    case "not_normalized":
      return `${raw} is not a normalized workspace-relative path`
  }
}

/** A path mapper for a workspace: the views' request-path rule (`workspacePathOf`), worded for ingestion. */
const mapperFor = (root: string | undefined): PathMapper => (raw) => {
  const mapped = workspacePathOf(root, raw)
  return Result.isSuccess(mapped) ? { path: mapped.success } : { refused: refusalDetail(raw, root, mapped.failure) }
}

/**
 * How ingestion words the first path of `changes` the default policy denies, or undefined:
 * forkjoin never records (nor later reads, to verify or to find gaps) what lies there.
 */
const deniedIn = (changes: ReadonlyArray<ClaimedChange>): string | undefined => {
  for (const c of changes) {
    for (const p of c.moveFrom === undefined ? [c.path] : [c.moveFrom, c.path]) {
      const glob = deniedByDefault(p)
      if (glob !== undefined) {
        return `${p} matches the denied pattern '${glob}' of the workspace policy, which forkjoin neither reads nor records; ingest events about other paths only`
      }
    }
  }
  return undefined
}

/** What an ingestion will write: the prepared record, its blobs and the raw event. */
interface Planned {
  readonly transactionId: string
  readonly prepared: PreparedRecord
  readonly blobs: ReadonlyArray<Uint8Array>
  readonly format: ProviderFormat
  readonly payload: string
}

/**
 * Builds the ingestion service.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (config: {
  readonly environmentId: EnvironmentId
  readonly root?: string | undefined
}): Effect.Effect<typeof ProviderAggregates.Service, never, Sqlite> =>
  Effect.gen(function*() {
    const sql = yield* Sqlite
    const env = config.environmentId
    const root = config.root === undefined ? undefined : fs.realpathSync(config.root)
    const mapPath = mapperFor(root)

    const plan = (operation: string, request: IngestRequest, index: number, now: number): Planned => {
      const where = index < 0 ? "" : ` (event ${index + 1})`
      const parsed = parseEvent(request.format, request.text, mapPath)
      if (typeof parsed === "string") {
        throw new IngestError({ operation, reason: "Malformed", detail: `${request.format}${where}: ${parsed}` })
      }
      if ("refused" in parsed) {
        throw new IngestError({ operation, reason: "PathRefused", detail: `${request.format}${where}: ${parsed.refused}` })
      }
      const denied = deniedIn(parsed.changes)
      if (denied !== undefined) throw new IngestError({ operation, reason: "PathDenied", detail: `${request.format}${where}: ${denied}` })
      // The same bytes as hashing format, NUL, text in turn: ids of stored events stay stable.
      const digest = sha256(`${request.format}\0${request.text}`).slice("sha256:".length)
      const id = request.id ?? `${request.format}-${digest.slice(0, 24)}`
      if (!ID_PART.test(id)) {
        throw new IngestError({ operation, reason: "Malformed", detail: `the event id ${JSON.stringify(id)} must be 1-200 of [A-Za-z0-9._:-]` })
      }
      const blobs: Array<Uint8Array> = []
      let assumedMode = false
      const snap = (text: string | undefined, mode: number | undefined): Snapshot | undefined => {
        if (text === undefined) return undefined
        const bytes = utf8(text)
        blobs.push(bytes)
        if (mode === undefined) assumedMode = true
        return snapshotOf(bytes, mode ?? DEFAULT_MODE)
      }
      const changes = parsed.changes.map((c: ClaimedChange): FileChange => {
        const before = c.kind === "add" ? undefined : snap(c.before, c.mode)
        const after = c.kind === "delete" ? undefined : snap(c.after, c.mode)
        return {
          kind: c.kind,
          path: c.path,
          ...(c.moveFrom === undefined ? {} : { moveFrom: c.moveFrom }),
          ...(before === undefined ? {} : { before }),
          ...(after === undefined ? {} : { after })
        } as FileChange
      })
      const warnings = parsed.problems.map((message) => ({ code: "unparsed_input", message }))
      if (assumedMode) warnings.push({ code: "mode_assumed", message: "the event carries no file mode; snapshots assume 0644" })
      let draft: RecordDraft
      try {
        draft = decodeDraft({
          recordId: `rec-pa-${randomUUID()}`,
          threadId: request.threadId,
          turnId: request.turnId,
          invocationId: request.invocationId ?? `provider-${id}`.slice(0, 256),
          environmentId: env,
          transactionId: `provider_aggregate:${id}`,
          authority: request.format === "codex-turn-diff" ? "codex_aggregate_event" : "managed_claude_patch_engine",
          provenance: "provider_aggregate",
          exactness: parsed.problems.length > 0 ? "uncertain" : "partial",
          outcome: "applied",
          changes,
          directoryEffects: [],
          warnings,
          links: {}
        })
      } catch (e) {
        throw new IngestError({
          operation,
          reason: "Malformed",
          detail: `${request.format}${where}: the event does not make a valid record: ${e instanceof Error ? e.message : String(e)}`,
          cause: e
        })
      }
      return {
        transactionId: draft.transactionId,
        prepared: prepareRecordSync(operation, draft, now),
        blobs,
        format: request.format,
        payload: request.text
      }
    }

    /** Writes planned ingestions in the current transaction; an id already stored with the same payload is reused. */
    const write = (c: Connection, operation: string, planned: ReadonlyArray<Planned>): Array<IngestOutcome> =>
      planned.map((p): IngestOutcome => {
        const existing = c.get<{ record_id: string; record_json: string; payload: string | null }>(
          SQL.byTransaction,
          env,
          p.transactionId
        )
        if (existing !== undefined) {
          if (existing.payload === p.payload) return { record: decodeRecordJsonRow(operation, existing), alreadyRecorded: true }
          throw new IngestError({
            operation,
            reason: "Conflict",
            detail: `${p.transactionId} is already recorded with a different event; give this event another id`
          })
        }
        insertBlobs(c, p.blobs)
        const ordinal = insertRecord(c, p.prepared, null)
        c.run(SQL.insertEvent, p.prepared.draft.recordId, p.format, p.payload)
        return { record: recordOf(p.prepared.draft, ordinal, p.prepared.committedAt), alreadyRecorded: false }
      })

    const guarded = <A>(body: () => Effect.Effect<A, StoreError>): Effect.Effect<A, IngestError | StoreError> =>
      Effect.suspend(() => {
        try {
          return body()
        } catch (e) {
          if (e instanceof IngestError || e instanceof StoreError) return Effect.fail(e)
          throw e
        }
      })

    /** `sql.transaction` whose body may throw `IngestError`: the throw rolls back, then it fails. */
    const transaction = <A>(operation: string, body: (c: Connection) => A): Effect.Effect<A, IngestError | StoreError> =>
      sql.transaction(operation, body).pipe(
        Effect.catchDefect((d) => (d instanceof IngestError ? Effect.fail(d) : Effect.die(d)))
      )

    const ingestOutcomes = (requests: ReadonlyArray<IngestRequest>) =>
      Effect.gen(function*() {
        const operation = "ProviderAggregates.ingest"
        const now = yield* Clock.currentTimeMillis
        const planned = yield* guarded(() =>
          Effect.succeed(requests.map((r, i) => plan(operation, r, requests.length === 1 ? -1 : i, now))))
        return yield* transaction(operation, (c) => write(c, operation, planned))
      })

    const ingestMany = (requests: ReadonlyArray<IngestRequest>) =>
      Effect.map(ingestOutcomes(requests), (outcomes) => outcomes.map((o) => o.record))
    const ingestWithStatus = (request: IngestRequest) => Effect.map(ingestOutcomes([request]), (outcomes) => outcomes[0]!)
    const ingest = (request: IngestRequest) => Effect.map(ingestWithStatus(request), (o) => o.record)

    // ------------------------------------------------------------------------- verify

    // Through the checked read: never a link (even one swapped in), never a denied folder.
    const readDisk = (p: string): { bytes: Uint8Array; mode: number } | undefined => {
      const read = readWorkspaceFile(root!, p)
      return typeof read === "object" ? read : undefined
    }

    /** Why a claimed path has no content to compare: missing, or something other than a regular file. */
    const notARegularFile = (abs: string): string => {
      try {
        const st = fs.lstatSync(abs)
        return st.isSymbolicLink()
          ? "is a symbolic link, not a regular file (forkjoin does not follow links when verifying)"
          : "is not a regular file"
      } catch {
        return "does not exist in the workspace"
      }
    }

    /** Undoes claimed hunks on the current text: the before text, or undefined when they do not match. */
    const reverse = (format: string, text: string, change: ClaimedChange): string | undefined => {
      if (format === "claude-tool-event") {
        let out = text
        for (const h of [...change.hunks].reverse()) {
          const n = h.new.join("\n")
          const o = h.old.join("\n")
          // Only an edit whose result occurs exactly once can be undone with certainty.
          const at = n === "" || h.all === true ? -1 : out.indexOf(n)
          if (at < 0 || out.indexOf(n, at + 1) >= 0) return undefined
          out = out.slice(0, at) + o + out.slice(at + n.length)
        }
        return out
      }
      const finalNewline = text.endsWith("\n")
      const lines = text.length === 0 ? [] : (finalNewline ? text.slice(0, -1) : text).split("\n")
      let from = 0
      const out: Array<string> = []
      for (const h of change.hunks) {
        let found = -1
        for (let i = from; i + h.new.length <= lines.length; i++) {
          let ok = true
          for (let k = 0; k < h.new.length; k++) {
            if (lines[i + k] !== h.new[k]) {
              ok = false
              break
            }
          }
          if (ok) {
            found = i
            break
          }
        }
        if (found < 0) return undefined
        out.push(...lines.slice(from, found), ...h.old)
        from = found + h.new.length
      }
      out.push(...lines.slice(from))
      return out.length === 0 ? "" : out.join("\n") + (finalNewline ? "\n" : "")
    }

    const verify = (recordId: string) =>
      Effect.gen(function*() {
        const operation = "ProviderAggregates.verify"
        if (root === undefined) {
          return yield* new IngestError({ operation, reason: "NotFound", detail: "verification needs the workspace root" })
        }
        // Decoded inside the read: a row that does not decode is a corrupt store (`StoreError`).
        const found = yield* sql.run(operation, (c) => {
          const row = c.get<
            { record_id: string; environment_id: string; record_json: string; format: string | null; payload: string | null }
          >(SQL.recordById, recordId)
          return row === undefined || row.environment_id !== env
            ? undefined
            : { row, aggregate: decodeRecordJsonRow(operation, row) }
        })
        if (found === undefined) {
          return yield* new IngestError({ operation, reason: "NotFound", detail: `no record ${recordId} in this workspace's history` })
        }
        const { aggregate, row } = found
        if (aggregate.provenance !== "provider_aggregate" || row.format === null || row.payload === null) {
          return yield* new IngestError({ operation, reason: "NotAggregate", detail: `${recordId} is not an ingested provider aggregate` })
        }
        const parsed = parseEvent(row.format as ProviderFormat, row.payload, mapPath)
        if (typeof parsed === "string" || "refused" in parsed) {
          const why = typeof parsed === "string" ? parsed : parsed.refused
          return yield* new IngestError({ operation, reason: "Malformed", detail: `the stored event no longer parses: ${why}` })
        }
        // An event stored before ingestion applied the policy: never read the denied file.
        const denied = deniedIn(parsed.changes)
        if (denied !== undefined) return yield* new IngestError({ operation, reason: "PathDenied", detail: denied })
        const blobs: Array<Uint8Array> = []
        const changes: Array<FileChange> = []
        const mismatches: Array<{ code: string; message: string; path: string }> = []
        for (const claimed of parsed.changes) {
          const disk = readDisk(claimed.path)
          const gone = (p: string) => readDisk(p) === undefined && !fs.existsSync(path.join(root, ...p.split("/")))
          const miss = (message: string) => mismatches.push({ code: "verification_mismatch", message, path: claimed.path })
          if (claimed.kind === "delete") {
            if (!gone(claimed.path)) miss(`${claimed.path} still exists, the event says it was deleted`)
            const before = claimed.before === undefined ? undefined : snapshotOf(utf8(claimed.before), claimed.mode ?? DEFAULT_MODE)
            if (before === undefined) miss(`${claimed.path}: the deleted content is not in the event`)
            else blobs.push(utf8(claimed.before!))
            changes.push({ kind: "delete", path: claimed.path, ...(before === undefined ? {} : { before }) } as FileChange)
            continue
          }
          if (disk === undefined) {
            miss(`${claimed.path} ${notARegularFile(path.join(root!, ...claimed.path.split("/")))}`)
            changes.push({ kind: claimed.kind, path: claimed.path, ...(claimed.moveFrom === undefined ? {} : { moveFrom: claimed.moveFrom }) } as FileChange)
            continue
          }
          if (claimed.moveFrom !== undefined && !gone(claimed.moveFrom)) miss(`${claimed.moveFrom} still exists after the claimed move`)
          const text = Buffer.from(disk.bytes).toString("utf8")
          let beforeText: string | undefined
          if (claimed.after !== undefined) {
            if (claimed.after !== text) miss(`${claimed.path} differs from the content the event claims`)
            beforeText = claimed.before
          } else {
            beforeText = reverse(row.format, text, claimed)
            if (beforeText === undefined) miss(`${claimed.path}: the claimed hunks are not in the workspace file`)
          }
          blobs.push(disk.bytes)
          const after = snapshotOf(disk.bytes, disk.mode)
          const before = claimed.kind === "add" || beforeText === undefined ? undefined : snapshotOf(utf8(beforeText), disk.mode)
          if (before !== undefined) blobs.push(utf8(beforeText!))
          if (claimed.kind !== "add" && before === undefined && claimed.after !== undefined) {
            miss(`${claimed.path}: the previous content is not known`)
          }
          changes.push({
            kind: claimed.kind,
            path: claimed.path,
            ...(claimed.moveFrom === undefined ? {} : { moveFrom: claimed.moveFrom }),
            ...(before === undefined ? {} : { before }),
            after
          } as FileChange)
        }
        const ok = mismatches.length === 0
        const now = yield* Clock.currentTimeMillis
        const draft = yield* Effect.try({
          try: () =>
            decodeDraft({
              recordId: `rec-verify-${randomUUID()}`,
              threadId: aggregate.threadId,
              turnId: aggregate.turnId,
              invocationId: aggregate.invocationId,
              environmentId: env,
              transactionId: `verification:${randomUUID()}`,
              authority: "native_patch_engine",
              provenance: "native_engine",
              exactness: ok ? "exact" : "uncertain",
              outcome: ok ? "applied" : "partial",
              changes,
              directoryEffects: [],
              warnings: mismatches,
              links: { verifies: aggregate.recordId }
            }),
          catch: (e) =>
            new IngestError({ operation, reason: "Malformed", detail: `cannot build the verification record: ${String(e)}`, cause: e })
        })
        const prepared = yield* guarded(() => Effect.succeed(prepareRecordSync(operation, draft, now)))
        const ordinal = yield* sql.transaction(operation, (c) => {
          insertBlobs(c, blobs)
          return insertRecord(c, prepared, null)
        })
        return recordOf(prepared.draft, ordinal, prepared.committedAt)
      })

    return ProviderAggregates.of({ ingest, ingestWithStatus, ingestMany, verify })
  })
