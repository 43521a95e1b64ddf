/**
 * The tools `forkjoin mcp` serves to an MCP client (SPEC §10): `apply_patch`, `read_file`,
 * `list_dir` (through one long-lived `direct` session in the caller's thread, so every write
 * goes through the engine with the thread recorded and every refusal is the session's own
 * observation), `run_subagents` (tasks with scripted `actions`, a `changesetFile` or a
 * `prompt` for the configured model), `resolve_conflict`, `rollback_transaction` (both scoped
 * to the server's thread and below), the history views and `gate_decision`. A refused action is a tool result with `isError: true` carrying
 * the observation; argument schemas are checked by the MCP server first, so wrongly typed
 * arguments and unknown tools get the protocol's errors. Each connection is an agent session of
 * kind `mcp` (`layerHandlers` with `session`): its record keeps the client's name and version
 * from `initialize`, every tool call with its outcome (strings in its parameters cut at 4096
 * characters) and the runs it started, rewritten after
 * each call and when the connection ends.
 *
 * Owns the MCP tool surface and the session bridge. Does not own the MCP protocol
 * (`effect/ai/McpServer`) nor what each tool does (the session, `HostTools`).
 *
 * @since 0.1.0
 */
import { Engine } from "@forkjoin/engine/Engine"
import type { HistoryServices } from "@forkjoin/history/HistoryStore"
import type { MergeStore } from "@forkjoin/history/MergeStore"
import type { Sqlite } from "@forkjoin/history/Sqlite"
import * as AgentSessions from "@forkjoin/orchestrator/AgentSessions"
import { ActionArguments, Observation } from "@forkjoin/runtime/Action"
import { BlobStore } from "@forkjoin/runtime/BlobStore"
import { Driver } from "@forkjoin/runtime/Driver"
import * as Session from "@forkjoin/runtime/Session"
import { UtcTimestamp } from "@forkjoin/schema/UtcTimestamp"
import type { AgentSessionRecord } from "@forkjoin/schema/WorkspaceIndex"
import { McpRequestContext } from "effect/ai/McpSchema"
import * as Tool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import { randomUUID } from "node:crypto"
import * as HostTools from "./HostTools.ts"
import * as Tools from "./Tools.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

const returning = { success: Observation, failure: Observation, failureMode: "return" } as const

/**
 * The MCP toolkit: each tool's parameters as a Schema, its result an observation (a refusal
 * is returned with `isError: true`).
 *
 * @category models
 * @since 0.1.0
 */
export const McpToolkit = Toolkit.make(
  Tool.make("apply_patch", { description: Tool.getDescription(Tools.applyPatch), parameters: ActionArguments.apply_patch, ...returning }),
  Tool.make("read_file", { description: Tool.getDescription(Tools.readFile), parameters: ActionArguments.read_file, ...returning }),
  Tool.make("list_dir", { description: Tool.getDescription(Tools.listDir), parameters: ActionArguments.list_dir, ...returning }),
  Tool.make("run_subagents", {
    description: "Fork children that work concurrently, then join their changesets into the workspace. Each task has an id, a " +
      "mode ('transactional_write' with a writeScope, or 'read_only') and exactly one of: 'actions' (scripted, e.g. " +
      "[{\"apply_patch\":{\"patch\":\"...\"}},{\"finish\":{}}]), 'changesetFile' (a workspace-relative regular file outside .git and " +
      ".forkjoin, or a changeset a run exported under .forkjoin/runs/) or 'prompt' (driven by " +
      "the configured model). The result is the join's outcome per child and any conflicts held back.",
    parameters: Tools.RunSubagentsArgs,
    ...returning
  }),
  Tool.make("resolve_conflict", { description: Tool.getDescription(Tools.resolveConflict), parameters: Tools.ResolveConflictArgs, ...returning }),
  Tool.make("rollback_transaction", { description: Tool.getDescription(Tools.rollbackTransaction), parameters: Tools.RollbackArgs, ...returning }),
  Tool.make("history_timeline", { description: Tool.getDescription(Tools.historyTimeline), parameters: Tools.TimelineArgs, ...returning }),
  Tool.make("history_file", { description: Tool.getDescription(Tools.historyFile), parameters: Tools.FileHistoryArgs, ...returning }),
  Tool.make("gate_decision", {
    description: "The promotion gate's decision for mutating children in this workspace: level, status, what is missing.",
    parameters: Tools.GateArgs,
    ...returning
  })
)

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

/**
 * One `direct` session fed by calls: each call is the session's next action and resolves to
 * its observation. Calls are serialized (one engine transaction at a time, in call order);
 * the session lives as long as `Scope`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const sessionBridge = (threadId: Session.SessionOptions["threadId"]): Effect.Effect<
  (action: Record<string, unknown>) => Effect.Effect<Observation>,
  never,
  Engine | Scope.Scope
> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<{ readonly action: unknown; readonly done: Deferred.Deferred<Observation> }>()
    let current: Deferred.Deferred<Observation> | undefined
    const driver = Driver.of({
      next: (steps) =>
        Effect.gen(function*() {
          if (current !== undefined) {
            const last = steps[steps.length - 1]
            if (last !== undefined) yield* Deferred.succeed(current, last.observation)
            current = undefined
          }
          const item = yield* Queue.take(queue)
          current = item.done
          return item.action
        })
    })
    yield* Effect.forkScoped(
      Session.run({ mode: "direct", threadId, maxSteps: Number.MAX_SAFE_INTEGER }).pipe(
        Effect.provideService(Driver, driver),
        Effect.provide(BlobStore.layerMemory)
      )
    )
    const one = yield* Semaphore.make(1)
    return (action) =>
      Semaphore.withPermits(one, 1)(
        Effect.gen(function*() {
          const done = yield* Deferred.make<Observation>()
          yield* Queue.offer(queue, { action, done })
          return yield* Deferred.await(done)
        })
      )
  })

const answer = (o: Observation) => (o.ok ? Effect.succeed(o) : Effect.fail(o))

/**
 * What an MCP connection's session record says besides its calls: the provider and model of
 * `run_subagents`' prompt tasks (null when none is configured).
 *
 * @category models
 * @since 0.1.0
 */
