/**
 * Where a workspace's records are: one summary per thread (its parent, how many records and
 * when), and the `forkjoin agent` sessions kept in `.forkjoin/runs/agent-<id>`. These answer
 * "where did my records go" (`forkjoin history threads`, `forkjoin agents`); the records
 * themselves are `PatchHistoryRecord`s and the joins `MergeRun`s.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { MergeRunId, ThreadId } from "./Ids.ts"
import { StopReason, TokenUsage, TranscriptEntry } from "./Transcript.ts"
import { UtcTimestamp } from "./UtcTimestamp.ts"
import { ViewCaps } from "./HistoryViews.ts"

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * One thread of a workspace: its parent (null for a root such as `cli` or `agent`), its
 * records in this environment and the commit times of its first and last (null when it has
 * none, e.g. a run's own thread, whose records are its children's).
 *
 * @category models
 * @since 0.1.0
 */
export const ThreadSummary = Schema.Struct({
  threadId: ThreadId,
  parentThreadId: Schema.NullOr(ThreadId),
  records: Count,
  firstRecordAt: Schema.NullOr(UtcTimestamp),
  lastRecordAt: Schema.NullOr(UtcTimestamp)
})

/**
 * @category models
 * @since 0.1.0
 */
export type ThreadSummary = typeof ThreadSummary.Type

/**
 * One page of the threads view, ordered by thread id.
 *
 * @category models
 * @since 0.1.0
 */
export const ThreadsPage = Schema.Struct({
  items: Schema.Array(ThreadSummary),
  truncated: Schema.Boolean,
  nextCursor: Schema.NullOr(Schema.String),
  caps: ViewCaps
})

/**
 * @category models
 * @since 0.1.0
 */
export type ThreadsPage = typeof ThreadsPage.Type

/**
 * How a `forkjoin agent` session ended, read from its artifacts: `finished` (its `finish`
 * was accepted), `stopped` (its driver stopped it: `stop` says why) or `ended` (it ended
 * otherwise, e.g. a timeout or a failed tool the model never finished after).
 *
 * @category models
 * @since 0.1.0
 */
export const AgentSessionStatus = Schema.Literals(["finished", "stopped", "ended"])

/**
 * @category models
 * @since 0.1.0
 */
export type AgentSessionStatus = typeof AgentSessionStatus.Type

/**
 * One `forkjoin agent` session as its artifacts (`.forkjoin/runs/<agentId>/parent/`) keep it:
 * the task, how it ended, its steps (session and tool steps), tokens, the joins it started
 * and when its transcript was written (the session's end).
 *
 * @category models
 * @since 0.1.0
 */
export const AgentSession = Schema.Struct({
  agentId: Schema.String,
  task: Schema.String,
  status: AgentSessionStatus,
  stop: Schema.optionalKey(Schema.Struct({ reason: StopReason, message: Schema.String })),
  steps: Count,
  usage: TokenUsage,
  runIds: Schema.Array(MergeRunId),
  endedAt: UtcTimestamp,
  transcript: Schema.String
})

/**
 * @category models
 * @since 0.1.0
 */
export type AgentSession = typeof AgentSession.Type

/**
 * One tool call of a session, in order, with whether it failed and its result's message.
 *
 * @category models
 * @since 0.1.0
 */
export const AgentToolCall = Schema.Struct({
  name: Schema.String,
  params: Schema.Unknown,
  ok: Schema.NullOr(Schema.Boolean),
  message: Schema.NullOr(Schema.String)
})

/**
 * @category models
 * @since 0.1.0
 */
export type AgentToolCall = typeof AgentToolCall.Type

/**
 * A session in full (`forkjoin agents ID`): the summary, every tool call and the transcript's messages.
 *
 * @category models
 * @since 0.1.0
 */
export const AgentSessionDetail = Schema.Struct({
  session: AgentSession,
  toolCalls: Schema.Array(AgentToolCall),
  messages: Schema.Array(TranscriptEntry)
})

/**
 * @category models
 * @since 0.1.0
 */
export type AgentSessionDetail = typeof AgentSessionDetail.Type
