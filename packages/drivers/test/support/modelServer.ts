/**
 * A scripted model server on loopback speaking each provider's real wire protocol: OpenAI
 * Chat Completions and Anthropic Messages, JSON or server-sent events (whichever the request
 * asks for). Each request is read back into a conversation (its task, how many assistant turns
 * it holds, the tool results it just sent) and a script decides the reply: tool calls (well
 * formed or raw text), plain text, an HTTP error with `retry-after`, a non-JSON body, a
 * stalled answer, or a flood (an answer of `flood` bytes that never ends). Every request is
 * kept for assertions.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"

/** A tool call to send; `raw` sends the arguments text as is (malformed on purpose). */
export type ScriptedCall = { readonly name: string; readonly args: unknown } | { readonly name: string; readonly raw: string }

/** One reply of the model server. */
export type Turn =
  | { readonly calls: ReadonlyArray<ScriptedCall>; readonly text?: string; readonly usage?: { readonly input: number; readonly output: number } }
  | { readonly text: string }
  | { readonly status: number; readonly retryAfter?: string; readonly body?: string }
  | { readonly stall: true }
  | { readonly raw: string }
  /** `flood` bytes of an answer (JSON or events) written as the client reads them, then never ended; `announce` sends them as the content-length. */
  | { readonly flood: number; readonly announce?: boolean }
  /** The turn `later` resolves to, answered only then (a model the test holds until an event). */
  | { readonly later: Promise<Turn> }

/** A tool result the client sent back, its content parsed when JSON. */
export interface SentResult {
  readonly name: string | undefined
  readonly isError: boolean
  readonly content: { readonly ok?: boolean; readonly code?: string; readonly message?: string; readonly data?: any } | string
}

/** What the script sees of a request. */
export interface Conversation {
  readonly system: string
  readonly task: string
  /** Assistant turns already in the conversation (0 on the first request). */
  readonly turn: number
  readonly results: ReadonlyArray<SentResult>
  /** Tool names the request declares. */
  readonly tools: ReadonlyArray<string>
  /** How many requests this server has answered so far (all conversations). */
  readonly request: number
}

/** A script: the reply to one request. */
export type Script = (c: Conversation) => Turn

/** A request as received. */
export interface Received {
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: any
}

/** A running server. */
export interface ModelServer {
  readonly url: string
  readonly requests: Array<Received>
  /** Resolves when the client hangs up on the first flood, with the bytes written by then. */
  readonly floodClosed: Promise<{ readonly written: number }>
  readonly close: () => Promise<void>
}

const parse = (s: string): SentResult["content"] => {
  try {
    return JSON.parse(s)
  } catch {
    return s
  }
}

const openAiConversation = (body: any, request: number): Conversation => {
  const messages: Array<any> = body.messages ?? []
  const names = new Map<string, string>()
  for (const m of messages) for (const c of m.tool_calls ?? []) names.set(c.id, c.function.name)
  const results: Array<SentResult> = []
  for (let i = messages.length - 1; i >= 0 && messages[i].role === "tool"; i--) {
    results.unshift({ name: names.get(messages[i].tool_call_id), isError: false, content: parse(messages[i].content) })
  }
  return {
    system: messages.find((m) => m.role === "system")?.content ?? "",
    task: messages.find((m) => m.role === "user")?.content ?? "",
    turn: messages.filter((m) => m.role === "assistant").length,
    results: results.map((r) => ({ ...r, isError: typeof r.content === "object" && r.content.ok === false })),
    tools: (body.tools ?? []).map((t: any) => t.function.name),
    request
  }
}

const anthropicConversation = (body: any, request: number): Conversation => {
  const messages: Array<any> = body.messages ?? []
  const names = new Map<string, string>()
  for (const m of messages) for (const b of m.content ?? []) if (b.type === "tool_use") names.set(b.id, b.name)
  const last = messages[messages.length - 1]
  const results: Array<SentResult> = (last?.role === "user" ? last.content : [])
    .filter((b: any) => b.type === "tool_result")
    .map((b: any) => ({ name: names.get(b.tool_use_id), isError: b.is_error === true, content: parse(b.content) }))
  const first = messages.find((m) => m.role === "user")
  return {
    system: body.system ?? "",
    task: (first?.content ?? []).find((b: any) => b.type === "text")?.text ?? "",
    turn: messages.filter((m) => m.role === "assistant").length,
    results,
    tools: (body.tools ?? []).map((t: any) => t.name),
    request
  }
}

