/**
 * `forkjoin agents` and `forkjoin agents ID`: the agent sessions of a workspace (`forkjoin
 * agent` and `forkjoin mcp`) as their artifacts keep them (`@forkjoin/orchestrator/AgentSessions`):
 * kind, provider and model, task or MCP client, status, when, steps and tokens; one session in
 * full adds its tool calls, the runs it started and their children. Text output shows session
 * and run ids shortened (`internal/shortIds.ts`), `--json` whole; `agents ID` takes either. Reads
 * only. The flags are in `AgentsCommand.ts`.
 *
 * @since 0.1.0
 */
import { environmentIdOf } from "@forkjoin/engine/Engine"
import { sqliteOptions } from "@forkjoin/history/HistoryStoreSqlite"
import { Sqlite } from "@forkjoin/history/Sqlite"
import type { MergeRun } from "@forkjoin/schema/MergeRun"
import { type AgentSession, type AgentSessionDetail, AgentShow as AgentShowJson, AgentsList } from "@forkjoin/schema/WorkspaceIndex"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import { UsageError } from "./internal/errors.ts"
import * as ShortIds from "./internal/shortIds.ts"
import { readAgentSessions, readRuns } from "./internal/workspaceIndex.ts"
import { historyDbOf, resolveWorkspace } from "./internal/workspace.ts"

/**
 * Every session of the workspace, oldest first.
 *
 * @category constructors
 * @since 0.1.0
 */
export const list = Effect.fn("Agents.list")(function*(request: { readonly workspace: string }) {
  const root = yield* resolveWorkspace(request.workspace)
  return (yield* readAgentSessions(root)).map((d) => d.session)
})

/**
 * One session in full, with the runs it started (oldest first).
 *
 * @category models
 * @since 0.1.0
 */
export interface AgentShow {
  readonly detail: AgentSessionDetail
  readonly runs: ReadonlyArray<MergeRun>
  /** The sessions' short ids, for text output (default: whole). */
  readonly agentIds?: ShortIds.ShortIds | undefined
  /** The history's short ids near the runs it started, for text output (default: whole). */
  readonly ids?: ShortIds.ShortIds | undefined
}

/**
 * One session by id, whole or shortened like every short id (its UUID cut to at least 4
 * characters; `ambiguous_id` when that names several); an unknown id is a `UsageError` saying
 * how many sessions there are. With `shortIds` (text output), also the short ids to show.
 *
 * @category constructors
 * @since 0.1.0
 */
export const show = Effect.fn("Agents.show")(function*(
  request: { readonly workspace: string; readonly db?: string | undefined; readonly id: string; readonly shortIds?: boolean | undefined }
) {
  const root = yield* resolveWorkspace(request.workspace)
  const sessions = yield* readAgentSessions(root)
  const known = sessions.map((s) => s.session.agentId)
  const agentIds = ShortIds.ofAgents(known)
  const id = yield* ShortIds.expand(agentIds, "agent", request.id, "AGENT_ID")
  const detail = sessions.find((s) => s.session.agentId === id)
  if (detail === undefined) {
    return yield* new UsageError({
      message: `no agent session '${request.id}' in this workspace; ` +
        (known.length === 0 ? "no forkjoin agent session ran here yet." : `run 'forkjoin agents' to list them (${known.length} here).`)
    })
  }
  const db = historyDbOf(root, request.db)
  const history = fs.existsSync(db)
  const all = history ? yield* readRuns(db, environmentIdOf(root)) : []
  const runs = all.filter((r) => detail.session.runIds.includes(r.runId))
  if (request.shortIds !== true || !history) return { detail, runs, agentIds } satisfies AgentShow
  const ids = yield* ShortIds.loadForDisplay(environmentIdOf(root), detail.session.runIds).pipe(
    Effect.provide(Sqlite.layer(db, sqliteOptions())),
    Effect.orElseSucceed(() => ShortIds.fullIds)
  )
  return { detail, runs, agentIds, ids } satisfies AgentShow
})

const encodeList = Schema.encodeSync(AgentsList)
const encodeShow = Schema.encodeSync(AgentShowJson)

