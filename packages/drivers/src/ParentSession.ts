/**
 * The parent model session of `forkjoin agent` (SPEC §10): a `direct` session in the caller's
 * thread driven by a model whose tools include `run_subagents` (tasks with a prompt, a mode and
 * a write scope, run as model-driven children and joined through `runPlan`, so mutating
 * children pass the autonomy gate exactly as `forkjoin run`'s do), `resolve_conflict`,
 * `rollback_transaction` and the history views. The join's outcome and any conflict it held
 * back come back as the tool's observation, and `finish` is refused while a conflict of one of
 * the session's runs is open. A `run_subagents` call the autonomy gate refused is kept in the
 * outcome (`gateRefusals`): the parent may finish, but what it asked for was not done.
 * Transcripts go to the artifact namespaces (the parent's to `.forkjoin/runs/<agent-id>/parent/`,
 * each child's beside its trace), redacted like everything else from the provider. The
 * session's own record (`session.json`: thread, provider, model, start and end) is written when
 * it starts and when it ends, however it ends (`@forkjoin/orchestrator/AgentSessions`).
 *
 * Owns the parent's host tools and its outcome. Does not own the conversation (`ModelDriver`),
 * the join (`@forkjoin/orchestrator`) nor the command line.
 *
 * @since 0.1.0
 */
import { Engine } from "@forkjoin/engine/Engine"
import type { HistoryServices } from "@forkjoin/history/HistoryStore"
import type { MergeStore } from "@forkjoin/history/MergeStore"
import type { Sqlite } from "@forkjoin/history/Sqlite"
import type { OrchestratorErrorCode } from "@forkjoin/orchestrator/OrchestratorError"
import * as AgentSessions from "@forkjoin/orchestrator/AgentSessions"
import type * as OrchestratorRun from "@forkjoin/orchestrator/Run"
import * as Artifacts from "@forkjoin/runtime/Artifacts"
import { BlobStore } from "@forkjoin/runtime/BlobStore"
import { Driver } from "@forkjoin/runtime/Driver"
import * as Session from "@forkjoin/runtime/Session"
import type { ThreadId } from "@forkjoin/schema"
import { UtcTimestamp } from "@forkjoin/schema/UtcTimestamp"
import type { AgentSessionRecord } from "@forkjoin/schema/WorkspaceIndex"
import type * as LanguageModel from "effect/ai/LanguageModel"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { randomUUID } from "node:crypto"
import * as path from "node:path"
import * as HostTools from "./HostTools.ts"
import * as ModelDriver from "./ModelDriver.ts"
import * as Redaction from "./Redaction.ts"
import * as Tools from "./Tools.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * Limits of a model session (see `HostTools.Limits`).
 *
 * @category models
 * @since 0.1.0
 */
export type Limits = HostTools.Limits

/**
 * How `forkjoin agent` runs: the task, the model, the caller's thread, limits for the parent
 * and for each child, how mutating children are admitted and live progress.
 *
 * @category models
 * @since 0.1.0
 */
export interface AgentOptions {
  readonly task: string
  readonly model: LanguageModel.LanguageModel
  /** The provider and model name behind `model`, kept in the session's record (null when not given). */
  readonly modelName?: { readonly provider: string; readonly model: string } | undefined
  readonly threadId: ThreadId
  readonly parent?: Limits | undefined
  readonly child?: Limits | undefined
  readonly admission?: OrchestratorRun.Admission | undefined
  readonly progress?: ((line: string) => Effect.Effect<void>) | undefined
}

/**
 * A `run_subagents` call refused before any child started, because its mutating children were
 * not admitted: the observation's stable code and message.
 *
 * @category models
 * @since 0.1.0
 */
export interface GateRefusal {
  readonly code: OrchestratorErrorCode
  readonly message: string
}

/**
 * What the parent did: its session's ending, why its driver stopped (when not by `finish`),
 * every join it ran, the `run_subagents` calls the gate refused, the transcripts written and
 * whether it finished cleanly.
 *
 * @category models
 * @since 0.1.0
 */
export interface AgentOutcome {
  readonly agentId: string
  readonly status: Session.SessionStatus
  readonly stop?: ModelDriver.DriverReport["stop"]
  readonly usage: ModelDriver.DriverReport["usage"]
  readonly runs: ReadonlyArray<OrchestratorRun.RunOutcome>
  readonly gateRefusals: ReadonlyArray<GateRefusal>
  readonly transcripts: ReadonlyArray<string>
  readonly steps: number
  readonly finish: { readonly ok: true } | { readonly ok: false; readonly code: string; readonly message: string }
}

// -------------------------------------------------------------------------------------
// prompts
// -------------------------------------------------------------------------------------

const PARENT_SYSTEM = "You are the parent agent of forkjoin, working in one shared workspace. Use read_file and list_dir to look, " +
  "apply_patch to edit directly, and run_subagents to fork children that work concurrently on disjoint parts (each " +
  "transactional_write child needs a writeScope; its edits are joined when it finishes). The result of run_subagents is " +
  "the join: act on every held conflict with resolve_conflict before calling finish. Call finish when the task is done."