const argsText = (c: ScriptedCall) => ("raw" in c ? c.raw : JSON.stringify(c.args))

const sse = (res: http.ServerResponse, events: ReadonlyArray<{ event?: string; data: unknown }>) => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  for (const e of events) res.write(`${e.event === undefined ? "" : `event: ${e.event}\n`}data: ${typeof e.data === "string" ? e.data : JSON.stringify(e.data)}\n\n`)
  res.end()
}

const openAiReply = (res: http.ServerResponse, turn: Extract<Turn, { calls: any }> | { text: string; calls?: undefined; usage?: undefined }, stream: boolean, n: number) => {
  const calls = turn.calls ?? []
  const usage = { prompt_tokens: turn.usage?.input ?? 10, completion_tokens: turn.usage?.output ?? 5 }
  const finish = calls.length > 0 ? "tool_calls" : "stop"
  const ids = calls.map((_, i) => `call_${n}_${i}`)
  if (!stream) {
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify({
      id: `chatcmpl-${n}`,
      object: "chat.completion",
      model: "test",
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          content: turn.text ?? null,
          ...(calls.length === 0 ? {} : { tool_calls: calls.map((c, i) => ({ id: ids[i], type: "function", function: { name: c.name, arguments: argsText(c) } })) })
        },
        finish_reason: finish
      }],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens }
    }))
    return
  }
  const chunk = (delta: unknown, finish_reason: string | null = null) => ({ data: { id: `chatcmpl-${n}`, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason }] } })
  const events: Array<{ data: unknown }> = [chunk({ role: "assistant", content: "" })]
  if (turn.text !== undefined) {
    const half = Math.floor(turn.text.length / 2)
    events.push(chunk({ content: turn.text.slice(0, half) }), chunk({ content: turn.text.slice(half) }))
  }
  calls.forEach((c, i) => {
    const text = argsText(c)
    const half = Math.floor(text.length / 2)
    events.push(chunk({ tool_calls: [{ index: i, id: ids[i], type: "function", function: { name: c.name, arguments: "" } }] }))
    events.push(chunk({ tool_calls: [{ index: i, function: { arguments: text.slice(0, half) } }] }))
    events.push(chunk({ tool_calls: [{ index: i, function: { arguments: text.slice(half) } }] }))
  })
  events.push(chunk({}, finish), { data: { id: `chatcmpl-${n}`, object: "chat.completion.chunk", choices: [], usage } }, { data: "[DONE]" })
  sse(res, events)
}

const anthropicReply = (res: http.ServerResponse, turn: Extract<Turn, { calls: any }> | { text: string; calls?: undefined; usage?: undefined }, stream: boolean, n: number) => {
  const calls = turn.calls ?? []
  const usage = { input_tokens: turn.usage?.input ?? 10, output_tokens: turn.usage?.output ?? 5 }
  const stop = calls.length > 0 ? "tool_use" : "end_turn"
  const ids = calls.map((_, i) => `toolu_${n}_${i}`)
  if (!stream) {
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify({
      id: `msg_${n}`,
      type: "message",
      role: "assistant",
      model: "test",
      content: [
        ...(turn.text === undefined ? [] : [{ type: "text", text: turn.text }]),
        ...calls.map((c, i) => ({ type: "tool_use", id: ids[i], name: c.name, input: "raw" in c ? c.raw : c.args }))
      ],
      stop_reason: stop,
      usage
    }))
    return
  }
  const events: Array<{ event: string; data: unknown }> = [
    { event: "message_start", data: { type: "message_start", message: { id: `msg_${n}`, type: "message", role: "assistant", content: [], model: "test", usage: { input_tokens: usage.input_tokens, output_tokens: 1 } } } },
    { event: "ping", data: { type: "ping" } }
  ]
  let index = 0
  if (turn.text !== undefined) {
    events.push({ event: "content_block_start", data: { type: "content_block_start", index, content_block: { type: "text", text: "" } } })
    events.push({ event: "content_block_delta", data: { type: "content_block_delta", index, delta: { type: "text_delta", text: turn.text } } })
    events.push({ event: "content_block_stop", data: { type: "content_block_stop", index } })
    index++
  }
  calls.forEach((c, i) => {
    const text = argsText(c)
    const half = Math.floor(text.length / 2)
    events.push({ event: "content_block_start", data: { type: "content_block_start", index, content_block: { type: "tool_use", id: ids[i], name: c.name, input: {} } } })
    events.push({ event: "content_block_delta", data: { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: text.slice(0, half) } } })
    events.push({ event: "content_block_delta", data: { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: text.slice(half) } } })
    events.push({ event: "content_block_stop", data: { type: "content_block_stop", index } })
    index++
  })
  events.push({ event: "message_delta", data: { type: "message_delta", delta: { stop_reason: stop }, usage: { output_tokens: usage.output_tokens } } })
  events.push({ event: "message_stop", data: { type: "message_stop" } })
  sse(res, events)
}

