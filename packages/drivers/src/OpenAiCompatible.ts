/**
 * The OpenAI-compatible Chat Completions provider (OpenAI, vLLM, Ollama, LM Studio,
 * OpenRouter): an `effect/ai` `LanguageModel` over `POST {baseUrl}/chat/completions`, JSON or
 * server-sent events (`stream: true`, usage requested with `stream_options`), tool calls as
 * `tools`/`tool_calls`, tool results as `tool` messages.
 *
 * Owns the Chat Completions wire format. Does not own HTTP, retries and timeouts
 * (`internal/http.ts`) nor what the model is asked (`ModelDriver`).
 *
 * @since 0.1.0
 */
import * as LanguageModel from "effect/ai/LanguageModel"
import type * as Prompt from "effect/ai/Prompt"
import type * as Response from "effect/ai/Response"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { invalidAnswer, post, postStream, type SseEvent } from "./internal/http.ts"
import { hooks, memoByMessage, parseArguments, resultText, usagePart, wireTools } from "./internal/wire.ts"
import type { ResolvedProvider } from "./ProviderSettings.ts"
import * as Redaction from "./Redaction.ts"

interface ChatToolCall {
  readonly id?: string
  readonly type?: string
  readonly function?: { readonly name?: string; readonly arguments?: string }
}

interface ChatChoice {
  readonly message?: { readonly content?: string | null; readonly tool_calls?: ReadonlyArray<ChatToolCall> }
  readonly finish_reason?: string | null
}

interface ChatUsage {
  readonly prompt_tokens?: number
  readonly completion_tokens?: number
}

const FINISH: Record<string, typeof Response.FinishReason.Encoded> = {
  stop: "stop",
  tool_calls: "tool-calls",
  function_call: "tool-calls",
  length: "length",
  content_filter: "content-filter"
}

/**
 * The Chat Completions `messages` of a prompt.
 *
 * @category constructors
 * @since 0.1.0
 */
export const messagesOf = (prompt: Prompt.Prompt): Array<Record<string, unknown>> => prompt.content.flatMap(wireMessage)

const wireMessage = memoByMessage((m: Prompt.Message): ReadonlyArray<Record<string, unknown>> => {
  switch (m.role) {
    case "system":
      return [{ role: "system", content: m.content }]
    case "user":
      return [{ role: "user", content: m.content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n") }]
    case "assistant": {
      const text = m.content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("")
      const calls = m.content.flatMap((p) =>
        p.type === "tool-call"
          ? [{ id: p.id, type: "function", function: { name: p.name, arguments: typeof p.params === "string" ? p.params : JSON.stringify(p.params) } }]
          : []
      )
      return [{ role: "assistant", content: text === "" ? null : text, ...(calls.length === 0 ? {} : { tool_calls: calls }) }]
    }
    case "tool":
      return m.content.flatMap((p) => (p.type === "tool-result" ? [{ role: "tool", tool_call_id: p.id, content: resultText(p.result) }] : []))
  }
})

const toolChoiceOf = (choice: LanguageModel.ProviderOptions["toolChoice"]): unknown => {
  if (typeof choice === "string") return choice
  if ("tool" in choice) return { type: "function", function: { name: choice.tool } }
  return choice.mode ?? "auto"
}

const bodyOf = (p: ResolvedProvider, options: LanguageModel.ProviderOptions) => {
  const tools = wireTools(options.tools)
  return {
    model: p.model,
    messages: messagesOf(options.prompt),
    max_tokens: p.maxTokens,
    ...(tools.length === 0 ? {} : {
      tools: tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.parameters } })),
      tool_choice: toolChoiceOf(options.toolChoice)
    }),
    ...(p.stream ? { stream: true, stream_options: { include_usage: true } } : {})
  }
}

