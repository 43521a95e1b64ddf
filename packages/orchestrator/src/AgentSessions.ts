/**
 * The agent sessions of a workspace (`forkjoin agent` and `forkjoin mcp`), each in its folder
 * `<workspace>/.forkjoin/runs/<agent-id>/`: its own record `session.json`
 * (`AgentSessionRecord`: kind, thread, provider, model, MCP client, start and end, an MCP
 * session's tool calls and runs) and, for `forkjoin agent`, `parent/transcript.json` and
 * `parent/trace.json`. Sessions from before `session.json` list from their transcript alone.
 * Files are read only as regular files under the runs folder, never through a link, and a
 * record that does not decode is no session. Writes go through `Artifacts.writeJson` (temp
 * file then rename): nothing here touches the workspace's own files. A session is live while
 * its process runs it: that process holds the session's lock (`live`, the lock a run takes,
 * under the session's id), which the OS releases when the process dies; `forkjoin gc` keeps a
 * live session's folder and the runs it started whatever their age, and a session with no end
 * whose lock nobody holds lists as `interrupted`.
 *
 * Owns the session record and how a session is read back. Does not own what a session does
 * (`@forkjoin/drivers`) nor who may see it (`Visibility`: a caller sees a session when it sees
 * its thread).
 *
 * @since 0.1.0
 */
import { Engine } from "@forkjoin/engine/Engine"
import { withStateLock } from "@forkjoin/engine/StateLock"
import { readCheckedFile } from "@forkjoin/patch/SafeRead"
import { relativeUnder } from "@forkjoin/patch/RelativePath"
import * as Artifacts from "@forkjoin/runtime/Artifacts"
import { MergeRunId } from "@forkjoin/schema/Ids"
import { Transcript } from "@forkjoin/schema/Transcript"
import { UtcTimestamp } from "@forkjoin/schema/UtcTimestamp"
import {
  type AgentSession,
  type AgentSessionDetail,
  AgentSessionRecord,
  type AgentToolCall
} from "@forkjoin/schema/WorkspaceIndex"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as path from "node:path"
import * as RunLock from "./internal/runLock.ts"

/** The prefix of `forkjoin agent` session ids (and their folders). */
export const AGENT_PREFIX = "agent-"

/** The prefix of `forkjoin mcp` session ids (and their folders). */
export const MCP_PREFIX = "mcp-"

/** The session's own record in its folder. */
export const RECORD_FILE = "session.json"

/** The folder holding every run's and session's artifacts: `<root>/.forkjoin/runs`. */
const runsFolderOf = (root: string): string => path.join(root, ".forkjoin", "runs")

/**
 * Writes (or rewrites) a session's record into its folder.
 *
 * @category constructors
 * @since 0.1.0
 */
export const writeRecord = (root: string, record: AgentSessionRecord): Effect.Effect<string, Artifacts.ArtifactError> =>
  Artifacts.writeJson(Artifacts.defaultRunDirectory(root, record.agentId), RECORD_FILE, Schema.encodeSync(AgentSessionRecord)(record))

/**
 * Runs `effect` holding session `agentId`'s lock (`internal/runLock.ts`, as a run holds its
 * own), so the session is live until `effect` ends or its process dies. A lock that cannot be
 * taken (the state folder is not writable, or another process holds this id) is an
 * `ArtifactError` naming it, and `effect` does not run.
 *
 * @category constructors
 * @since 0.1.0
 */
export const live = <A, E, R>(agentId: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | Artifacts.ArtifactError, R | Engine> =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const lock = RunLock.lockFileOf(engine.root, agentId)
    const refused = (detail: string, cause?: unknown) =>
      new Artifacts.ArtifactError({ operation: "Locking the agent session", path: lock, detail, ...(cause === undefined ? {} : { cause }) })
    // The session's own failures travel inside the Result: only the lock's are mapped here.
    const held = yield* RunLock.ifIdle(agentId, Effect.result(effect)).pipe(Effect.mapError((e) => refused(e.message, e)))
    if (Option.isNone(held)) return yield* refused("another process holds this session")
    return yield* Effect.fromResult(held.value)
  })

/**
 * Holds session `agentId`'s lock (see `live`) until the current scope closes: for a session
 * whose end is its scope's (an MCP connection). Resolves once the lock is held.
 *
 * @category constructors
 * @since 0.1.0
 */
export const liveScoped = (agentId: string): Effect.Effect<void, Artifacts.ArtifactError, Engine | Scope.Scope> =>
  Effect.gen(function*() {
    const held = yield* Deferred.make<void, Artifacts.ArtifactError>()
    yield* live(agentId, Effect.andThen(Deferred.succeed(held, undefined), Effect.never)).pipe(
      Effect.catch((e) => Deferred.fail(held, e)),
      Effect.forkScoped
    )
    yield* Deferred.await(held)
  })

