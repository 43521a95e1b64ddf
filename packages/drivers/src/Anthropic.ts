/**
 * The Anthropic Messages provider: an `effect/ai` `LanguageModel` over
 * `POST {baseUrl}/v1/messages` (`anthropic-version: 2023-06-01`), JSON or server-sent events
 * (`message_start` … `content_block_delta` … `message_delta`), tool calls as `tool_use`
 * blocks, tool results as `tool_result` blocks in the next user turn.
 *
 * Owns the Messages wire format. Does not own HTTP, retries and timeouts (`internal/http.ts` over `@forkjoin/http`)
 * nor what the model is asked (`ModelDriver`).
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
import { hooks, memoByMessage, parseArguments, resultText, systemText, usagePart, wireTools } from "./internal/wire.ts"
import type { ResolvedProvider } from "./ProviderSettings.ts"
import * as Redaction from "./Redaction.ts"

type Block =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly input: unknown }
  | { readonly type: "tool_result"; readonly tool_use_id: string; readonly content: string; readonly is_error: boolean }

interface Usage {
  readonly input_tokens?: number
  readonly output_tokens?: number
}

const FINISH: Record<string, typeof Response.FinishReason.Encoded> = {
  end_turn: "stop",
  stop_sequence: "stop",
  tool_use: "tool-calls",
  max_tokens: "length",
  refusal: "content-filter",
  pause_turn: "pause"
}

/**
 * The Messages `messages` of a prompt (system text goes in `system`); consecutive turns of
 * one role are merged, as the API expects alternating turns.
 *
 * @category constructors
 * @since 0.1.0
 */
export const messagesOf = (prompt: Prompt.Prompt): Array<{ role: "user" | "assistant"; content: Array<Block> }> => {
  const out: Array<{ role: "user" | "assistant"; content: Array<Block> }> = []
  const push = (role: "user" | "assistant", blocks: Array<Block>) => {
    if (blocks.length === 0) return
    const last = out[out.length - 1]
    if (last !== undefined && last.role === role) last.content.push(...blocks)
    else out.push({ role, content: blocks })
  }
  for (const m of prompt.content) {
    const w = wireBlocks(m)
    if (w !== undefined) push(w.role, [...w.blocks])
  }
  return out
}

const wireBlocks = memoByMessage((m: Prompt.Message): { readonly role: "user" | "assistant"; readonly blocks: ReadonlyArray<Block> } | undefined => {
  switch (m.role) {
    case "system":
      return undefined
    case "user":
      return { role: "user", blocks: m.content.flatMap((p): Array<Block> => (p.type === "text" ? [{ type: "text", text: p.text }] : [])) }
    case "assistant":
      return {
        role: "assistant",
        blocks: m.content.flatMap((p): Array<Block> =>
          p.type === "text" && p.text !== ""
            ? [{ type: "text", text: p.text }]
            : p.type === "tool-call"
            // A malformed call's raw text is not an object; the API wants one for `input`.
            ? [{ type: "tool_use", id: p.id, name: p.name, input: typeof p.params === "object" && p.params !== null ? p.params : { raw: String(p.params) } }]
            : []
        )
      }
    case "tool":
      return {
        role: "user",
        blocks: m.content.flatMap((p): Array<Block> =>
          p.type === "tool-result" ? [{ type: "tool_result", tool_use_id: p.id, content: resultText(p.result), is_error: p.isFailure }] : []
        )
      }
  }
})

const toolChoiceOf = (choice: LanguageModel.ProviderOptions["toolChoice"]): unknown => {
  if (choice === "auto") return { type: "auto" }
  if (choice === "none") return { type: "none" }
  if (choice === "required") return { type: "any" }
  if ("tool" in choice) return { type: "tool", name: choice.tool }
  return { type: choice.mode === "required" ? "any" : "auto" }
}

const bodyOf = (p: ResolvedProvider, options: LanguageModel.ProviderOptions) => {
  const tools = wireTools(options.tools)
  const system = systemText(options.prompt)
  return {
    model: p.model,
    max_tokens: p.maxTokens,
    ...(system === "" ? {} : { system }),
    messages: messagesOf(options.prompt),
    ...(tools.length === 0 ? {} : {
      tools: tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters })),
      tool_choice: toolChoiceOf(options.toolChoice)
    }),
    ...(p.stream ? { stream: true } : {})
  }
}

