/**
 * `forkjoin agent "TASK"`: a parent model session in the workspace (SPEC §10). The model and
 * its limits come from `forkjoin.config.json` `models` and the `OPENAI_*` / `ANTHROPIC_*`
 * variables, `--provider` and `--model` override them; every problem with them is reported
 * before any request or child. Mutating children pass the autonomy gate exactly as
 * `forkjoin run`'s do: a refusal fails the command (exit 1, the reason on stderr) even when the
 * parent finishes, and a gate skipped at `bold` is a warning on stderr. The flags are in
 * `AgentCommand.ts`.
 *
 * @since 0.1.0
 */
import * as Config from "@forkjoin/autonomy/Config"
import * as Models from "@forkjoin/drivers/Models"
import * as AgentSessions from "@forkjoin/orchestrator/AgentSessions"
import * as ParentSession from "@forkjoin/drivers/ParentSession"
import type { ProviderKind } from "@forkjoin/drivers/ProviderSettings"
import { Engine, type RepairOutcome } from "@forkjoin/engine/Engine"
import type { ThreadId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Colour from "./internal/colour.ts"
import * as ShortIds from "./internal/shortIds.ts"
import { RunFailed, UsageError } from "./internal/errors.ts"
import { orchestratorLayer } from "./internal/orchestratorLayer.ts"
import { historyDbOf, resolveWorkspace } from "./internal/workspace.ts"
import { repairsField, withRepairs } from "./Repair.ts"
import * as Run from "./Run.ts"

/**
 * One `agent` invocation, after flag parsing.
 *
 * @category models
 * @since 0.1.0
 */
export interface AgentRequest {
  readonly task: string
  readonly workspace: string
  readonly db?: string | undefined
  readonly provider?: ProviderKind | undefined
  readonly model?: string | undefined
  readonly threadId: ThreadId
  readonly maxSteps?: number | undefined
  readonly tokenBudget?: number | undefined
  /** Live progress lines (a terminal); nothing when undefined. */
  readonly progress?: ((line: string) => Effect.Effect<void>) | undefined
  readonly env?: Config.Env | undefined
  /** Read the short ids text output shows (the ids near the joined runs'); `--json` leaves this off. */
  readonly shortIds?: boolean | undefined
}

/**
 * What `agent` did, and what the startup repair did first.
 *
 * @category models
 * @since 0.1.0
 */
export interface AgentResult {
  readonly outcome: ParentSession.AgentOutcome
  readonly repairs: ReadonlyArray<RepairOutcome>
  /** The ids for text output (default: whole). */
  readonly ids?: ShortIds.ShortIds | undefined
  /** The workspace's agent sessions' short ids, for text output (default: whole). */
  readonly agentIds?: ShortIds.ShortIds | undefined
}

/**
 * Runs the parent session; configuration problems are a `UsageError` naming the setting.
 *
 * @category constructors
 * @since 0.1.0
 */
export const agent = Effect.fn("Agent.agent")(function*(request: AgentRequest) {
  if (request.task.trim() === "") return yield* new UsageError({ message: "give the task to do, e.g. forkjoin agent \"add a README\" --workspace DIR." })
  const root = yield* resolveWorkspace(request.workspace)
  const db = historyDbOf(root, request.db)
  const env = request.env ?? process.env
  const choice = yield* Models.forWorkspace(root, env, { provider: request.provider, model: request.model })
  if (Result.isFailure(choice)) return yield* new UsageError({ message: choice.failure.message, cause: choice.failure })
  const model = choice.success.model
  const parent = {
    ...choice.success.parent,
    ...(request.maxSteps === undefined ? {} : { maxSteps: request.maxSteps }),
    ...(request.tokenBudget === undefined ? {} : { tokenBudget: request.tokenBudget })
  }
  const [[outcome, ids], repairs] = yield* withRepairs(
    root,
    request.db,
    Effect.gen(function*() {
      const outcome = yield* ParentSession.run({
        task: request.task,
        model,
        modelName: { provider: choice.success.provider.kind, model: choice.success.provider.model },
        threadId: request.threadId,
        parent,
        child: choice.success.child,
        admission: { _tag: "Gate", env },
        progress: request.progress
      }).pipe(Effect.mapError((e) => new RunFailed({ message: e.message, cause: e })))
      // The joins' tables show ids shortened, as `forkjoin run` prints them.
      const engine = yield* Engine
      return [outcome, yield* Run.idsFor(request.shortIds, engine.environmentId, outcome.runs)] as const
    })
  ).pipe(Effect.provide(orchestratorLayer(root, db)))
  const agentIds = request.shortIds === true ? ShortIds.ofAgents(yield* AgentSessions.listIds(root)) : undefined
  return { outcome, repairs, ids, agentIds } satisfies AgentResult
})

/**
 * Exit 0 when the parent finished cleanly and the gate refused none of its children, else 1.
 *
 * @category combinators
 * @since 0.1.0
 */
export const exitCodeOf = (result: AgentResult): 0 | 1 => (result.outcome.finish.ok && result.outcome.gateRefusals.length === 0 ? 0 : 1)

/**
 * What goes to stderr whatever the output mode (a terminal or not, `--json` or not): each
 * warning of the gate's decisions once (a `bold` skip), then each refusal of mutating children.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderStderr = (result: AgentResult, palette: Colour.Palette = Colour.forStderr()): string => {
  const o = result.outcome
  const warnings = [...new Set(o.runs.flatMap((r) => r.run.gate?.warnings ?? []))]
  return [
    ...warnings.map((w) => `${palette.yellow("warning")}: ${w}\n`),
    ...o.gateRefusals.map((r) => `${palette.red(`error[${r.code}]`)}: run_subagents was refused: ${r.message}\n`)
  ].join("")
}

/**
 * The `--json` line: `{ ok, runId, agentId, transcripts, mergeExecution, finish, runs,
 * gateRefusals, usage, steps }`; `ok` is the exit status, `runId` and `mergeExecution` are the
 * last join's (null when the parent forked no children).
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderJson = (result: AgentResult): string => {
  const o = result.outcome
  const last = o.runs[o.runs.length - 1]
  return JSON.stringify({
    ok: exitCodeOf(result) === 0,
    runId: last?.runId ?? null,
    agentId: o.agentId,
    transcripts: o.transcripts,
    mergeExecution: last === undefined ? null : { status: last.run.status, outcomes: last.run.outcomes },
    finish: o.finish,
    runs: o.runs.map((r) => ({
      runId: r.runId,
      status: r.run.status,
      outcomes: r.run.outcomes,
      conflicts: r.conflicts.map((c) => ({ conflictId: c.conflictId, childId: c.childId, path: c.path, status: c.status }))
    })),
    gateRefusals: o.gateRefusals,
    usage: o.usage,
    steps: o.steps,
    ...repairsField(result.repairs)
  }) + "\n"
}

/**
 * Human output: the session (its id shortened, as `forkjoin agents` shows it), each join's
 * table (as `forkjoin run` prints it), then how the parent ended.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderText = (result: AgentResult, palette: Colour.Palette = Colour.forStdout()): string => {
  const o = result.outcome
  const lines: Array<string> = [`agent ${(result.agentIds ?? ShortIds.fullIds).short(o.agentId)}: ${o.steps} tool call(s), ${o.usage.modelCalls} model call(s), ` +
    `${o.usage.inputTokens + o.usage.outputTokens} tokens`]
  for (const r of o.runs) lines.push(Run.renderText({ _tag: "Joined", outcome: r, ids: result.ids }, palette).trimEnd())
  lines.push(`transcripts: ${o.transcripts[0] ?? "(none)"}${o.transcripts.length > 1 ? ` and ${o.transcripts.length - 1} child transcript(s)` : ""}`)
  const refused = o.gateRefusals.length
  lines.push(
    !o.finish.ok
      ? `${palette.red("parent did not finish")} (${o.finish.code}): ${o.finish.message}`
      : refused === 0
      ? palette.green("parent finished")
      : `${palette.red("parent finished, but its mutating children were refused")} (${refused} run_subagents call(s); the reason is on stderr)`
  )
  return lines.join("\n") + "\n"
}
