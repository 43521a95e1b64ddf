/**
 * The gateway's request boundary, checked before a route does any work: the `Host` a request
 * names (a page of another site that points its own DNS name at this address must not get
 * answers: DNS rebinding), the body a route reads before any token is checked (JSON only, with a
 * declared length of at most 8 KiB, refused before a byte of it is read), and the server's
 * absolute paths kept out of error bodies (a path under the workspace reads `<workspace>/…`).
 *
 * It owns these rules and the refusals' bodies. The gateway (`Gateway.ts`) applies the Host
 * rule to every request, the login exchange (`routes.ts`) the body rule, and both the router and
 * the fast apply path the path rule.
 */
import * as Schema from "effect/Schema"
import type * as Headers from "effect/http/Headers"
import * as HttpBody from "effect/http/HttpBody"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { isIPv6 } from "node:net"
import * as path from "node:path"

/**
 * The body of a boundary refusal: a stable `code` and a message saying what to do instead.
 */
export const BoundaryRefusal = Schema.Struct({
  _tag: Schema.Literals(["HostNotAllowed", "UnsupportedMediaType", "LengthRequired", "PayloadTooLarge"]),
  code: Schema.Literals(["host_not_allowed", "unsupported_media_type", "length_required", "body_too_large"]),
  message: Schema.String
})

/** @see BoundaryRefusal */
export type BoundaryRefusal = typeof BoundaryRefusal.Type

const STATUS: Readonly<Record<BoundaryRefusal["code"], number>> = {
  host_not_allowed: 403,
  unsupported_media_type: 415,
  length_required: 411,
  body_too_large: 413
}

/**
 * The response of a refusal. It closes the connection: whatever body follows is never read (the
 * server stops reading at once instead of draining it), and the client is not one we serve.
 */
export const refusalResponse = (refusal: BoundaryRefusal): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.jsonUnsafe(refusal, { status: STATUS[refusal.code], headers: { connection: "close" } })

// -------------------------------------------------------------------------------------
// Host
// -------------------------------------------------------------------------------------

const LOOPBACK_NAMES = ["127.0.0.1", "localhost", "[::1]"] as const
const WILDCARD = new Set(["0.0.0.0", "::", ""])
const DNS_NAME = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/

/**
 * A host as a `Host` header names it, lower case, an IPv6 address in brackets; `undefined`
 * when `text` is not a DNS name, an IPv4 address or an IPv6 address (a port, a scheme or a
 * path included).
 */
export const hostNameOf = (text: string): string | undefined => {
  const lower = text.toLowerCase()
  const bare = lower.startsWith("[") && lower.endsWith("]") ? lower.slice(1, -1) : lower
  if (isIPv6(bare)) return `[${bare}]`
  return lower.length <= 253 && DNS_NAME.test(lower) ? lower : undefined
}

/**
 * The name a `Host` header gives (port dropped, lower case), or `undefined` when it is missing
 * or not of the form `name`, `name:port`, `[v6]` or `[v6]:port`.
 */
export const requestHostName = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  const end = header.startsWith("[") ? header.indexOf("]") + 1 : 0
  const colon = header.indexOf(":", end)
  if (colon !== -1 && !/^[0-9]{1,5}$/.test(header.slice(colon + 1))) return undefined
  return hostNameOf(colon === -1 ? header : header.slice(0, colon))
}

/**
 * The names a gateway bound to `bindHost` answers for: `127.0.0.1`, `localhost` and `[::1]`
 * when it is bound to a loopback address (`loopback`) or to every address (`0.0.0.0`, `::`),
 * the bound address itself, and `extra` (`--host-name`, already checked by `hostNameOf`). The
 * port is not part of the check: a forwarded port (`ssh -L`) still names the same host.
 */
export const allowedHostNames = (bindHost: string, loopback: boolean, extra: ReadonlyArray<string>): ReadonlySet<string> => {
  const names = new Set<string>(extra)
  const bound = hostNameOf(bindHost)
  if (bound !== undefined) names.add(bound)
  if (loopback || WILDCARD.has(bindHost)) for (const name of LOOPBACK_NAMES) names.add(name)
  return names
}

/** Whether the `Host` header `header` names one of `allowed`. */
export const isAllowedHost = (header: string | undefined, allowed: ReadonlySet<string>): boolean => {
  const name = requestHostName(header)
  return name !== undefined && allowed.has(name)
}

/** The refusal of a request whose `Host` header is not one of `allowed`, or `undefined`. */
export const hostRefusal = (header: string | undefined, allowed: ReadonlySet<string>): BoundaryRefusal | undefined => {
  if (isAllowedHost(header, allowed)) return undefined
  const list = [...allowed].join(", ")
  const got = header === undefined ? "the request names no Host" : `Host '${header}' is not one of its names`
  return {
    _tag: "HostNotAllowed",
    code: "host_not_allowed",
    message: `this forkjoin gateway answers only for ${list} (with any port): ${got}. Open it by one of those names; ` +
      "if the name is your own proxy's or DNS name for this server, restart 'forkjoin serve' with --host-name NAME"
  }
}

// -------------------------------------------------------------------------------------
// bodies read before a token is checked
// -------------------------------------------------------------------------------------

