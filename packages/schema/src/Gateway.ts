/**
 * The bodies of the gateway's HTTP API (`forkjoin serve`) that are not records of their own:
 * the request envelopes (apply, resolve, provider events, view grants) and the responses that
 * combine records. Records themselves (patch history records, view pages, merge runs,
 * conflicts) are their own schemas; these only wrap them.
 *
 * @since 0.1.0
 */
import { ConflictRecord } from "./Conflict.ts"
import { ThreadIdInput, TurnIdInput } from "./Ids.ts"
import { ChildOutcome, MergeRun } from "./MergeRun.ts"
import { PatchHistoryRecord } from "./PatchHistoryRecord.ts"
import * as Schema from "effect/Schema"

/**
 * `POST /v1/apply`: a patch applied in the name of `thread` (default: the token's; else one
 * the token sees).
 *
 * @category models
 * @since 0.1.0
 */
export const ApplyRequest = Schema.Struct({
  patch: Schema.String,
  thread: Schema.optionalKey(ThreadIdInput),
  turn: TurnIdInput,
  invocation: Schema.optionalKey(Schema.String),
  profile: Schema.optionalKey(Schema.Literals(["native", "codex"])),
  allowOverwrite: Schema.optionalKey(Schema.Boolean)
})

/**
 * @category models
 * @since 0.1.0
 */
export type ApplyRequest = typeof ApplyRequest.Type

/**
 * `POST /v1/conflicts/{conflictId}/resolve`: `apply` (the child's side of the conflicting hunks
 * onto the live file; the child's whole file for a conflict without hunks), `discard` (keep the
 * live file), or `content` (the merged text, UTF-8).
 *
 * @category models
 * @since 0.1.0
 */
export const ResolveRequest = Schema.Struct({
  kind: Schema.Literals(["apply", "discard", "content"]),
  content: Schema.optionalKey(Schema.String)
})

/**
 * What a resolution did: the conflict as now stored, the record it applied (none for
 * `discard`), and the child's outcome when it was its last open conflict.
 *
 * @category models
 * @since 0.1.0
 */
export const ResolveResponse = Schema.Struct({
  conflict: ConflictRecord,
  record: Schema.optionalKey(PatchHistoryRecord),
  outcome: Schema.optionalKey(ChildOutcome)
})

/**
 * `POST /v1/provider-events`: one provider event (a Codex turn diff or a Claude tool event, as
 * raw text) recorded as a provider aggregate.
 *
 * @category models
 * @since 0.1.0
 */
export const IngestRequest = Schema.Struct({
  format: Schema.Literals(["codex-turn-diff", "claude-tool-event"]),
  text: Schema.String,
  thread: Schema.optionalKey(ThreadIdInput),
  turn: TurnIdInput,
  id: Schema.optionalKey(Schema.String)
})

/**
 * The ingested event's record and whether it had been recorded before.
 *
 * @category models
 * @since 0.1.0
 */
export const IngestResponse = Schema.Struct({ record: PatchHistoryRecord, alreadyRecorded: Schema.Boolean })

/**
 * `POST /v1/threads/{thread}/view-grants`: one workspace-relative path, optionally a line and
 * column to mark.
 *
 * @category models
 * @since 0.1.0
 */
export const ViewGrantRequest = Schema.Struct({
  path: Schema.String,
  line: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10_000_000 }))),
  column: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100_000 })))
})

/**
 * @category models
 * @since 0.1.0
 */
export type ViewGrantRequest = typeof ViewGrantRequest.Type

/**
 * A view grant: the credential itself, the URL to fetch (`/view/{grant}`), and its expiry.
 *
 * @category models
 * @since 0.1.0
 */
export const ViewGrantResponse = Schema.Struct({ grant: Schema.String, url: Schema.String, expiresAt: Schema.String })

/**
 * A run with its conflicts.
 *
 * @category models
 * @since 0.1.0
 */
export const RunDetail = Schema.Struct({ run: MergeRun, conflicts: Schema.Array(ConflictRecord) })