/**
 * Whether a process runs session `agentId` right now (holds its lock). Asked without waiting;
 * a lock that cannot be opened reads as not live.
 *
 * @category constructors
 * @since 0.1.0
 */
export const isLive = (agentId: string): Effect.Effect<boolean, never, Engine> =>
  RunLock.ifIdle(agentId, Effect.void).pipe(Effect.map(Option.isNone), Effect.orElseSucceed(() => false))

/**
 * The record `session.json` of session `agentId` under the workspace at `root`, when it is
 * a regular file that decodes and names that session.
 *
 * @category constructors
 * @since 0.1.0
 */
export const readRecord = (root: string, agentId: string): Effect.Effect<AgentSessionRecord | undefined> =>
  Effect.sync(() => {
    const runsFolder = runsFolderOf(root)
    if (!isFolder(path.join(runsFolder, agentId))) return undefined
    const text = readUnder(runsFolder, path.join(runsFolder, agentId, RECORD_FILE))
    const record = text === undefined ? undefined : Option.getOrUndefined(decodeRecord(text))
    return record?.agentId === agentId ? record : undefined
  })

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
const decodeRecord = Schema.decodeUnknownOption(Schema.fromJsonString(AgentSessionRecord))
const RunData = Schema.Struct({ runId: MergeRunId })
const decodeRunData = Schema.decodeUnknownOption(RunData)
const ToolOutcome = Schema.Struct({ ok: Schema.optionalKey(Schema.Boolean), message: Schema.optionalKey(Schema.String) })
const decodeToolOutcome = Schema.decodeUnknownOption(ToolOutcome)

const hasKey = (value: unknown, key: string): boolean => typeof value === "object" && value !== null && key in value

/**
 * The run a `run_subagents` observation's data names, if any.
 *
 * @category constructors
 * @since 0.1.0
 */
export const runIdOf = (data: unknown): MergeRunId | undefined => Option.getOrUndefined(Option.map(decodeRunData(data), (d) => d.runId))

/**
 * A tool call as a session lists it: its name and parameters, whether it failed (the
 * observation's `ok`, else whether the result was a failure; null without a result) and the
 * result's message.
 *
 * @category constructors
 * @since 0.1.0
 */
export const toolCallOf = (name: string, params: unknown, result: { readonly value: unknown; readonly isFailure: boolean } | undefined): AgentToolCall => {
  const outcome = result === undefined ? Option.none() : decodeToolOutcome(result.value)
  const ok = result === undefined ? null : Option.isSome(outcome) && outcome.value.ok !== undefined ? outcome.value.ok : !result.isFailure
  return { name, params, ok, message: Option.isSome(outcome) && outcome.value.message !== undefined ? outcome.value.message : null }
}

/** What the session's record says about it, or the nulls of a session older than the record. */
const fromRecord = (record: AgentSessionRecord | undefined) => ({
  threadId: record?.threadId ?? null,
  provider: record?.provider ?? null,
  model: record?.model ?? null,
  ...(record?.client === undefined ? {} : { client: record.client }),
  startedAt: record?.startedAt ?? null
})

/** A `forkjoin agent` session from its transcript and trace (and its record when there is one). */
const readAgent = (runsFolder: string, agentId: string, record: AgentSessionRecord | undefined): AgentSessionDetail | undefined => {
  const parent = path.join(runsFolder, agentId, "parent")
  const transcriptFile = path.join(parent, "transcript.json")
  const transcriptText = isFolder(parent) ? readUnder(runsFolder, transcriptFile) : undefined
  if (transcriptText === undefined) {
    // Started, not ended (or killed before its transcript): the record alone.
    return record === undefined ? undefined : { session: { ...sessionOfRecord(record, ""), transcript: transcriptFile }, toolCalls: [], messages: [] }
  }
  const transcript = decodeTranscript(transcriptText)
  if (Option.isNone(transcript)) return undefined
  const traceText = readUnder(runsFolder, path.join(parent, "trace.json"))
  const trace = traceText === undefined ? Option.none() : decodeTrace(traceText)
  const t = transcript.value
  const steps = Option.isSome(trace) ? trace.value.steps : []
  const hostSteps = Option.isSome(trace) ? trace.value.hostSteps : []
  const runIds = hostSteps.flatMap((s) => {
    const runId = hasKey(s.action, "run_subagents") ? runIdOf(s.observation.data) : undefined
    return runId === undefined ? [] : [runId]
  })
  const last = steps[steps.length - 1]
  const finished = last !== undefined && hasKey(last.action, "finish") && last.observation.ok
  const results = new Map(t.messages.flatMap((m) => m.toolResults ?? []).map((r) => [r.id, r]))
  const toolCalls = t.messages.flatMap((m) => m.toolCalls ?? []).map((call) => {
    const result = results.get(call.id)
    return toolCallOf(call.name, call.params, result === undefined ? undefined : { value: result.result, isFailure: result.isFailure })
  })
  const session: AgentSession = {
    agentId,
    kind: "agent",
    ...fromRecord(record),
    task: t.messages.find((m) => m.role === "user")?.text ?? "",
    status: t.stop !== undefined ? "stopped" : finished ? "finished" : "ended",
    ...(t.stop === undefined ? {} : { stop: t.stop }),
    steps: steps.length + hostSteps.length,
    usage: t.usage,
    runIds,
    endedAt: record?.endedAt ?? UtcTimestamp.make(fs.statSync(transcriptFile).mtime.toISOString()),
    transcript: transcriptFile
  }
  return { session, toolCalls, messages: t.messages }
}