/**
 * The most a route may read before any token is checked: 8 KiB (the login exchange sends a
 * one-line JSON object).
 */
export const UNAUTHENTICATED_BODY_LIMIT = 8 * 1024

/** Whether `contentType` is JSON (`application/json`, any parameters, any case). */
export const isJsonContentType = (contentType: string | undefined): boolean =>
  contentType !== undefined && contentType.split(";", 1)[0]!.trim().toLowerCase() === "application/json"

/**
 * The refusal of a body a route would read before any token is checked, or `undefined`: not
 * JSON (415: a cross-site page can send `text/plain`, a form or a type-less blob without asking
 * first), without a declared length (411: a chunked body), or declared over
 * `UNAUTHENTICATED_BODY_LIMIT` (413). Decided from the headers alone, before reading; a body
 * within its declared length cannot outgrow it.
 */
export const unauthenticatedBodyRefusal = (headers: Headers.Headers): BoundaryRefusal | undefined => {
  if (!isJsonContentType(headers["content-type"])) {
    return {
      _tag: "UnsupportedMediaType",
      code: "unsupported_media_type",
      message: "this route takes a JSON body only: send it with 'Content-Type: application/json'"
    }
  }
  if (headers["transfer-encoding"] !== undefined) {
    return {
      _tag: "LengthRequired",
      code: "length_required",
      message: "send the body with a Content-Length (not chunked): this route reads no body of unknown length before a token is checked"
    }
  }
  const length = Number(headers["content-length"] ?? "0")
  if (!(length <= UNAUTHENTICATED_BODY_LIMIT)) {
    return {
      _tag: "PayloadTooLarge",
      code: "body_too_large",
      message: `this route reads at most ${UNAUTHENTICATED_BODY_LIMIT} bytes before a token is checked; nothing of the body was read`
    }
  }
  return undefined
}

// -------------------------------------------------------------------------------------
// absolute paths in error bodies
// -------------------------------------------------------------------------------------

/** Rewrites a text so that it names no absolute path of the server's. */
export type Redact = (text: string) => string

// Where a path ends inside a message: end, quote, space or punctuation.
const ENDS_NAME = new Set(["", "'", "\"", "`", " ", ",", ";", ":", ")", "]", "}", "\n", "\\"])

// Replaces `absolute` where it is a whole path or a path's leading folders, not a name's prefix.
const replacePath = (text: string, absolute: string, placeholder: string): string => {
  let out = ""
  let from = 0
  for (let at = text.indexOf(absolute); at !== -1; at = text.indexOf(absolute, from)) {
    const next = text.charAt(at + absolute.length)
    const whole = next === "/" || ENDS_NAME.has(next) || (next === "." && ENDS_NAME.has(text.charAt(at + absolute.length + 1)))
    out += text.slice(from, at) + (whole ? placeholder : absolute)
    from = at + absolute.length
  }
  return out + text.slice(from)
}

/**
 * The redaction of the workspace `roots` (as given and real) and the history database `dbs`:
 * a root becomes `<workspace>` (so a path under it reads `<workspace>/src/a.ts`), a database
 * outside the workspace `<history database>` and its folder `<history database folder>`.
 * Longest first, so a database inside the workspace reads `<workspace>/.forkjoin/history.db`.
 */
export const makeRedact = (roots: ReadonlyArray<string>, dbs: ReadonlyArray<string>): Redact => {
  const pairs = new Map<string, string>()
  const inside = (p: string) => roots.some((root) => p.startsWith(`${root}${path.sep}`))
  for (const db of dbs) {
    if (inside(db)) continue
    pairs.set(db, "<history database>")
    pairs.set(path.dirname(db), "<history database folder>")
  }
  for (const root of roots) pairs.set(root, "<workspace>")
  const ordered = [...pairs].filter(([p]) => p.length > 1).sort(([a], [b]) => b.length - a.length)
  return (text) => {
    let out = text
    for (const [absolute, relative] of ordered) if (out.includes(absolute)) out = replacePath(out, absolute, relative)
    return out
  }
}

const decoder = new TextDecoder()
const encoder = new TextEncoder()

/**
 * An error response (status 400 or more) with a JSON body whose strings are redacted; any other
 * response as it is. Only error bodies are rewritten: they are small, and successful answers
 * carry workspace-relative paths by construction.
 */
export const redactResponse = (redact: Redact) => (response: HttpServerResponse.HttpServerResponse): HttpServerResponse.HttpServerResponse => {
  const body = response.body
  if (response.status < 400 || body._tag !== "Uint8Array") return response
  const text = decoder.decode(body.body)
  const redacted = redactJsonText(redact, text)
  return redacted === text ? response : HttpServerResponse.setBody(response, HttpBody.uint8Array(encoder.encode(redacted), body.contentType))
}

/** A JSON text with each string value redacted (the text itself when it is not JSON). */
export const redactJsonText = (redact: Redact, text: string): string => {
  if (redact(text) === text) return text
  try {
    return JSON.stringify(JSON.parse(text, (_key, value: unknown) => (typeof value === "string" ? redact(value) : value)))
  } catch {
    return redact(text)
  }
}