// The observations of `run_subagents` that mean "mutating children not admitted".
const GATE_REFUSALS: ReadonlySet<string> = new Set<OrchestratorErrorCode>([
  "mutating_subagents_not_granted",
  "promotion_gate_blocked",
  "mutating_subagents_in_open_batch"
])

const isGateRefusal = (code: string | undefined): code is OrchestratorErrorCode => code !== undefined && GATE_REFUSALS.has(code)

/**
 * The `run_subagents` calls among `hostSteps` refused because their mutating children were
 * not admitted (by the observation's code).
 *
 * @category constructors
 * @since 0.1.0
 */
export const gateRefusalsOf = (hostSteps: ReadonlyArray<{ readonly action: unknown; readonly observation: { readonly ok: boolean; readonly code?: string; readonly message: string } }>): Array<GateRefusal> =>
  hostSteps.flatMap((s) => {
    const code = s.observation.code
    const called = typeof s.action === "object" && s.action !== null && "run_subagents" in s.action
    return called && !s.observation.ok && isGateRefusal(code) ? [{ code, message: s.observation.message }] : []
  })

/**
 * Runs the parent session to its end in the engine's workspace.
 *
 * @category constructors
 * @since 0.1.0
 */
export const run = (options: AgentOptions): Effect.Effect<AgentOutcome, Artifacts.ArtifactError, Engine | HistoryServices | MergeStore | Sqlite> =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const agentId = `agent-${randomUUID()}`
    const agentDirectory = Artifacts.defaultRunDirectory(engine.root, agentId)
    const now = Effect.map(Clock.currentTimeMillis, (ms) => UtcTimestamp.make(new Date(ms).toISOString()))
    const record: AgentSessionRecord = {
      schemaVersion: 1,
      kind: "agent",
      agentId,
      threadId: options.threadId,
      provider: options.modelName?.provider ?? null,
      model: options.modelName?.model ?? null,
      startedAt: yield* now,
      endedAt: null,
      toolCalls: [],
      runIds: []
    }
    yield* AgentSessions.writeRecord(engine.root, record)
    // However the session ends (an interrupt, a failure), its record says it ended.
    const ended = Effect.flatMap(now, (endedAt) => Effect.ignore(AgentSessions.writeRecord(engine.root, { ...record, endedAt })))
    // Live while this process runs it: gc keeps its folder and its runs (the lock dies with the process).
    return yield* AgentSessions.live(agentId, Effect.onExit(session(options, agentId, agentDirectory), () => ended))
  })

// The session itself, once its record is written.
const session = (options: AgentOptions, agentId: string, agentDirectory: string) =>
  Effect.gen(function*() {
    const host = yield* HostTools.make({
      threadId: options.threadId,
      model: options.model,
      child: options.child,
      admission: options.admission,
      progress: options.progress
    })
    const parentLimits = options.parent ?? {}
    const driver = ModelDriver.make({
      model: options.model,
      system: PARENT_SYSTEM,
      task: options.task,
      tools: Tools.parentTools,
      host: {
        run_subagents: host.tools.run_subagents,
        resolve_conflict: host.tools.resolve_conflict,
        rollback_transaction: host.tools.rollback_transaction,
        history_timeline: host.tools.history_timeline,
        history_file: host.tools.history_file
      },
      beforeFinish: host.beforeFinish,
      tokenBudget: parentLimits.tokenBudget,
      maxSteps: parentLimits.maxSteps,
      onStep: options.progress,
      label: "parent"
    })
    const result = yield* Session.run({
      mode: "direct",
      threadId: options.threadId,
      timeoutMs: parentLimits.timeoutMs ?? 1_800_000,
      ...(parentLimits.maxSteps === undefined ? {} : { maxSteps: parentLimits.maxSteps })
    }).pipe(
      Effect.provideService(Driver, driver.driver),
      Effect.provide(BlobStore.layerMemory)
    )
    const report = driver.report()
    const runs = host.runs()
    const parentDirectory = path.join(agentDirectory, "parent")
    const transcripts = [
      yield* Artifacts.writeJson(parentDirectory, "transcript.json", ModelDriver.transcriptFile(report)),
      ...runs.flatMap((r) => r.results.map((c) => path.join(c.artifacts, "transcript.json")))
    ]
    // The session's own steps hold tool results too (a file the model read): redacted like the transcript.
    yield* Artifacts.writeJson(
      parentDirectory,
      "trace.json",
      Redaction.forModel(options.model).value({ steps: result.steps, hostSteps: report.hostSteps, usage: report.usage })
    )
    const finish: AgentOutcome["finish"] = result.status === "finished"
      ? { ok: true }
      : report.stop !== undefined
      ? { ok: false, code: report.stop.reason, message: report.stop.message }
      : { ok: false, code: result.status, message: result.error?.message ?? `the parent session ended ${result.status}` }
    return {
      agentId,
      status: result.status,
      ...(report.stop === undefined ? {} : { stop: report.stop }),
      usage: report.usage,
      runs,
      gateRefusals: gateRefusalsOf(report.hostSteps),
      transcripts,
      steps: result.steps.length + report.hostSteps.length,
      finish
    } satisfies AgentOutcome
  })