export interface McpSessionOptions {
  readonly provider: string | null
  readonly model: string | null
}

/** The longest string of a call's parameters a session record keeps (a patch can be megabytes). */
const MAX_PARAM_CHARS = 4096

/** `params` with every string longer than `MAX_PARAM_CHARS` cut, saying how much was left out. */
const clipParams = (params: unknown): unknown =>
  typeof params === "string"
    ? params.length > MAX_PARAM_CHARS ? `${params.slice(0, MAX_PARAM_CHARS)}… (${params.length - MAX_PARAM_CHARS} more characters)` : params
    : Array.isArray(params)
    ? params.map(clipParams)
    : typeof params === "object" && params !== null
    ? Object.fromEntries(Object.entries(params).map(([k, v]) => [k, clipParams(v)]))
    : params

const now = Effect.map(Clock.currentTimeMillis, (ms) => UtcTimestamp.make(new Date(ms).toISOString()))

/**
 * The session record of one MCP connection: written when it opens, again after each tool
 * call (one write at a time) and when the scope closes. `record` runs a call and keeps it,
 * with the client `initialize` named and the run a `run_subagents` call started.
 */
const sessionRecorder = (threadId: HostTools.HostOptions["threadId"], options: McpSessionOptions) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    let record: AgentSessionRecord = {
      schemaVersion: 1,
      kind: "mcp",
      agentId: `${AgentSessions.MCP_PREFIX}${randomUUID()}`,
      threadId,
      provider: options.provider,
      model: options.model,
      startedAt: yield* now,
      endedAt: null,
      toolCalls: [],
      runIds: []
    }
    const one = yield* Semaphore.make(1)
    // A record that cannot be written never fails a call: the tool's own outcome is what the client asked for.
    const update = (f: (r: AgentSessionRecord) => AgentSessionRecord) =>
      Semaphore.withPermits(one, 1)(Effect.suspend(() => {
        record = f(record)
        return Effect.ignore(AgentSessions.writeRecord(engine.root, record))
      }))
    yield* update((r) => r)
    yield* Effect.addFinalizer(() => Effect.flatMap(now, (endedAt) => update((r) => ({ ...r, endedAt }))))
    // Live while the connection is open (gc keeps its folder and runs); not held, it is judged by age.
    yield* Effect.ignore(AgentSessions.liveScoped(record.agentId))
    return <E>(name: string, params: unknown, run: Effect.Effect<Observation, E>): Effect.Effect<Observation, E> =>
      Effect.onExit(run, (exit) =>
        Effect.gen(function*() {
          const context = yield* Effect.serviceOption(McpRequestContext)
          const client = Option.isSome(context) ? context.value.clientInfo : undefined
          const observation = exit._tag === "Success" ? exit.value : undefined
          const runId = name === "run_subagents" && observation !== undefined ? AgentSessions.runIdOf(observation.data) : undefined
          const call = AgentSessions.toolCallOf(name, clipParams(params), observation === undefined ? undefined : { value: observation, isFailure: !observation.ok })
          yield* update((r) => ({
            ...r,
            ...(r.client === undefined && client !== undefined ? { client: { name: client.name, version: client.version } } : {}),
            toolCalls: [...r.toolCalls, call],
            runIds: runId === undefined ? r.runIds : [...r.runIds, runId]
          }))
        }))
  })

/**
 * The handlers of `McpToolkit` over the engine's workspace, as a layer; with `session`, the
 * connection is recorded as an agent session of kind `mcp`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerHandlers = (
  options: HostTools.HostOptions,
  session?: McpSessionOptions
): Layer.Layer<Tool.HandlersFor<typeof McpToolkit.tools>, never, Engine | HistoryServices | MergeStore | Sqlite> =>
  McpToolkit.toLayer(
    Effect.gen(function*() {
      const call = yield* sessionBridge(options.threadId)
      const host = yield* HostTools.make(options)
      const record = session === undefined
        ? <E>(_name: string, _params: unknown, run: Effect.Effect<Observation, E>) => run
        : yield* sessionRecorder(options.threadId, session)
      // Every call's observation, kept before it is answered (success or isError).
      const tool = (name: string, run: (params: unknown) => Effect.Effect<Observation>) => (params: unknown) =>
        Effect.flatMap(record(name, params, run(params)), answer)
      const viaSession = (name: "apply_patch" | "read_file" | "list_dir") => tool(name, (params) => call({ [name]: params }))
      const viaHost = (name: keyof HostTools.HostTools["tools"]) => tool(name, host.tools[name])
      return McpToolkit.of({
        apply_patch: viaSession("apply_patch"),
        read_file: viaSession("read_file"),
        list_dir: viaSession("list_dir"),
        run_subagents: viaHost("run_subagents"),
        resolve_conflict: viaHost("resolve_conflict"),
        rollback_transaction: viaHost("rollback_transaction"),
        history_timeline: viaHost("history_timeline"),
        history_file: viaHost("history_file"),
        gate_decision: viaHost("gate_decision")
      })
    })
  )