const partsOf = (content: ReadonlyArray<{ readonly type?: string | undefined; readonly text?: string | undefined; readonly id?: string | undefined; readonly name?: string | undefined; readonly input?: unknown }>, stop: string | null | undefined, usage: Usage | undefined) => {
  const parts: Array<Response.PartEncoded> = []
  for (const [i, b] of content.entries()) {
    if (b.type === "text" && typeof b.text === "string" && b.text !== "") parts.push({ type: "text", text: b.text })
    if (b.type === "tool_use") parts.push({ type: "tool-call", id: b.id ?? `toolu_${i}`, name: b.name ?? "", params: b.input, providerExecuted: false })
  }
  parts.push(usagePart(FINISH[stop ?? ""] ?? "unknown", usage?.input_tokens, usage?.output_tokens))
  return parts
}

/** Folds Messages stream events into one reply. */
const streamFolder = () => {
  const blocks = new Map<number, { type: string; text: string; id?: string; name?: string; json: string; input?: unknown }>()
  let stop: string | null | undefined
  let input: number | undefined
  let output: number | undefined
  let error: string | undefined
  return {
    onEvent: (e: SseEvent) => {
      let data: {
        type?: string
        index?: number
        message?: { usage?: Usage }
        content_block?: { type?: string; text?: string; id?: string; name?: string; input?: unknown }
        delta?: { type?: string; text?: string; partial_json?: string; stop_reason?: string | null }
        usage?: Usage
        error?: { message?: string }
      }
      try {
        data = JSON.parse(e.data)
      } catch {
        error = `a stream event is not JSON (${JSON.stringify(e.data.slice(0, 80))})`
        return
      }
      switch (data.type ?? e.event) {
        case "message_start":
          input = data.message?.usage?.input_tokens ?? input
          output = data.message?.usage?.output_tokens ?? output
          break
        case "content_block_start": {
          const b = data.content_block ?? {}
          blocks.set(data.index ?? 0, {
            type: b.type ?? "text",
            text: b.text ?? "",
            ...(b.id === undefined ? {} : { id: b.id }),
            ...(b.name === undefined ? {} : { name: b.name }),
            json: "",
            input: b.input
          })
          break
        }
        case "content_block_delta": {
          const b = blocks.get(data.index ?? 0)
          if (b === undefined) break
          if (data.delta?.type === "text_delta") b.text += data.delta.text ?? ""
          if (data.delta?.type === "input_json_delta") b.json += data.delta.partial_json ?? ""
          break
        }
        case "message_delta":
          stop = data.delta?.stop_reason ?? stop
          output = data.usage?.output_tokens ?? output
          input = data.usage?.input_tokens ?? input
          break
        case "error":
          error = data.error?.message ?? "the stream reported an error"
          break
      }
    },
    result: () => ({
      content: [...blocks.entries()].sort(([a], [b]) => a - b).map(([, b]) =>
        b.type === "tool_use"
          ? { type: "tool_use", id: b.id ?? "", name: b.name ?? "", input: b.json === "" ? (b.input ?? {}) : parseArguments(b.json) }
          : { type: b.type, text: b.text }
      ),
      stop,
      usage: { ...(input === undefined ? {} : { input_tokens: input }), ...(output === undefined ? {} : { output_tokens: output }) },
      error
    })
  }
}

const generate = (p: ResolvedProvider) => (options: LanguageModel.ProviderOptions) =>
  Effect.gen(function*() {
    const request = {
      provider: p,
      headers: { "anthropic-version": "2023-06-01", ...(p.apiKey === undefined ? {} : { "x-api-key": Redacted.value(p.apiKey) }) },
      body: bodyOf(p, options),
      module: "Anthropic",
      method: "generateText"
    }
    if (p.stream) {
      const r = yield* postStream(request, streamFolder())
      return partsOf(r.content, r.stop, r.usage)
    }
    const body = (yield* post(request)) as { content?: ReadonlyArray<{ type?: string }>; stop_reason?: string | null; usage?: Usage } | null
    if (typeof body !== "object" || body === null || !Array.isArray(body.content)) {
      return yield* invalidAnswer(request, "the answer has no 'content'; is the base URL the Anthropic Messages API?")
    }
    return partsOf(body.content, body.stop_reason, body.usage)
  })

/**
 * A `LanguageModel` speaking Anthropic Messages to `provider`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (provider: ResolvedProvider): Effect.Effect<LanguageModel.LanguageModel> =>
  Effect.map(LanguageModel.make(hooks("Anthropic", provider, generate(provider))), (model) => Redaction.register(model, provider.redact))

/**
 * `make` as a layer of the `LanguageModel` service.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (provider: ResolvedProvider): Layer.Layer<LanguageModel.LanguageModel> =>
  Layer.effect(LanguageModel.LanguageModel, make(provider))
