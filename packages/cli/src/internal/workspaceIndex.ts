/**
 * What `forkjoin runs`, `forkjoin agents` and `forkjoin history threads` read besides the
 * records: the agent sessions kept in `<workspace>/.forkjoin/runs/<agent-id>/`
 * (`@forkjoin/orchestrator/AgentSessions`), the workspace's merge runs, and which run and
 * session made a thread. Reads only: nothing here writes.
 */
import { MergeStore } from "@forkjoin/history/MergeStore"
import * as MergeStoreSqlite from "@forkjoin/history/MergeStoreSqlite"
import * as AgentSessions from "@forkjoin/orchestrator/AgentSessions"
import type { EnvironmentId, MergeRunId } from "@forkjoin/schema/Ids"
import type { MergeRun } from "@forkjoin/schema/MergeRun"
import type { AgentSessionDetail } from "@forkjoin/schema/WorkspaceIndex"
import * as Effect from "effect/Effect"
import { toHistoryCommandError } from "./errors.ts"

/**
 * Every agent session of the workspace at `root` (`forkjoin agent` and `forkjoin mcp`),
 * oldest first, with its tool calls and messages: `AgentSessions.readAll`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const readAgentSessions = (root: string): Effect.Effect<ReadonlyArray<AgentSessionDetail>> => AgentSessions.readAll(root)

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