const partsOf = (choice: ChatChoice | undefined, usage: ChatUsage | undefined): Array<Response.PartEncoded> => {
  const parts: Array<Response.PartEncoded> = []
  const text = choice?.message?.content
  if (typeof text === "string" && text !== "") parts.push({ type: "text", text })
  for (const [i, c] of (choice?.message?.tool_calls ?? []).entries()) {
    parts.push({
      type: "tool-call",
      id: c.id ?? `call_${i}`,
      name: c.function?.name ?? "",
      params: parseArguments(c.function?.arguments ?? ""),
      providerExecuted: false
    })
  }
  parts.push(usagePart(FINISH[choice?.finish_reason ?? ""] ?? "unknown", usage?.prompt_tokens, usage?.completion_tokens))
  return parts
}

/** Folds Chat Completions stream chunks into one reply. */
const streamFolder = () => {
  let text = ""
  let finish: string | null | undefined
  let usage: ChatUsage | undefined
  let error: string | undefined
  const calls = new Map<number, { id?: string; name: string; args: string }>()
  return {
    onEvent: (e: SseEvent) => {
      if (e.data === "[DONE]") return
      let chunk: { choices?: ReadonlyArray<{ delta?: { content?: string | null; tool_calls?: ReadonlyArray<ChatToolCall & { index?: number }> }; finish_reason?: string | null }>; usage?: ChatUsage; error?: { message?: string } }
      try {
        chunk = JSON.parse(e.data)
      } catch {
        error = `a stream chunk is not JSON (${JSON.stringify(e.data.slice(0, 80))})`
        return
      }
      if (chunk.error !== undefined) error = chunk.error.message ?? "the stream reported an error"
      if (chunk.usage != null) usage = chunk.usage
      for (const c of chunk.choices ?? []) {
        if (typeof c.delta?.content === "string") text += c.delta.content
        for (const t of c.delta?.tool_calls ?? []) {
          const index = t.index ?? 0
          const acc = calls.get(index) ?? { name: "", args: "" }
          if (t.id !== undefined) acc.id = t.id
          if (t.function?.name !== undefined) acc.name += t.function.name
          if (t.function?.arguments !== undefined) acc.args += t.function.arguments
          calls.set(index, acc)
        }
        if (c.finish_reason != null) finish = c.finish_reason
      }
    },
    result: (): { readonly choice: ChatChoice; readonly usage: ChatUsage | undefined; readonly error: string | undefined } => ({
      choice: {
        message: {
          content: text,
          tool_calls: [...calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => ({
            ...(c.id === undefined ? {} : { id: c.id }),
            type: "function",
            function: { name: c.name, arguments: c.args }
          }))
        },
        finish_reason: finish ?? null
      },
      usage,
      error
    })
  }
}

const generate = (p: ResolvedProvider) => (options: LanguageModel.ProviderOptions) =>
  Effect.gen(function*() {
    const request = {
      provider: p,
      headers: p.apiKey === undefined ? {} : { authorization: `Bearer ${Redacted.value(p.apiKey)}` },
      body: bodyOf(p, options),
      module: "OpenAiCompatible",
      method: "generateText"
    }
    if (p.stream) {
      const r = yield* postStream(request, streamFolder())
      return partsOf(r.choice, r.usage)
    }
    const body = (yield* post(request)) as { choices?: ReadonlyArray<ChatChoice>; usage?: ChatUsage } | null
    if (typeof body !== "object" || body === null || !Array.isArray(body.choices)) {
      return yield* invalidAnswer(request, "the answer has no 'choices'; is the base URL an OpenAI-compatible /v1 API?")
    }
    return partsOf(body.choices[0], body.usage)
  })

/**
 * A `LanguageModel` speaking Chat Completions to `provider`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (provider: ResolvedProvider): Effect.Effect<LanguageModel.LanguageModel> =>
  Effect.map(LanguageModel.make(hooks("OpenAiCompatible", provider, generate(provider))), (model) => Redaction.register(model, provider.redact))

/**
 * `make` as a layer of the `LanguageModel` service.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (provider: ResolvedProvider): Layer.Layer<LanguageModel.LanguageModel> =>
  Layer.effect(LanguageModel.LanguageModel, make(provider))
