/**
 * The client side of a running gateway (`forkjoin serve`): one HTTP request per apply or view,
 * so an orchestrator making thousands of small applies pays no process start and no database
 * open per call. Used by the library facade (`openWorkspace(dir, { server })`) and by
 * `forkjoin apply --server URL`.
 *
 * Speaks node:http(s) with a keep-alive agent, not the global `fetch`: undici's client costs
 * about 0.4 ms more per request, more than the whole margin a small apply has (see
 * adrs/20261130-gateway.md, "Fast apply path"). It owns the requests and the mapping of the
 * gateway's answers back to records or errors; the wire contract is the gateway's
 * (`@forkjoin/gateway/GatewayApi`), which this package cannot import (the gateway depends on it).
 *
 * @since 0.1.0
 */
import { EngineError } from "@forkjoin/schema/EngineError"
import { type PatchHistoryRecord, PatchHistoryRecordFromJson } from "@forkjoin/schema/PatchHistoryRecord"
import * as Schema from "effect/Schema"
import * as http from "node:http"
import * as https from "node:https"

/**
 * A gateway and the bearer token to use with it (`forkjoin token create`).
 *
 * @category models
 * @since 0.1.0
 */
export interface Server {
  readonly url: string
  readonly token: string
}

/**
 * One apply through a gateway: the patch and where it goes (the thread defaults to the token's).
 *
 * @category models
 * @since 0.1.0
 */
export interface RemoteApply {
  readonly patch: string
  readonly thread?: string | undefined
  readonly turn: string
  readonly invocation?: string | undefined
  readonly profile?: "native" | "codex" | undefined
  readonly allowOverwrite?: boolean | undefined
}

/**
 * Why the gateway did not answer with what was asked: its answer (`status`, `code` — the
 * error's tag, e.g. `Unauthorized`, `NotFound` — and `message`), or status 0, `unreachable`.
 *
 * @category errors
 * @since 0.1.0
 */
export class RemoteError extends Schema.TaggedError<RemoteError>()("RemoteError", {
  status: Schema.Number,
  code: Schema.String,
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

const decodeRecord = Schema.decodeUnknownSync(PatchHistoryRecordFromJson)

// Idle sockets are unref'd by the agents, so a kept-alive connection never holds the process open.
const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) }

/** One request with the bearer token (and a JSON body when given): the status and body text. */
const send = (url: URL, token: string, body: string | undefined) =>
  new Promise<{ readonly status: number; readonly text: string }>((resolve, reject) => {
    const secure = url.protocol === "https:"
    const request = (secure ? https : http).request(url, {
      method: body === undefined ? "GET" : "POST",
      agent: secure ? agents.https : agents.http,
      headers: body === undefined
        ? { authorization: `Bearer ${token}` }
        : { authorization: `Bearer ${token}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) }
    }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }))
      response.on("error", reject)
    })
    request.on("error", reject)
    request.end(body)
  })

interface Answer {
  readonly _tag?: string
  readonly code?: string
  readonly stage?: number
  readonly paths?: Array<string>
  readonly message?: string
  readonly detail?: string
  readonly reason?: string
}

/**
 * `route` under `/v1/` on `server`: resolves to the body text of a 200; rejects with the engine's
 * `EngineError` when the engine refused an apply (same `code`, `stage`, `paths` as a local
 * apply) and with a `RemoteError` for anything else.
 */
const call = async (server: Server, route: string, body: string | undefined): Promise<string> => {
  let response: { readonly status: number; readonly text: string }
  try {
    response = await send(new URL(`${server.url.replace(/\/+$/, "")}/v1/${route}`), server.token, body)
  } catch (cause) {
    throw new RemoteError({ status: 0, code: "unreachable", message: `cannot reach the gateway at ${server.url}; is 'forkjoin serve' running?`, cause })
  }
  if (response.status === 200) return response.text
  let json: Answer = {}
  try {
    const parsed: unknown = JSON.parse(response.text)
    if (typeof parsed === "object" && parsed !== null) json = parsed
  } catch {
    // not JSON: reported by its status below
  }
  if (response.status === 422 && json._tag === "Rejected" && typeof json.code === "string" && typeof json.stage === "number") {
    const refusal = Schema.decodeUnknownOption(EngineError)({
      _tag: "EngineError",
      code: json.code,
      stage: json.stage,
      paths: json.paths ?? [],
      message: json.message ?? ""
    })
    if (refusal._tag === "Some") throw refusal.value
  }
  throw new RemoteError({
    status: response.status,
    code: json._tag ?? `http_${response.status}`,
    message: json.message ?? json.detail ?? `the gateway answered ${response.status}${json.reason === undefined ? "" : ` (${json.reason})`}`
  })
}

/**
 * Applies a patch through the gateway. Resolves to the record; rejects with `EngineError` when
 * the engine refused it and with `RemoteError` otherwise.
 *
 * @category constructors
 * @since 0.1.0
 */
export const applyRemote = async (server: Server, request: RemoteApply): Promise<PatchHistoryRecord> =>
  decodeRecord(
    await call(
      server,
      "apply",
      JSON.stringify({
        patch: request.patch,
        turn: request.turn,
        ...(request.thread === undefined ? {} : { thread: request.thread }),
        ...(request.invocation === undefined ? {} : { invocation: request.invocation }),
        ...(request.profile === undefined ? {} : { profile: request.profile }),
        ...(request.allowOverwrite === undefined ? {} : { allowOverwrite: request.allowOverwrite })
      })
    )
  )

/**
 * A history view of the gateway (`timeline`, `turns/{turn}`, `diff`, `files`) with its query;
 * resolves to the parsed page (the caller decodes it), rejects with `RemoteError`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const viewRemote = async (server: Server, route: string, query: Record<string, string | number | boolean | undefined>): Promise<unknown> => {
  const params = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v))
  return JSON.parse(await call(server, `${route}?${params}`, undefined))
}
