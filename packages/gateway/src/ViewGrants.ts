/**
 * File-view grants (SPEC §11): a short-lived, single-use credential for one thread and one
 * workspace-relative path (optionally a line and column to mark). A grant is
 * `<payload>.<mac>`: the payload (base64url JSON: thread, path, line, column, expiry, nonce) and
 * an HMAC-SHA256 of it under a secret the server draws at start, so an edited grant fails the
 * MAC, an expired one its expiry, and a replayed one the server's record of used nonces.
 *
 * It owns the grant format, signing, checking and the bounded text rendering of a file. It does
 * not own path resolution against the workspace (the engine's `read`, which refuses links out of
 * the workspace) nor what a thread may see (the gateway checks before issuing).
 *
 * @since 0.1.0
 */
import { normalizePath } from "@forkjoin/patch/RelativePath"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"

/**
 * What a grant carries.
 *
 * @category models
 * @since 0.1.0
 */
export const GrantClaims = Schema.Struct({
  v: Schema.Literal(1),
  thread: Schema.String,
  path: Schema.String,
  line: Schema.optionalKey(Schema.Number),
  column: Schema.optionalKey(Schema.Number),
  exp: Schema.Number,
  nonce: Schema.String
})

/**
 * @category models
 * @since 0.1.0
 */
export type GrantClaims = typeof GrantClaims.Type

/**
 * Why a grant or its path was refused: `Malformed`, `Altered` (the MAC does not match),
 * `Expired`, `Replayed` (already used), or a path refusal (`PathRefused`, with the detail).
 *
 * @category errors
 * @since 0.1.0
 */
export class GrantRefused extends Schema.TaggedError<GrantRefused>()("GrantRefused", {
  reason: Schema.Literals(["Malformed", "Altered", "Expired", "Replayed", "PathRefused"]),
  detail: Schema.String
}) {
  override get message() {
    return this.detail
  }
}

/**
 * The default lifetime of a grant: 60 seconds.
 *
 * @category constructors
 * @since 0.1.0
 */
export const DEFAULT_GRANT_TTL_MS = 60_000

const decodeClaims = Schema.decodeUnknownResult(Schema.fromJsonString(GrantClaims))

/**
 * Checks a requested path: workspace-relative and already normal; an absolute path, a `..`
 * segment or control characters are refused (never mapped back into the workspace).
 *
 * @category constructors
 * @since 0.1.0
 */
export const checkPath = (raw: string): Result.Result<string, GrantRefused> => {
  const refuse = (detail: string) => Result.fail(new GrantRefused({ reason: "PathRefused", detail }))
  if (raw.replace(/\\/g, "/").split("/").includes("..")) return refuse(`path '${raw}' contains '..'; name the file by its workspace-relative path`)
  const normal = normalizePath(raw)
  if (Result.isFailure(normal)) {
    return refuse(
      normal.failure === "absolute_path"
        ? `path '${raw}' is absolute; grants name workspace-relative paths only`
        : `path '${raw}' is not a workspace-relative file path (${normal.failure})`
    )
  }
  return Result.succeed(normal.success)
}

/**
 * A grant issuer and checker with its own secret and record of used grants (one per server).
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeGrants = (secret: Uint8Array = randomBytes(32), defaultTtlMs = DEFAULT_GRANT_TTL_MS) => {
  const used = new Map<string, number>()
  const mac = (payload: string) => createHmac("sha256", secret).update(payload).digest("base64url")
  const sweep = (now: number) => {
    for (const [nonce, exp] of used) if (exp <= now) used.delete(nonce)
  }
  return {
    /** Signs a grant for `thread` and `path` valid until `now + ttlMs`. */
    issue: (claims: { readonly thread: string; readonly path: string; readonly line?: number | undefined; readonly column?: number | undefined }, now: number, ttlMs = defaultTtlMs) => {
      const body: GrantClaims = {
        v: 1,
        thread: claims.thread,
        path: claims.path,
        ...(claims.line === undefined ? {} : { line: claims.line }),
        ...(claims.column === undefined ? {} : { column: claims.column }),
        exp: now + ttlMs,
        nonce: randomBytes(12).toString("base64url")
      }
      const payload = Buffer.from(JSON.stringify(body)).toString("base64url")
      return { grant: `${payload}.${mac(payload)}`, claims: body }
    },
    /** Checks a grant and marks it used: fails when malformed, altered, expired or already used. */
    redeem: (grant: string, now: number): Result.Result<GrantClaims, GrantRefused> => {
      const refuse = (reason: GrantRefused["reason"], detail: string) => Result.fail(new GrantRefused({ reason, detail }))
      const m = /^([A-Za-z0-9_-]{1,4096})\.([A-Za-z0-9_-]{43})$/.exec(grant)
      if (m === null) return refuse("Malformed", "the view grant is not one this server issued")
      const given = Buffer.from(m[2]!, "base64url")
      const expected = Buffer.from(mac(m[1]!), "base64url")
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        return refuse("Altered", "the view grant was altered or issued by another server; ask for a new grant")
      }
      const claims = decodeClaims(Buffer.from(m[1]!, "base64url").toString("utf8"))
      if (Result.isFailure(claims)) return refuse("Malformed", "the view grant's content does not decode")
      if (now >= claims.success.exp) return refuse("Expired", "the view grant expired; ask for a new grant")
      sweep(now)
      if (used.has(claims.success.nonce)) return refuse("Replayed", "the view grant was already used; ask for a new grant")
      used.set(claims.success.nonce, claims.success.exp)
      return Result.succeed(claims.success)
    }
  }
}

/**
 * The grant issuer and checker of one server.
 *
 * @category models
 * @since 0.1.0
 */
export type Grants = ReturnType<typeof makeGrants>

/**
 * The cap on a file served through a grant: 1 MiB.
 *
 * @category constructors
 * @since 0.1.0
 */
export const MAX_VIEW_BYTES = 1024 * 1024

/**
 * Whether bytes look binary (a NUL, or not valid UTF-8).
 *
 * @category guards
 * @since 0.1.0
 */
export const isBinary = (bytes: Uint8Array): boolean => {
  if (bytes.includes(0)) return true
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes)
    return false
  } catch {
    return true
  }
}

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => (c === "&" ? "&amp;" : c === "<" ? "&lt;" : c === ">" ? "&gt;" : c === '"' ? "&quot;" : "&#39;"))

/**
 * A file as a small HTML page: numbered lines, the requested line marked (`id="L<n>"`,
 * `class="mark"`), nothing executable.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderFile = (claims: GrantClaims, text: string): string => {
  const lines = text.split("\n")
  if (lines.length > 1 && lines.at(-1) === "") lines.pop()
  const rows = lines.map((l, i) => {
    const n = i + 1
    const mark = n === claims.line ? ' class="mark"' : ""
    return `<tr id="L${n}"${mark}><td class="n">${n}</td><td><pre>${escapeHtml(l)}</pre></td></tr>`
  })
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(claims.path)}</title>` +
    `<style>body{font:13px ui-monospace,monospace;margin:0}table{border-collapse:collapse}td{padding:0 6px;vertical-align:top}` +
    `td.n{color:#888;text-align:right;user-select:none}pre{margin:0;white-space:pre-wrap}tr.mark{background:#fff3b0}</style></head>` +
    `<body><h1 style="font-size:14px;padding:6px">${escapeHtml(claims.path)}${claims.line === undefined ? "" : `:${claims.line}`}` +
    `${claims.column === undefined ? "" : `:${claims.column}`}</h1><table>${rows.join("")}</table></body></html>`
}
