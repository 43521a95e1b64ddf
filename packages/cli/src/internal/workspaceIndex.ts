/**
 * What `forkjoin runs`, `forkjoin agents` and `forkjoin history threads` read besides the
 * records: the `forkjoin agent` sessions kept in `<workspace>/.forkjoin/runs/agent-<id>/parent/`
 * (`transcript.json` and `trace.json`, read only as regular files under that folder, never
 * through a link), the workspace's merge runs, and which run and session made a thread.
 * Reads only: nothing here writes.
 */
import { readCheckedFile } from "@forkjoin/patch/SafeRead"
import { relativeUnder } from "@forkjoin/patch/RelativePath"
import { MergeStore } from "@forkjoin/history/MergeStore"
import * as MergeStoreSqlite from "@forkjoin/history/MergeStoreSqlite"
import type { EnvironmentId } from "@forkjoin/schema/Ids"
import { MergeRunId } from "@forkjoin/schema/Ids"
import type { MergeRun } from "@forkjoin/schema/MergeRun"
import { Transcript } from "@forkjoin/schema/Transcript"
import { UtcTimestamp } from "@forkjoin/schema/UtcTimestamp"
import { type AgentSession, type AgentSessionDetail, type AgentToolCall } from "@forkjoin/schema/WorkspaceIndex"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import { toHistoryCommandError } from "./errors.ts"

/** The folder holding every run's and session's artifacts. */
const runsFolderOf = (root: string): string => path.join(root, ".forkjoin", "runs")

/** The prefix `forkjoin agent` gives its session ids (and their artifact folders). */
export const AGENT_PREFIX = "agent-"

/** The text of a regular file under `folder`, never through a link; undefined when there is none. */
const readUnder = (folder: string, file: string): string | undefined => {
  const stat = fs.lstatSync(file, { throwIfNoEntry: false })
  if (stat === undefined || !stat.isFile()) return undefined
  const read = readCheckedFile(file, stat, (landed) => relativeUnder(folder, landed) !== undefined)
  return Result.isSuccess(read) ? Buffer.from(read.success).toString("utf8") : undefined
}

/** A folder entry that is a real folder (a link is skipped). */
const isFolder = (p: string): boolean => fs.lstatSync(p, { throwIfNoEntry: false })?.isDirectory() === true

// The part of a parent's `trace.json` read here (written by the parent session).
const Trace = Schema.Struct({
  steps: Schema.Array(Schema.Struct({ action: Schema.Unknown, observation: Schema.Struct({ ok: Schema.Boolean }) })),
  hostSteps: Schema.Array(Schema.Struct({
    action: Schema.Unknown,
    observation: Schema.Struct({ ok: Schema.Boolean, data: Schema.optionalKey(Schema.Unknown) })
  }))
})
const decodeTrace = Schema.decodeUnknownOption(Schema.fromJsonString(Trace))
const decodeTranscript = Schema.decodeUnknownOption(Schema.fromJsonString(Transcript))
const RunData = Schema.Struct({ runId: MergeRunId })
const decodeRunData = Schema.decodeUnknownOption(RunData)
const ToolOutcome = Schema.Struct({ ok: Schema.optionalKey(Schema.Boolean), message: Schema.optionalKey(Schema.String) })
const decodeToolOutcome = Schema.decodeUnknownOption(ToolOutcome)

const hasKey = (value: unknown, key: string): boolean => typeof value === "object" && value !== null && key in value

