/**
 * A `Driver` whose actions are a language model's tool calls (SPEC §10), over `effect/ai`'s
 * `LanguageModel` with tool-call resolution disabled and validation deferred: the session
 * decodes every call itself, so malformed arguments or an invented tool become an observation
 * the model reads as the tool result, never a crash. Several calls in one reply run one by one
 * and go back together. "Host" tools (the parent's `run_subagents`, `resolve_conflict`, ...)
 * run in the driver and never reach the session; `beforeFinish` can refuse `finish` (open
 * conflicts). The step limit (host steps included), a token budget, a provider failure or a
 * model that stops calling tools end the session; `report` says which, with the transcript,
 * redacted with the model's provider's keys (`Redaction.forModel`) before anyone writes it.
 *
 * Owns the conversation. Does not own the wire (`OpenAiCompatible`, `Anthropic`), what an
 * action does (the session) nor where transcripts go (`@forkjoin/runtime/Children`).
 *
 * @since 0.1.0
 */
import { type Observation, refused } from "@forkjoin/runtime/Action"
import { Driver, type Step } from "@forkjoin/runtime/Driver"
import type { StopReason, TokenUsage, Transcript, TranscriptEntry } from "@forkjoin/schema/Transcript"
import type * as AiError from "effect/ai/AiError"
import type * as LanguageModel from "effect/ai/LanguageModel"
import * as Prompt from "effect/ai/Prompt"
import * as Toolkit from "effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import { failureCodeOf } from "./internal/wire.ts"
import * as Redaction from "./Redaction.ts"
import type { SessionTool } from "./Tools.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * A tool the driver runs itself: its untrusted parameters in, an observation out.
 *
 * @category models
 * @since 0.1.0
 */
export type HostTool = (params: unknown) => Effect.Effect<Observation>

/**
 * How a model-driven session is set up.
 *
 * @category models
 * @since 0.1.0
 */
export interface ModelDriverOptions {
  readonly model: LanguageModel.LanguageModel
  readonly system: string
  readonly task: string
  /** What the model may call (their JSON Schemas are sent). */
  readonly tools: ReadonlyArray<SessionTool>
  readonly host?: Readonly<Record<string, HostTool>> | undefined
  /** Asked before `finish` reaches the session: a refusal keeps the session going. */
  readonly beforeFinish?: Effect.Effect<Observation | undefined> | undefined
  /** Input plus output tokens the session may spend; checked before each model call. */
  readonly tokenBudget?: number | undefined
  /** Tool calls (session and host) before the driver stops (default 200). */
  readonly maxSteps?: number | undefined
  /** Replies without a tool call before the driver gives up (default 2). */
  readonly maxTextTurns?: number | undefined
  /** Told one line per tool call as it is answered (live progress). */
  readonly onStep?: ((line: string) => Effect.Effect<void>) | undefined
  readonly label?: string | undefined
  /** What `report` redacts with (default: the redactor of `model`'s provider). */
  readonly redact?: Redaction.Redactor | undefined
}

/**
 * What a driver did: tokens used, why it stopped (when not by `finish`), the host steps and
 * the conversation.
 *
 * @category models
 * @since 0.1.0
 */
export interface DriverReport {
  readonly usage: TokenUsage
  readonly stop?: { readonly reason: StopReason; readonly message: string }
  readonly hostSteps: ReadonlyArray<Step>
  readonly transcript: ReadonlyArray<TranscriptEntry>
}

/**
 * A model driver: the `Driver` and its report so far.
 *
 * @category models
 * @since 0.1.0
 */
export interface ModelDriver {
  readonly driver: Driver["Service"]
  readonly report: () => DriverReport
}

interface Call {
  readonly id: string
  readonly name: string
  readonly params: unknown
}

const NUDGE = "Reply with a tool call: use the tools to do the task, and call finish when it is done."

/** A failure's description without the module prefix (the reason's own text names the setting). */
const describe = (e: AiError.AiError): string => {
  const d = (e.reason as { description?: unknown }).description
  return typeof d === "string" ? d : e.message
}

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

/**
 * A report as `transcript.json` holds it (`Transcript`; host steps are in the trace).
 *
 * @category constructors
 * @since 0.1.0
 */
export const transcriptFile = (report: DriverReport): Transcript => ({
  schemaVersion: 1,
  usage: report.usage,
  ...(report.stop === undefined ? {} : { stop: report.stop }),
  messages: report.transcript
})

