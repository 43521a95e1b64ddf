/**
 * What both providers share between the wire and `effect/ai`: a tool's JSON Schema and
 * description, tool-call arguments parsed leniently (text that is not JSON is passed on as is,
 * so the session turns it into an `invalid_action` observation instead of a crash), the
 * usage part, and a finished reply replayed as stream parts.
 */
import type * as LanguageModel from "effect/ai/LanguageModel"
import type * as Prompt from "effect/ai/Prompt"
import type * as Response from "effect/ai/Response"
import * as Tool from "effect/ai/Tool"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type * as AiError from "effect/ai/AiError"
import type { IdGenerator } from "effect/ai/IdGenerator"

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

export const usagePart = (
  reason: typeof Response.FinishReason.Encoded,
  input: number | undefined,
  output: number | undefined
): Response.PartEncoded => ({
  type: "finish",
  reason,
  usage: {
    inputTokens: { total: input, uncached: undefined, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: output, text: undefined, reasoning: undefined }
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

/** The two hooks of `LanguageModel.make` from one request function (streaming replays the reply). */
export const hooks = (
  generate: (options: LanguageModel.ProviderOptions) => Effect.Effect<Array<Response.PartEncoded>, AiError.AiError>
) => ({
  generateText: (options: LanguageModel.ProviderOptions): Effect.Effect<Array<Response.PartEncoded>, AiError.AiError, IdGenerator> => generate(options),
  streamText: (options: LanguageModel.ProviderOptions): Stream.Stream<Response.StreamPartEncoded, AiError.AiError, IdGenerator> =>
    Stream.fromIterableEffect(Effect.map(generate(options), asStreamParts))
})

/** The system text of a prompt (its system messages joined). */
export const systemText = (prompt: Prompt.Prompt): string =>
  prompt.content.flatMap((m) => (m.role === "system" ? [m.content] : [])).join("\n\n")