/**
 * Starts a server for `kind` on 127.0.0.1 (an ephemeral port); `url` is the base URL a
 * provider is configured with (`…/v1` for OpenAI-compatible, the host for Anthropic).
 */
export const startModelServer = (kind: "openai" | "anthropic", script: Script): Promise<ModelServer> => {
  const requests: Array<Received> = []
  const sockets = new Set<import("node:net").Socket>()
  let floodClosed: (r: { readonly written: number }) => void = () => {}
  const floodClosedPromise = new Promise<{ readonly written: number }>((resolve) => (floodClosed = resolve))
  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      let body: any
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      } catch {
        res.writeHead(400).end("{}")
        return
      }
      const n = requests.length
      requests.push({ path: req.url ?? "", headers: req.headers, body })
      const expected = kind === "openai" ? "/v1/chat/completions" : "/v1/messages"
      if (req.url !== expected) {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `no route ${req.url}` } }))
        return
      }
      const conversation = kind === "openai" ? openAiConversation(body, n) : anthropicConversation(body, n)
      const answer = (turn: Turn): void => {
        if ("later" in turn) return void turn.later.then(answer)
        if ("status" in turn) {
          res.writeHead(turn.status, { "content-type": "application/json", ...(turn.retryAfter === undefined ? {} : { "retry-after": turn.retryAfter }) })
          res.end(turn.body ?? JSON.stringify({ error: { message: `scripted ${turn.status}` } }))
          return
        }
        if ("stall" in turn) {
          // Headers and one event, then silence: the client's timeout must end it.
          if (body.stream === true) {
            res.writeHead(200, { "content-type": "text/event-stream" })
            res.write(kind === "openai" ? `data: ${JSON.stringify({ choices: [{ index: 0, delta: { role: "assistant" } }] })}\n\n` : "event: ping\ndata: {\"type\":\"ping\"}\n\n")
          }
          return
        }
        if ("flood" in turn) {
          const stream = body.stream === true
          res.writeHead(200, {
            "content-type": stream ? "text/event-stream" : "application/json",
            ...(turn.announce === true ? { "content-length": String(turn.flood) } : {})
          })
          const piece = stream
            ? `data: ${JSON.stringify(kind === "openai" ? { choices: [{ index: 0, delta: { content: "x".repeat(4000) } }] } : { type: "ping", pad: "x".repeat(4000) })}\n\n`
            : "x".repeat(4096)
          let written = 0
          if (!stream) res.write(kind === "openai" ? "{\"choices\":[{\"message\":{\"content\":\"" : "{\"content\":[{\"type\":\"text\",\"text\":\"")
          res.on("close", () => floodClosed({ written }))
          const pump = () => {
            while (written < turn.flood && !res.destroyed) {
              written += piece.length
              if (!res.write(piece)) return void res.once("drain", pump)
            }
          }
          pump()
          return
        }
        if ("raw" in turn) {
          res.writeHead(200, { "content-type": "text/html" }).end(turn.raw)
          return
        }
        const reply = "calls" in turn ? turn : { text: turn.text }
        if (kind === "openai") openAiReply(res, reply, body.stream === true, n)
        else anthropicReply(res, reply, body.stream === true, n)
      }
      answer(script(conversation))
    })
  })
  server.on("connection", (s) => {
    sockets.add(s)
    s.on("close", () => sockets.delete(s))
  })
  return new Promise((resolve) => {
    // Loopback only: the default would bind every interface.
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port
      resolve({
        url: kind === "openai" ? `http://127.0.0.1:${port}/v1` : `http://127.0.0.1:${port}`,
        requests,
        floodClosed: floodClosedPromise,
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy()
            server.close(() => done())
          })
      })
    })
  })
}

/** A patch adding `file` with one line. */
export const addFile = (file: string, line: string) => ({ patch: `*** Begin Patch\n*** Add File: ${file}\n+${line}\n*** End Patch` })

/** A patch replacing one line of `file`. */
export const updateLine = (file: string, from: string, to: string) => ({
  patch: `*** Begin Patch\n*** Update File: ${file}\n@@\n-${from}\n+${to}\n*** End Patch`
})
