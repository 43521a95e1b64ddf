/**
 * The tools `forkjoin mcp` serves to an MCP client (SPEC §10): `apply_patch`, `read_file`,
 * `list_dir` (through one long-lived `direct` session in the caller's thread, so every write
 * goes through the engine with the thread recorded and every refusal is the session's own
 * observation), `run_subagents` (tasks with scripted `actions`, a `changesetFile` or a
 * `prompt` for the configured model), `resolve_conflict`, `rollback_transaction` (both scoped
 * to the server's thread and below), the history views and `gate_decision`. A refused action is a tool result with `isError: true` carrying
 * the observation; argument schemas are checked by the MCP server first, so wrongly typed
 * arguments and unknown tools get the protocol's errors.
 *
 * Owns the MCP tool surface and the session bridge. Does not own the MCP protocol
 * (`effect/ai/McpServer`) nor what each tool does (the session, `HostTools`).
 *
 * @since 0.1.0
 */
import type { Engine } from "@forkjoin/engine/Engine"
import type { HistoryStore } from "@forkjoin/history/HistoryStore"
import type { MergeStore } from "@forkjoin/history/MergeStore"
import type { Sqlite } from "@forkjoin/history/Sqlite"
import { ActionArguments, Observation } from "@forkjoin/runtime/Action"
import { BlobStore } from "@forkjoin/runtime/BlobStore"
import { Driver } from "@forkjoin/runtime/Driver"
import * as Session from "@forkjoin/runtime/Session"
import * as Tool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
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
 * The handlers of `McpToolkit` over the engine's workspace, as a layer.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerHandlers = (
  options: HostTools.HostOptions
): Layer.Layer<Tool.HandlersFor<typeof McpToolkit.tools>, never, Engine | HistoryStore | MergeStore | Sqlite> =>
  McpToolkit.toLayer(
    Effect.gen(function*() {
      const call = yield* sessionBridge(options.threadId)
      const host = yield* HostTools.make(options)
      const viaHost = (tool: HostTools.HostTools["tools"][keyof HostTools.HostTools["tools"]]) => (params: unknown) => Effect.flatMap(tool(params), answer)
      return McpToolkit.of({
        apply_patch: (params) => Effect.flatMap(call({ apply_patch: params }), answer),
        read_file: (params) => Effect.flatMap(call({ read_file: params }), answer),
        list_dir: (params) => Effect.flatMap(call({ list_dir: params }), answer),
        run_subagents: viaHost(host.tools.run_subagents),
        resolve_conflict: viaHost(host.tools.resolve_conflict),
        rollback_transaction: viaHost(host.tools.rollback_transaction),
        history_timeline: viaHost(host.tools.history_timeline),
        history_file: viaHost(host.tools.history_file),
        gate_decision: viaHost(host.tools.gate_decision)
      })
    })
  )