/**
 * `{"ok":true,"agents":[{AgentSession}]}` (`AgentsList`, as the gateway's `/v1/agents`).
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderListJson = (sessions: ReadonlyArray<AgentSession>): string =>
  JSON.stringify(encodeList({ ok: true, agents: sessions })) + "\n"

const tokensOf = (s: AgentSession) => s.usage.inputTokens + s.usage.outputTokens

const statusOf = (s: AgentSession) => (s.stop === undefined ? s.status : `${s.status} (${s.stop.reason})`)

/** `provider/model`, or why there is none. */
const modelOf = (s: AgentSession): string =>
  s.provider !== null && s.model !== null ? `${s.provider}/${s.model}` : s.kind === "mcp" ? "no model" : "model not recorded"

/** An agent's task, or the MCP client that drove the session. */
const whatOf = (s: AgentSession): string =>
  s.kind === "agent" ? JSON.stringify(s.task) : s.client === undefined ? "client unknown" : `client ${s.client.name} ${s.client.version}`

/**
 * One line per session (id shortened, kind, provider/model, status, when it started, steps,
 * tokens, runs, its task or MCP client); an empty list says what records sessions.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderListText = (sessions: ReadonlyArray<AgentSession>): string => {
  if (sessions.length === 0) {
    return "no agent sessions yet: forkjoin agent records one per task, forkjoin mcp one per client connection\n"
  }
  const ids = ShortIds.ofAgents(sessions.map((s) => s.agentId))
  return sessions.map((s) =>
    `${ids.short(s.agentId)}  ${s.kind}  ${modelOf(s)}  ${statusOf(s)}  ${s.startedAt === null ? `ended ${s.endedAt ?? "?"}` : `started ${s.startedAt}`}  ` +
    `${s.steps} step(s)  ${tokensOf(s)} tokens  ${s.runIds.length} run(s)  ${whatOf(s)}\n`
  ).join("") + "details: forkjoin agents AGENT_ID\n"
}

/**
 * `{"ok":true,"agent":{AgentSessionDetail},"runs":[{MergeRun}]}` (`AgentShow`, as the
 * gateway's `/v1/agents/{agentId}`).
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderShowJson = ({ detail, runs }: AgentShow): string =>
  JSON.stringify(encodeShow({ ok: true, agent: detail, runs })) + "\n"

/** A tool call's parameters on one line, at most 120 characters. */
const paramsLine = (params: unknown): string => {
  const text = JSON.stringify(params) ?? ""
  return text.length > 120 ? `${text.slice(0, 119)}…` : text
}

/**
 * The session's summary, each tool call with its result, then each run it started with its
 * children's outcomes; the session and run ids shortened (`agentIds`, `ids`).
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderShowText = ({ agentIds = ShortIds.fullIds, detail, ids = ShortIds.fullIds, runs }: AgentShow): string => {
  const s = detail.session
  const lines = [
    `${s.kind} ${agentIds.short(s.agentId)}: ${statusOf(s)}, started ${s.startedAt ?? "(not recorded)"}, ended ${s.endedAt ?? "(not recorded)"}`,
    `thread: ${s.threadId ?? "(not recorded)"}`,
    `model: ${modelOf(s)}`,
    s.kind === "agent" ? `task: ${s.task}` : `client: ${s.client === undefined ? "unknown" : `${s.client.name} ${s.client.version}`}`,
    `${s.steps} step(s), ${s.usage.modelCalls} model call(s), ${s.usage.inputTokens} input + ${s.usage.outputTokens} output tokens`,
    ...(s.stop === undefined ? [] : [`stopped: ${s.stop.message}`]),
    `tool calls (${detail.toolCalls.length}):`,
    ...detail.toolCalls.map((c, i) =>
      `  ${i + 1}. ${c.name} ${paramsLine(c.params)} -> ${c.ok === null ? "no result" : c.ok ? "ok" : "failed"}${c.message === null ? "" : `: ${c.message}`}`
    ),
    `runs started (${s.runIds.length}):`,
    ...s.runIds.map((id) => {
      const run = runs.find((r) => r.runId === id)
      return run === undefined
        ? `  ${id}: not in this history`
        : `  ${ids.short(id)}  ${run.status}  ${run.outcomes.map((o) => `${o.childId} ${o.status}`).join(", ") || "no children"}`
    }),
    `${s.kind === "agent" ? "transcript" : "record"}: ${s.transcript}`
  ]
  return lines.join("\n") + "\n"
}
