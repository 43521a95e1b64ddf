/**
 * `forkjoin mcp`: an MCP server over stdio (`effect/ai` `McpServer.layerStdio`) exposing the
 * workspace to any MCP client (Claude Code, Codex CLI, Cursor, ...): the tools of
 * `@forkjoin/drivers/McpTools`, every write through the engine in the server's thread. A
 * model is optional: without one, `run_subagents` tasks with a `prompt` are refused with what
 * to configure, while scripted and changeset tasks run. Stdout carries only the protocol: stdin
 * is framed and checked first (`internal/mcpFraming.ts`: a size cap, non-JSON and too-deep
 * lines answered with JSON-RPC errors), and logs, the startup repair's notice included, go to
 * stderr. Each connection is recorded as an agent session of kind `mcp` (`forkjoin agents`).
 * The flags are in `McpCommand.ts`.
 *
 * @since 0.1.0
 */
import * as Config from "@forkjoin/autonomy/Config"
import * as McpTools from "@forkjoin/drivers/McpTools"
import * as Models from "@forkjoin/drivers/Models"
import type { ProviderKind } from "@forkjoin/drivers/ProviderSettings"
import type { ThreadId } from "@forkjoin/schema/Ids"
import * as McpProtocol from "effect/ai/McpProtocol"
import * as McpServer from "effect/ai/McpServer"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Result from "effect/Result"
import { layerFramedStdio } from "./internal/mcpFraming.ts"
import { orchestratorLayer } from "./internal/orchestratorLayer.ts"
import { historyDbOf, resolveWorkspace } from "./internal/workspace.ts"
import { withRepairs } from "./Repair.ts"

/**
 * One `mcp` invocation, after flag parsing.
 *
 * @category models
 * @since 0.1.0
 */
export interface McpRequest {
  readonly workspace: string
  readonly db?: string | undefined
  readonly threadId: ThreadId
  readonly provider?: ProviderKind | undefined
  readonly model?: string | undefined
  readonly version: string
  readonly env?: Config.Env | undefined
}

/**
 * Serves MCP on stdin/stdout until the client goes away.
 *
 * @category constructors
 * @since 0.1.0
 */
export const mcp = Effect.fn("Mcp.mcp")(function*(request: McpRequest) {
  const root = yield* resolveWorkspace(request.workspace)
  const db = historyDbOf(root, request.db)
  const env = request.env ?? process.env
  const choice = yield* Models.forWorkspace(root, env, { provider: request.provider, model: request.model })
  const handlers = McpTools.layerHandlers({
    threadId: request.threadId,
    model: Result.isSuccess(choice) ? choice.success.model : undefined,
    modelUnavailable: Result.isFailure(choice) ? choice.failure.message : undefined,
    child: Result.isSuccess(choice) ? choice.success.child : undefined,
    admission: { _tag: "Gate", env },
    env
  }, {
    provider: Result.isSuccess(choice) ? choice.success.provider.kind : null,
    model: Result.isSuccess(choice) ? choice.success.provider.model : null
  })
  const server = McpServer.layerStdio({
    name: "forkjoin",
    version: request.version,
    instructions: "forkjoin: edit this workspace through its patch engine (apply_patch, read_file, list_dir), fork and join " +
      "children (run_subagents), resolve held conflicts, roll back one transaction, and read the patch history.",
    protocols: [McpProtocol.v2025_11_25, McpProtocol.v2025_06_18, McpProtocol.v2025_03_26, McpProtocol.v2024_11_05],
    registrations: McpServer.toolkit(McpTools.McpToolkit).pipe(Layer.provide(handlers))
  })
  // The stdio transport ends by interrupting the fiber that built it once stdin closes (every
  // response written first): serve in a child fiber so that is a normal end (exit 0), not Ctrl-C.
  const serve = Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(Layer.launch(server).pipe(Effect.provide(layerFramedStdio)))
    const exit = yield* Fiber.await(fiber)
    if (Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause)) return yield* Effect.failCause(exit.cause)
  })
  // Stdout is the protocol channel: whatever is logged (a defect's trace too) goes to stderr.
  yield* withRepairs(root, request.db, serve).pipe(Effect.provide(orchestratorLayer(root, db)), Effect.provideService(Logger.LogToStderr, true))
})
