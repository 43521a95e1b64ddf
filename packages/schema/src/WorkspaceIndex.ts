/**
 * Where a workspace's records are: one summary per thread (its parent, how many records and
 * when), and the agent sessions (`forkjoin agent`, `forkjoin mcp`) kept in
 * `.forkjoin/runs/<agent-id>/` with their `session.json` (`AgentSessionRecord`). These answer
 * "where did my records go" (`forkjoin history threads`, `forkjoin agents`, the gateway's
 * `/v1/agents`); the records themselves are `PatchHistoryRecord`s and the joins `MergeRun`s.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { MergeRunId, ThreadId } from "./Ids.ts"
import { MergeRun } from "./MergeRun.ts"
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
 * How a session ended, read from its artifacts: `finished` (a `forkjoin agent` whose `finish`
 * was accepted), `stopped` (its driver stopped it: `stop` says why), `ended` (it ended
 * otherwise: a timeout, a failed tool the model never finished after, an MCP client that
 * disconnected), `running` (no end is recorded and its process runs it) or `interrupted` (no
 * end is recorded and no process runs it any more: it was killed).
 *
 * @category models
 * @since 0.1.0
 */
export const AgentSessionStatus = Schema.Literals(["finished", "stopped", "ended", "running", "interrupted"])

/**
 * @category models
 * @since 0.1.0
 */
export type AgentSessionStatus = typeof AgentSessionStatus.Type

/**
 * What drove a session: `agent` (a `forkjoin agent` parent model) or `mcp` (an MCP client of
 * `forkjoin mcp`).
 *
 * @category models
 * @since 0.1.0
 */
export const AgentSessionKind = Schema.Literals(["agent", "mcp"])

/**
 * @category models
 * @since 0.1.0
 */
export type AgentSessionKind = typeof AgentSessionKind.Type

/**
 * The MCP client as it named itself in `initialize` (`clientInfo`).
 *
 * @category models
 * @since 0.1.0
 */
export const McpClientInfo = Schema.Struct({ name: Schema.String, version: Schema.String })

/**
 * One session as `forkjoin agents` lists it: its kind, thread, provider and model (null when
 * not recorded: a session older than its `session.json`, or an MCP server without a model),
 * the MCP client, the task (empty for an MCP session), how it ended, its steps, tokens, the
 * joins it started, when it started and ended (null when not recorded), and the file that
 * keeps it (a `forkjoin agent`'s transcript, an MCP session's `session.json`).
 *
 * @category models
 * @since 0.1.0
 */
export const AgentSession = Schema.Struct({
  agentId: Schema.String,
  kind: AgentSessionKind,
  threadId: Schema.NullOr(ThreadId),
  provider: Schema.NullOr(Schema.String),
  model: Schema.NullOr(Schema.String),
  client: Schema.optionalKey(McpClientInfo),
  task: Schema.String,
  status: AgentSessionStatus,
  stop: Schema.optionalKey(Schema.Struct({ reason: StopReason, message: Schema.String })),
  steps: Count,
  usage: TokenUsage,
  runIds: Schema.Array(MergeRunId),
  startedAt: Schema.NullOr(UtcTimestamp),
  endedAt: Schema.NullOr(UtcTimestamp),
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
 * A session's own record, `.forkjoin/runs/<agent-id>/session.json` (schemaVersion 1), written
 * when it starts and again as it goes and when it ends: its kind, thread, provider and model
 * (null when none was configured), the MCP client, when it started and ended (null until it
 * does). An MCP session keeps its tool calls and the runs they started here; a `forkjoin
 * agent`'s are in its transcript and trace, so here they stay empty. Sessions from before
 * this record have only their transcript and still list, with what it cannot tell as null.
 *
 * @category models
 * @since 0.1.0
 */
export const AgentSessionRecord = Schema.Struct({
  schemaVersion: Schema.Literal(1),
  kind: AgentSessionKind,
  agentId: Schema.String,
  threadId: ThreadId,
  provider: Schema.NullOr(Schema.String),
  model: Schema.NullOr(Schema.String),
  client: Schema.optionalKey(McpClientInfo),
  startedAt: UtcTimestamp,
  endedAt: Schema.NullOr(UtcTimestamp),
  toolCalls: Schema.Array(AgentToolCall),
  runIds: Schema.Array(MergeRunId)
})

/**
 * @category models
 * @since 0.1.0
 */
export type AgentSessionRecord = typeof AgentSessionRecord.Type

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

/**
 * `forkjoin agents --json` and `GET /v1/agents`: every session the reader may see, oldest first.
 *
 * @category models
 * @since 0.1.0
 */
export const AgentsList = Schema.Struct({ ok: Schema.Literal(true), agents: Schema.Array(AgentSession) })

/**
 * @category models
 * @since 0.1.0
 */
export type AgentsList = typeof AgentsList.Type

/**
 * `forkjoin agents ID --json` and `GET /v1/agents/{agentId}`: one session in full and the runs
 * it started (oldest first).
 *
 * @category models
 * @since 0.1.0
 */
export const AgentShow = Schema.Struct({ ok: Schema.Literal(true), agent: AgentSessionDetail, runs: Schema.Array(MergeRun) })

/**
 * @category models
 * @since 0.1.0
 */
export type AgentShow = typeof AgentShow.Type
