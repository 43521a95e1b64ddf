/** Running the parent session against a scripted model server in a fresh temp workspace. */
import * as Anthropic from "@forkjoin/drivers/Anthropic"
import * as OpenAiCompatible from "@forkjoin/drivers/OpenAiCompatible"
import * as ParentSession from "@forkjoin/drivers/ParentSession"
import * as ProviderSettings from "@forkjoin/drivers/ProviderSettings"
import * as OrchestratorRun from "@forkjoin/orchestrator/Run"
import { ThreadId } from "@forkjoin/schema"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as path from "node:path"
import { sandboxes } from "../../../../test/support/sandbox.ts"
import { type ModelServer, type Script, startModelServer } from "./modelServer.ts"

/** Temp workspaces holding files, with their `.forkjoin/`; `removeSandboxes` removes them. */
export const { makeWorkspace, removeSandboxes } = sandboxes("fj-drivers-")

/** The API key the tests configure: it must never show up in an artifact or a message. */
export const SECRET = "sk-test-secret-do-not-log"

/** Provider settings for a test server. */
export const providerFor = (
  kind: "openai" | "anthropic",
  url: string,
  overrides: Partial<ProviderSettings.ProviderSettings> = {}
): ProviderSettings.ResolvedProvider => {
  const r = ProviderSettings.resolve(
    { kind, model: "test-model", baseUrl: url, apiKeyEnv: "FJ_TEST_KEY", retryBaseMs: 20, timeoutMs: 5_000, ...overrides },
    { FJ_TEST_KEY: SECRET },
    `models.providers.${kind}`
  )
  if (Result.isFailure(r)) throw new Error(r.failure.message)
  return r.success
}

/** Whether a request comes from the parent (its system prompt). */
export const isParent = (system: string): boolean => system.startsWith("You are the parent")

/** A sleep the session finished, with how many requests the server had received when it began and when it ended. */
export interface Sleep {
  readonly ms: number
  readonly requestsBefore: number
  readonly requestsAfter: number
}

/** `real`, recording each sleep that runs to its end (in real time: the HTTP timeouts are real timers). */
const recordingClock = (real: Clock.Clock, server: ModelServer, sleeps: Array<Sleep>): Clock.Clock => ({
  currentTimeMillisUnsafe: () => real.currentTimeMillisUnsafe(),
  currentTimeMillis: real.currentTimeMillis,
  currentTimeNanosUnsafe: () => real.currentTimeNanosUnsafe(),
  currentTimeNanos: real.currentTimeNanos,
  monotonicTimeNanosUnsafe: () => real.monotonicTimeNanosUnsafe(),
  monotonicTimeNanos: real.monotonicTimeNanos,
  sleep: (d) =>
    Effect.suspend(() => {
      const requestsBefore = server.requests.length
      return Effect.tap(real.sleep(d), () =>
        Effect.sync(() => sleeps.push({ ms: Duration.toMillis(d), requestsBefore, requestsAfter: server.requests.length })))
    })
})

/** Runs `forkjoin agent`'s parent session against `script`. */
export const runAgent = async (options: {
  readonly kind: "openai" | "anthropic"
  readonly stream: boolean
  readonly script: Script
  readonly files?: Record<string, string>
  readonly task?: string
  readonly provider?: Partial<ProviderSettings.ProviderSettings>
  readonly parent?: ParentSession.Limits
  readonly child?: ParentSession.Limits
}): Promise<{
  outcome: ParentSession.AgentOutcome
  server: ModelServer
  ws: string
  progress: ReadonlyArray<string>
  sleeps: ReadonlyArray<Sleep>
}> => {
  const progress: Array<string> = []
  const sleeps: Array<Sleep> = []
  const ws = makeWorkspace(options.files ?? {})
  const server = await startModelServer(options.kind, options.script)
  try {
    const provider = providerFor(options.kind, server.url, { stream: options.stream, ...options.provider })
    const outcome = await Effect.runPromise(
      Effect.gen(function*() {
        const model = yield* (options.kind === "openai" ? OpenAiCompatible.make(provider) : Anthropic.make(provider))
        return yield* ParentSession.run({
          task: options.task ?? "do the task",
          model,
          threadId: ThreadId.make("agent"),
          parent: options.parent,
          child: options.child,
          admission: { _tag: "Exempt", reason: "a test workspace" },
          progress: (line) => Effect.sync(() => progress.push(line))
        })
      }).pipe(
        Effect.provide(OrchestratorRun.layer(ws, path.join(ws, ".forkjoin", "history.db"))),
        Effect.provideService(Clock.Clock, recordingClock(Clock.Clock.defaultValue(), server, sleeps))
      )
    )
    return { outcome, server, ws, progress, sleeps }
  } finally {
    await server.close()
  }
}