/**
 * A driver over `options.model`; create one per session attempt.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: ModelDriverOptions): ModelDriver => {
  const toolkit = Toolkit.make(...options.tools)
  const messages: Array<Prompt.Message> = [
    Prompt.makeMessage("system", { content: options.system }),
    Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text: options.task })] })
  ]
  const transcript: Array<TranscriptEntry> = [{ role: "system", text: options.system }, { role: "user", text: options.task }]
  const hostSteps: Array<Step> = []
  let pending: Array<Call> = []
  let results: Array<{ readonly call: Call; readonly observation: Observation }> = []
  let awaiting: Call | undefined
  let stop: DriverReport["stop"]
  let inputTokens = 0
  let outputTokens = 0
  let modelCalls = 0
  let textTurns = 0
  const maxSteps = options.maxSteps ?? 200
  const redact = options.redact ?? Redaction.forModel(options.model)
  const label = options.label === undefined ? "" : `${options.label}: `

  const answer = (call: Call, observation: Observation) =>
    Effect.suspend(() => {
      results.push({ call, observation })
      return options.onStep === undefined
        ? Effect.void
        : options.onStep(`${label}${call.name} ${observation.ok ? "ok" : `refused (${observation.code ?? "?"})`}`)
    })

  const flushResults = () => {
    if (results.length === 0) return
    messages.push(Prompt.makeMessage("tool", {
      content: results.map((r) =>
        Prompt.makePart("tool-result", { id: r.call.id, name: r.call.name, isFailure: !r.observation.ok, result: r.observation, providerExecuted: false })
      )
    }))
    transcript.push({
      role: "tool",
      toolResults: results.map((r) => ({ id: r.call.id, name: r.call.name, isFailure: !r.observation.ok, result: r.observation }))
    })
    results = []
  }

  const askModel = Effect.gen(function*() {
    modelCalls += 1
    const reply = yield* options.model.generateText({
      prompt: Prompt.fromMessages(messages),
      toolkit,
      disableToolCallResolution: true,
      toolCallValidation: "deferred"
    })
    inputTokens += reply.usage.inputTokens.total ?? 0
    outputTokens += reply.usage.outputTokens.total ?? 0
    const text = reply.text
    const calls: Array<Call> = reply.toolCalls.map((c) => ({ id: c.id, name: c.name, params: c.params }))
    messages.push(Prompt.makeMessage("assistant", {
      content: [
        ...(text === "" ? [] : [Prompt.makePart("text", { text })]),
        ...calls.map((c) => Prompt.makePart("tool-call", { id: c.id, name: c.name, params: c.params, providerExecuted: false }))
      ]
    }))
    // A copy: the caller works through `calls` by shifting them off.
    transcript.push({ role: "assistant", ...(text === "" ? {} : { text }), ...(calls.length === 0 ? {} : { toolCalls: [...calls] }) })
    return calls
  })

  const next = (steps: ReadonlyArray<Step>): Effect.Effect<unknown> =>
    Effect.gen(function*() {
      if (awaiting !== undefined) {
        const last = steps[steps.length - 1]
        yield* answer(awaiting, last?.observation ?? refused("no_observation", "The action returned no observation."))
        awaiting = undefined
      }
      for (;;) {
        if (stop !== undefined) return undefined
        while (pending.length > 0) {
          const call = pending.shift()!
          if (steps.length + hostSteps.length >= maxSteps) {
            stop = { reason: "step_limit", message: `the model made ${maxSteps} tool calls without finishing (step limit)` }
            return undefined
          }
          const host = options.host?.[call.name]
          if (host !== undefined) {
            const observation = yield* host(call.params)
            hostSteps.push({ action: { [call.name]: call.params }, observation })
            yield* answer(call, observation)
            continue
          }
          if (call.name === "finish" && options.beforeFinish !== undefined) {
            const refusal = yield* options.beforeFinish
            if (refusal !== undefined) {
              hostSteps.push({ action: { finish: call.params }, observation: refusal })
              yield* answer(call, refusal)
              continue
            }
          }
          awaiting = call
          return { [call.name]: call.params }
        }
        flushResults()
        if (options.tokenBudget !== undefined && inputTokens + outputTokens >= options.tokenBudget) {
          stop = {
            reason: "budget_exhausted",
            message: `the token budget is spent (${inputTokens + outputTokens} of ${options.tokenBudget} tokens) before the model finished`
          }
          return undefined
        }
        const asked = yield* Effect.result(askModel)
        if (asked._tag === "Failure") {
          stop = { reason: failureCodeOf(asked.failure) ?? "provider_failed", message: describe(asked.failure) }
          return undefined
        }
        if (asked.success.length === 0) {
          textTurns += 1
          if (textTurns > (options.maxTextTurns ?? 2)) {
            stop = { reason: "no_tool_call", message: `the model answered ${textTurns} times without calling a tool` }
            return undefined
          }
          messages.push(Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text: NUDGE })] }))
          transcript.push({ role: "user", text: NUDGE })
          continue
        }
        pending = asked.success
      }
    })

  // Redacted again here: tool results (a file the model read) and the task never crossed the provider boundary.
  const report = (): DriverReport =>
    redact.value({
      usage: { inputTokens, outputTokens, modelCalls },
      ...(stop === undefined ? {} : { stop }),
      hostSteps: [...hostSteps],
      transcript: [...transcript]
    })
  return {
    // What the child's artifact namespace keeps: the conversation, tokens and why it stopped.
    driver: Driver.of({ next, transcript: () => transcriptFile(report()) }),
    report
  }
}