/** A session as its record alone tells it (an MCP session, or an agent that has not ended). */
const sessionOfRecord = (record: AgentSessionRecord, transcript: string): AgentSession => ({
  agentId: record.agentId,
  kind: record.kind,
  ...fromRecord(record),
  task: "",
  status: record.endedAt === null ? "running" : "ended",
  steps: record.toolCalls.length,
  usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0 },
  runIds: record.runIds,
  endedAt: record.endedAt,
  transcript
})

/** One session's summary and detail from its folder, or undefined when it keeps none that decodes. */
const readSession = (runsFolder: string, agentId: string): AgentSessionDetail | undefined => {
  const folder = path.join(runsFolder, agentId)
  if (!isFolder(folder)) return undefined
  const recordFile = path.join(folder, RECORD_FILE)
  const recordText = readUnder(runsFolder, recordFile)
  const record = recordText === undefined ? undefined : Option.getOrUndefined(decodeRecord(recordText))
  // A record naming another session or another kind than its folder's is not this session's.
  if (record !== undefined && (record.agentId !== agentId || !agentId.startsWith(record.kind === "mcp" ? MCP_PREFIX : AGENT_PREFIX))) return undefined
  if (agentId.startsWith(AGENT_PREFIX)) return readAgent(runsFolder, agentId, record)
  return record === undefined ? undefined : { session: sessionOfRecord(record, recordFile), toolCalls: record.toolCalls, messages: [] }
}

/**
 * The ids of the sessions kept under the workspace at `root`: the names of its session folders
 * (real folders named `agent-…` or `mcp-…`), without reading what they hold.
 *
 * @category constructors
 * @since 0.1.0
 */
export const listIds = (root: string): Effect.Effect<ReadonlyArray<string>> =>
  Effect.sync(() => {
    const runsFolder = runsFolderOf(root)
    if (!isFolder(runsFolder)) return []
    return fs.readdirSync(runsFolder).filter((name) => (name.startsWith(AGENT_PREFIX) || name.startsWith(MCP_PREFIX)) && isFolder(path.join(runsFolder, name)))
  })

/** When a session is placed in the list: its start, else its end. */
const orderKey = (s: AgentSession): string => s.startedAt ?? s.endedAt ?? ""

/**
 * Every agent session of the workspace at `root` (`forkjoin agent` and `forkjoin mcp`),
 * oldest first (by when it started, else when it ended), with its tool calls and messages.
 *
 * @category constructors
 * @since 0.1.0
 */
export const readAll = (root: string): Effect.Effect<ReadonlyArray<AgentSessionDetail>> =>
  Effect.flatMap(listIds(root), (names) =>
    Effect.map(
      Effect.forEach(names.flatMap((name) => {
        const detail = readSession(runsFolderOf(root), name)
        return detail === undefined ? [] : [detail]
      }), (detail) => unlessAbandoned(root, detail)),
      (details) => [...details].sort((a, b) => orderKey(a.session).localeCompare(orderKey(b.session)) || a.session.agentId.localeCompare(b.session.agentId))
    ))

/**
 * A session with no end recorded, as `interrupted` when no process holds its lock (its process
 * died without recording an end), read again under that lock so a session that ends meanwhile
 * reads as ended. A held lock, or one that cannot be opened, leaves it `running`; so does a
 * session without a lock file (from a build that took none), which this never creates.
 */
const unlessAbandoned = (root: string, detail: AgentSessionDetail): Effect.Effect<AgentSessionDetail> => {
  const agentId = detail.session.agentId
  const lock = RunLock.lockFileOf(root, agentId)
  if (detail.session.status !== "running" || !fs.existsSync(lock)) return Effect.succeed(detail)
  return withStateLock(lock, { timeoutMs: 0, paths: [] }, Effect.sync(() => readSession(runsFolderOf(root), agentId))).pipe(
    Effect.map((again) =>
      again === undefined ? detail : again.session.status === "running" ? { ...again, session: { ...again.session, status: "interrupted" as const } } : again
    ),
    Effect.orElseSucceed(() => detail)
  )
}
