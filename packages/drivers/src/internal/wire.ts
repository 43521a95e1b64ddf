/**
 * What both providers share between the wire and `effect/ai`: a tool's JSON Schema and
 * description, tool-call arguments parsed leniently (text that is not JSON is passed on as is,
 * so the session turns it into an `invalid_action` observation instead of a crash), the
 * usage part, a finished reply replayed as stream parts, and the checks every reply passes
 * before forkjoin uses it: token counts are whole numbers of at least 0, and every string of it
 * is redacted (a key split over stream chunks or hidden behind JSON escapes is whole here).
 */
import type { StopReason } from "@forkjoin/schema/Transcript"
import * as AiError from "effect/ai/AiError"
import type * as LanguageModel from "effect/ai/LanguageModel"
import type * as Prompt from "effect/ai/Prompt"
import type * as Response from "effect/ai/Response"
import * as Tool from "effect/ai/Tool"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { IdGenerator } from "effect/ai/IdGenerator"
import type { Redactor } from "../Redaction.ts"

/** The provider failures a session reports by their own stop reason (the rest: `provider_failed`). */
export type ProviderFailureCode = Extract<StopReason, "provider_response_too_large" | "provider_protocol_error">

/** The error reason of a coded failure: the code rides in the reason's provider metadata. */
export const codedFailure = (code: ProviderFailureCode, description: string): AiError.InvalidResponseError =>
  new AiError.InvalidResponseError({ description, metadata: { forkjoin: { code } } })

/** The code of a failure made by `codedFailure`, if it is one. */
export const failureCodeOf = (e: AiError.AiError): ProviderFailureCode | undefined => {
  const meta = e.reason._tag === "InvalidResponseError" ? e.reason.metadata["forkjoin"] : undefined
  const code = typeof meta === "object" && meta !== null && !Array.isArray(meta) ? meta["code"] : undefined
  return code === "provider_response_too_large" || code === "provider_protocol_error" ? code : undefined
}

/** A tool as the wire describes it. */
export interface WireTool {
  readonly name: string
  readonly description: string
  readonly parameters: unknown
}

// A tool's JSON Schema is derived once: every request of a session sends the same tools.
const wireToolCache = new WeakMap<Tool.Any, WireTool>()

export const wireTools = (tools: ReadonlyArray<Tool.Any>): ReadonlyArray<WireTool> =>
  tools.map((t) => {
    let w = wireToolCache.get(t)
    if (w === undefined) {
      w = { name: t.name, description: Tool.getDescription(t) ?? t.name, parameters: Tool.getJsonSchema(t) }
      wireToolCache.set(t, w)
    }
    return w
  })

/**
 * Memoizes a message's wire form by the message object: a conversation resends its whole
 * history every turn, and messages never change once made.
 */
export const memoByMessage = <M extends object, W>(convert: (m: M) => W): ((m: M) => W) => {
  const cache = new WeakMap<M, W>()
  return (m) => {
    let w = cache.get(m)
    if (w === undefined) {
      w = convert(m)
      cache.set(m, w)
    }
    return w
  }
}

/** Tool-call arguments: JSON when they parse, the raw text otherwise (the session refuses it). */
export const parseArguments = (text: string): unknown => {
  if (text.trim() === "") return {}
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** Text of a tool result as the model reads it. */
export const resultText = (result: unknown): string => (typeof result === "string" ? result : JSON.stringify(result))

/** The finish part; a count the provider left out or sent as `null` is `undefined` (checked by `hooks`). */
export const usagePart = (
  reason: typeof Response.FinishReason.Encoded,
  input: number | null | undefined,
  output: number | null | undefined
): Response.PartEncoded => ({
  type: "finish",
  reason,
  usage: {
    inputTokens: { total: input ?? undefined, uncached: undefined, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: output ?? undefined, text: undefined, reasoning: undefined }
  }
})

/** Parts of a finished reply as stream parts (text as start/delta/end). */
export const asStreamParts = (parts: ReadonlyArray<Response.PartEncoded>): Array<Response.StreamPartEncoded> =>
  parts.flatMap((p, i): Array<Response.StreamPartEncoded> =>
    p.type === "text"
      ? [{ type: "text-start", id: `t${i}` }, { type: "text-delta", id: `t${i}`, delta: p.text }, { type: "text-end", id: `t${i}` }]
      : p.type === "tool-call" || p.type === "finish"
      ? [p]
      : []
  )

const isTokenCount = (n: unknown): boolean => n === undefined || (typeof n === "number" && Number.isSafeInteger(n) && n >= 0)

/** A reply's parts checked (token counts) and redacted, or the protocol error refusing it. */
const accept = (module: string, endpoint: string, redact: Redactor) => (parts: Array<Response.PartEncoded>) =>
  Effect.suspend(() => {
    for (const p of parts) {
      if (p.type !== "finish") continue
      const counts = { input: p.usage.inputTokens.total as unknown, output: p.usage.outputTokens.total as unknown }
      for (const [side, n] of Object.entries(counts)) {
        if (isTokenCount(n)) continue
        return Effect.fail(AiError.make({
          module,
          method: "generateText",
          reason: codedFailure(
            "provider_protocol_error",
            `${endpoint} reported ${JSON.stringify(n) ?? String(n)} ${side} tokens, not a whole number of at least 0; the answer was refused and not counted`
          )
        }))
      }
    }
    return Effect.succeed(redact.value(parts))
  })

/**
 * The two hooks of `LanguageModel.make` from one request function (streaming replays the
 * reply); every reply is checked and redacted first.
 */
export const hooks = (
  module: string,
  provider: { readonly endpoint: string; readonly redact: Redactor },
  generate: (options: LanguageModel.ProviderOptions) => Effect.Effect<Array<Response.PartEncoded>, AiError.AiError>
) => {
  const checked = (options: LanguageModel.ProviderOptions) => Effect.flatMap(generate(options), accept(module, provider.endpoint, provider.redact))
  return {
    generateText: (options: LanguageModel.ProviderOptions): Effect.Effect<Array<Response.PartEncoded>, AiError.AiError, IdGenerator> => checked(options),
    streamText: (options: LanguageModel.ProviderOptions): Stream.Stream<Response.StreamPartEncoded, AiError.AiError, IdGenerator> =>
      Stream.fromIterableEffect(Effect.map(checked(options), asStreamParts))
  }
}

/** The system text of a prompt (its system messages joined). */
export const systemText = (prompt: Prompt.Prompt): string =>
  prompt.content.flatMap((m) => (m.role === "system" ? [m.content] : [])).join("\n\n")
