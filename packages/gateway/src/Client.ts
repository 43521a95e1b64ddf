/**
 * A small client of a running gateway for applies (`forkjoin apply --server URL`): one request
 * per apply, so an orchestrator making thousands of small applies pays no process start per
 * apply. Speaks node:http(s) with a keep-alive agent, not the global `fetch`: undici's client
 * costs about 0.4 ms more per request, more than the engine's whole margin on a small apply
 * (adrs/20261130-gateway.md, "Fast apply path"). No HTTP client library, so it is safe in the
 * CLI bundle.
 *
 * It owns the request and the mapping of the gateway's answers back to records or errors. It
 * does not own the contract (`GatewayApi`).
 *
 * @since 0.1.0
 */
import { EngineError } from "@forkjoin/schema/EngineError"
import { type PatchHistoryRecord, PatchHistoryRecordFromJson } from "@forkjoin/schema/PatchHistoryRecord"
import * as Schema from "effect/Schema"
import * as http from "node:http"
import * as https from "node:https"

/**
 * One apply through a gateway.
 *
 * @category models
 * @since 0.1.0
 */
export interface RemoteApply {
  readonly server: string
  readonly token: string
  readonly patch: string
  readonly thread?: string | undefined
  readonly turn: string
  readonly invocation?: string | undefined
  readonly profile?: "native" | "codex" | undefined
  readonly allowOverwrite?: boolean | undefined
}

/**
 * Why the gateway did not apply: its answer (`status`, `code`, `message`), or `unreachable`.
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

/** One `POST` of a JSON body with the bearer token; resolves to the status and the body text. */
const post = (url: URL, token: string, body: string) =>
  new Promise<{ readonly status: number; readonly text: string }>((resolve, reject) => {
    const secure = url.protocol === "https:"
    const request = (secure ? https : http).request(url, {
      method: "POST",
      agent: secure ? agents.https : agents.http,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) }
    }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }))
      response.on("error", reject)
    })
    request.on("error", reject)
    request.end(body)
  })

/**
 * Applies a patch through the gateway at `server`. Resolves to the record; rejects with the
 * engine's `EngineError` when the engine refused it (same `code`, `stage`, `paths` as a local
 * apply) and with a `RemoteError` for anything else.
 *
 * @category constructors
 * @since 0.1.0
 */
export const applyRemote = async (request: RemoteApply): Promise<PatchHistoryRecord> => {
  const body = JSON.stringify({
    patch: request.patch,
    turn: request.turn,
    ...(request.thread === undefined ? {} : { thread: request.thread }),
    ...(request.invocation === undefined ? {} : { invocation: request.invocation }),
    ...(request.profile === undefined ? {} : { profile: request.profile }),
    ...(request.allowOverwrite === undefined ? {} : { allowOverwrite: request.allowOverwrite })
  })
  let response: { readonly status: number; readonly text: string }
  try {
    response = await post(new URL(`${request.server.replace(/\/+$/, "")}/v1/apply`), request.token, body)
  } catch (cause) {
    throw new RemoteError({ status: 0, code: "unreachable", message: `cannot reach the gateway at ${request.server}; is 'forkjoin serve' running?`, cause })
  }
  const text = response.text
  if (response.status === 200) return decodeRecord(text)
  let json: { _tag?: string; code?: string; stage?: number; paths?: Array<string>; message?: string; detail?: string; reason?: string } = {}
  try {
    json = JSON.parse(text)
  } catch {
    // not JSON: reported by status below
  }
  if (response.status === 422 && json._tag === "Rejected" && typeof json.code === "string" && typeof json.stage === "number") {
    const decoded = Schema.decodeUnknownOption(EngineError)({
      _tag: "EngineError",
      code: json.code,
      stage: json.stage,
      paths: json.paths ?? [],
      message: json.message ?? ""
    })
    if (decoded._tag === "Some") throw decoded.value
  }
  throw new RemoteError({
    status: response.status,
    code: json._tag ?? `http_${response.status}`,
    message: json.message ?? json.detail ?? `the gateway answered ${response.status}${json.reason === undefined ? "" : ` (${json.reason})`}`
  })
}
