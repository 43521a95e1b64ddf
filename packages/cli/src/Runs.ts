/**
 * `forkjoin runs`: the joins of a workspace (from `forkjoin run`, `forkjoin agent` and
 * `forkjoin mcp`), oldest first: id, status, when, the thread that started it, the agent
 * session that did (if any) and each child's outcome. Reads only: no repair runs and no
 * database is created. Text output shows run ids shortened. The flags are in `RunsCommand.ts`.
 *
 * @since 0.1.0
 */
import { environmentIdOf } from "@forkjoin/engine/Engine"
import { sqliteOptions } from "@forkjoin/history/HistoryStoreSqlite"
import { Sqlite } from "@forkjoin/history/Sqlite"
import { MergeRun } from "@forkjoin/schema/MergeRun"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as ShortIds from "./internal/shortIds.ts"
import { readAgentSessions, readRuns, startedBy } from "./internal/workspaceIndex.ts"
import { historyDbOf, resolveWorkspace } from "./internal/workspace.ts"

/**
 * One run as `runs` lists it: the durable run and the agent session that started it.
 *
 * @category models
 * @since 0.1.0
 */
export interface RunEntry {
  readonly run: MergeRun
  readonly agentId: string | undefined
}

/**
 * The runs of the workspace, oldest first.
 *
 * @category constructors
 * @since 0.1.0
 */
export const list = Effect.fn("Runs.list")(function*(request: { readonly workspace: string; readonly db?: string | undefined }) {
  const root = yield* resolveWorkspace(request.workspace)
  const db = historyDbOf(root, request.db)
  // No database: nothing ran here yet (and a listing never creates one).
  if (!fs.existsSync(db)) return [] as ReadonlyArray<RunEntry>
  const runs = yield* readRuns(db, environmentIdOf(root))
  const agentOf = startedBy(yield* readAgentSessions(root))
  return runs.map((run): RunEntry => ({ run, agentId: agentOf.get(run.runId) }))
})

/**
 * The short ids of the workspace's history, for the text listing (whole ids when there is no
 * history or it cannot be read).
 *
 * @category constructors
 * @since 0.1.0
 */
export const displayIds = Effect.fn("Runs.displayIds")(function*(request: { readonly workspace: string; readonly db?: string | undefined }) {
  const root = yield* resolveWorkspace(request.workspace)
  const db = historyDbOf(root, request.db)
  if (!fs.existsSync(db)) return ShortIds.fullIds
  return yield* ShortIds.loadForDisplay(environmentIdOf(root)).pipe(
    Effect.provide(Sqlite.layer(db, sqliteOptions())),
    Effect.orElseSucceed(() => ShortIds.fullIds)
  )
})

const encodeRun = Schema.encodeSync(MergeRun)

/**
 * `{"ok":true,"runs":[{"run":{MergeRun},"agentId":string|null}]}`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderJson = (entries: ReadonlyArray<RunEntry>): string =>
  JSON.stringify({ ok: true, runs: entries.map((e) => ({ run: encodeRun(e.run), agentId: e.agentId ?? null })) }) + "\n"

/** `docs applied, src conflicted_unresolved`. */
const childrenLine = (run: MergeRun): string =>
  run.outcomes.length === 0 ? "no children" : run.outcomes.map((o) => `${o.childId} ${o.status}`).join(", ")

/**
 * One line per run (id shortened, status, when, who started it, its children's count), then
 * one line with each child's outcome; an empty list says what starts runs.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderText = (entries: ReadonlyArray<RunEntry>, ids: ShortIds.ShortIds = ShortIds.fullIds): string => {
  if (entries.length === 0) return "no runs yet: forkjoin run and forkjoin agent start them\n"
  return entries.map(({ agentId, run }) =>
    `${ids.short(run.runId)}  ${run.status}  ${run.createdAt}  started by ${agentId === undefined ? `thread ${run.callerThreadId}` : `agent ${agentId}`}` +
    `  ${run.outcomes.length} child(ren)\n    ${childrenLine(run)}\n`
  ).join("") + "details: forkjoin history timeline --of RUN_ID --descendants; conflicts: forkjoin conflicts --run RUN_ID\n"
}