/** One session's summary and detail from its folder, or undefined when its transcript is missing or unreadable. */
const readSession = (runsFolder: string, agentId: string): AgentSessionDetail | undefined => {
  const parent = path.join(runsFolder, agentId, "parent")
  if (!isFolder(path.join(runsFolder, agentId)) || !isFolder(parent)) return undefined
  const transcriptFile = path.join(parent, "transcript.json")
  const transcriptText = readUnder(runsFolder, transcriptFile)
  if (transcriptText === undefined) return undefined
  const transcript = decodeTranscript(transcriptText)
  if (transcript._tag === "None") return undefined
  const traceText = readUnder(runsFolder, path.join(parent, "trace.json"))
  const trace = traceText === undefined ? undefined : decodeTrace(traceText)
  const t = transcript.value
  const steps = trace?._tag === "Some" ? trace.value.steps : []
  const hostSteps = trace?._tag === "Some" ? trace.value.hostSteps : []
  const runIds = hostSteps.flatMap((s) => {
    if (!hasKey(s.action, "run_subagents")) return []
    const data = decodeRunData(s.observation.data)
    return data._tag === "Some" ? [data.value.runId] : []
  })
  const last = steps[steps.length - 1]
  const finished = last !== undefined && hasKey(last.action, "finish") && last.observation.ok
  const results = new Map(t.messages.flatMap((m) => m.toolResults ?? []).map((r) => [r.id, r]))
  const toolCalls: Array<AgentToolCall> = t.messages.flatMap((m) => m.toolCalls ?? []).map((call) => {
    const result = results.get(call.id)
    const outcome = result === undefined ? undefined : decodeToolOutcome(result.result)
    const ok = result === undefined ? null : outcome?._tag === "Some" && outcome.value.ok !== undefined ? outcome.value.ok : !result.isFailure
    return {
      name: call.name,
      params: call.params,
      ok,
      message: outcome?._tag === "Some" && outcome.value.message !== undefined ? outcome.value.message : null
    }
  })
  const session: AgentSession = {
    agentId,
    task: t.messages.find((m) => m.role === "user")?.text ?? "",
    status: t.stop !== undefined ? "stopped" : finished ? "finished" : "ended",
    ...(t.stop === undefined ? {} : { stop: t.stop }),
    steps: steps.length + hostSteps.length,
    usage: t.usage,
    runIds,
    endedAt: UtcTimestamp.make(fs.statSync(transcriptFile).mtime.toISOString()),
    transcript: transcriptFile
  }
  return { session, toolCalls, messages: t.messages }
}

/**
 * Every `forkjoin agent` session of the workspace at `root`, oldest first (by when it ended),
 * with its tool calls and messages.
 *
 * @category constructors
 * @since 0.1.0
 */
export const readAgentSessions = (root: string): Effect.Effect<ReadonlyArray<AgentSessionDetail>> =>
  Effect.sync(() => {
    const runsFolder = runsFolderOf(root)
    if (!isFolder(runsFolder)) return []
    return fs.readdirSync(runsFolder)
      .filter((name) => name.startsWith(AGENT_PREFIX))
      .flatMap((name) => {
        const detail = readSession(runsFolder, name)
        return detail === undefined ? [] : [detail]
      })
      .sort((a, b) => a.session.endedAt.localeCompare(b.session.endedAt) || a.session.agentId.localeCompare(b.session.agentId))
  })

/**
 * The merge runs of environment `environmentId` in the database `db` (which must exist),
 * oldest first.
 *
 * @category constructors
 * @since 0.1.0
 */
export const readRuns = (db: string, environmentId: EnvironmentId) =>
  Effect.flatMap(MergeStore, (store) => store.listRuns({ environmentId })).pipe(
    Effect.map((runs) => [...runs].reverse()),
    Effect.provide(MergeStoreSqlite.layerSqlite(db)),
    Effect.mapError(toHistoryCommandError("read"))
  )

/**
 * Who made a thread: the run it belongs to (its own thread or a child's, `<run-id>/<task-id>`),
 * that child, and the agent session that started the run.
 *
 * @category models
 * @since 0.1.0
 */
export interface ThreadOrigin {
  readonly runId: MergeRunId
  readonly childId?: string
  readonly agentId?: string
}

/**
 * The origin of every thread a run made, from the runs and the sessions that started them.
 *
 * @category combinators
 * @since 0.1.0
 */
export const threadOrigins = (runs: ReadonlyArray<MergeRun>, sessions: ReadonlyArray<AgentSessionDetail>): ReadonlyMap<string, ThreadOrigin> => {
  const agentOf = startedBy(sessions)
  const origins = new Map<string, ThreadOrigin>()
  for (const run of runs) {
    const agentId = agentOf.get(run.runId)
    const by = agentId === undefined ? {} : { agentId }
    origins.set(run.threadId, { runId: run.runId, ...by })
    for (const o of run.outcomes) origins.set(`${run.threadId}/${o.childId}`, { runId: run.runId, childId: o.childId, ...by })
  }
  return origins
}

/**
 * Which session started each run, by run id.
 *
 * @category combinators
 * @since 0.1.0
 */
export const startedBy = (sessions: ReadonlyArray<AgentSessionDetail>): ReadonlyMap<string, string> =>
  new Map(sessions.flatMap((s) => s.session.runIds.map((runId) => [runId, s.session.agentId] as const)))
