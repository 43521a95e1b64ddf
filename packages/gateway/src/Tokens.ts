/**
 * Issuing, checking and revoking the gateway's bearer tokens (SPEC §11). A token is
 * `fjt_<tokenId>_<secret>` (the id is public, for `forkjoin token revoke`; the secret is 32
 * random bytes); the store keeps only the sha256 of the whole string. A token is bound to one
 * thread and is refused once expired or revoked.
 *
 * It owns the token format, TTL parsing and the authentication decision. It does not own the
 * storage (`TokenStore`) nor what a thread may see (the gateway asks the views).
 *
 * @since 0.1.0
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import { ID_RULE, idRuleProblem, ThreadId } from "@forkjoin/schema/Ids"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { randomBytes } from "node:crypto"
import { TokenStore, type TokenStoreError } from "./TokenStore.ts"

/**
 * What `issue` hands out once: the token itself is never stored nor shown again.
 *
 * @category models
 * @since 0.1.0
 */
export const IssuedToken = Schema.Struct({
  tokenId: Schema.String,
  token: Schema.String,
  thread: ThreadId,
  expiresAt: Schema.String
})

/**
 * @category models
 * @since 0.1.0
 */
export type IssuedToken = typeof IssuedToken.Type

/**
 * Why a bearer token was refused: not of our format (`Malformed`), not known (`Unknown`),
 * `Expired` or `Revoked`. The gateway answers 401 for each, naming which.
 *
 * @category errors
 * @since 0.1.0
 */
export class TokenRefused extends Schema.TaggedError<TokenRefused>()("TokenRefused", {
  reason: Schema.Literals(["Missing", "Malformed", "Unknown", "Expired", "Revoked"])
}) {
  override get message() {
    return `token ${this.reason.toLowerCase()}`
  }
}

/**
 * The default lifetime of a token: 24 hours.
 *
 * @category constructors
 * @since 0.1.0
 */
export const DEFAULT_TTL_MS = 24 * 3_600_000

const UNITS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/**
 * Parses a lifetime such as `30m`, `24h`, `7d` (or `45s`) to milliseconds; anything else, zero
 * or more than a year is `undefined`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const parseTtl = (text: string): number | undefined => {
  const m = /^([1-9][0-9]{0,6})([smhd])$/.exec(text.trim())
  if (m === null) return undefined
  const ms = Number(m[1]) * UNITS[m[2]!]!
  return ms > 366 * 86_400_000 ? undefined : ms
}

const TOKEN = /^fjt_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/

/**
 * Why a token was not issued: its thread id breaks the id rule (`invalid_thread_id`). Nothing
 * was stored.
 *
 * @category errors
 * @since 0.1.0
 */
export class TokenRequestError extends Schema.TaggedError<TokenRequestError>()("TokenRequestError", {
  code: Schema.Literal("invalid_thread_id"),
  thread: Schema.String,
  message: Schema.String
}) {}


/**
 * Issues a token for `thread` valid for `ttlMs`, storing its hash; a thread id that breaks the
 * id rule (`@forkjoin/schema/Ids`' `idRuleProblem`) is `TokenRequestError` and stores nothing.
 *
 * @category constructors
 * @since 0.1.0
 */
export const issue = Effect.fn("Tokens.issue")(function*(thread: ThreadId, ttlMs: number = DEFAULT_TTL_MS) {
  // Checked again here, whatever the caller decoded: a token's thread names scopes downstream.
  const problem = idRuleProblem(thread)
  if (problem !== undefined) {
    return yield* new TokenRequestError({
      code: "invalid_thread_id",
      thread,
      message: `thread id ${JSON.stringify(thread)} is refused (${problem}); ${ID_RULE}`
    })
  }
  const store = yield* TokenStore
  const now = yield* Clock.currentTimeMillis
  const tokenId = randomBytes(8).toString("hex")
  const token = `fjt_${tokenId}_${randomBytes(32).toString("base64url")}`
  const expiresAt = now + ttlMs
  yield* store.insert({ tokenId, tokenHash: sha256(token), threadId: thread, createdAt: now, expiresAt })
  return { tokenId, token, thread, expiresAt: new Date(expiresAt).toISOString() } satisfies IssuedToken
})

/**
 * Checks a bearer token: resolves to the thread it is bound to, or fails with why it is refused.
 *
 * @category constructors
 * @since 0.1.0
 */
export const authenticate = (token: string): Effect.Effect<ThreadId, TokenRefused | TokenStoreError, TokenStore> =>
  Effect.gen(function*() {
    if (token.length === 0) return yield* new TokenRefused({ reason: "Missing" })
    if (!TOKEN.test(token)) return yield* new TokenRefused({ reason: "Malformed" })
    const store = yield* TokenStore
    const found = yield* store.findByHash(sha256(token))
    if (Option.isNone(found)) return yield* new TokenRefused({ reason: "Unknown" })
    const row = found.value
    if (row.revokedAt !== undefined) return yield* new TokenRefused({ reason: "Revoked" })
    if ((yield* Clock.currentTimeMillis) >= row.expiresAt) return yield* new TokenRefused({ reason: "Expired" })
    return row.threadId
  })

/**
 * Revokes a token by id; revoking twice is not an error.
 *
 * @category constructors
 * @since 0.1.0
 */
export const revoke = Effect.fn("Tokens.revoke")(function*(tokenId: string) {
  const store = yield* TokenStore
  return yield* store.revoke(tokenId, yield* Clock.currentTimeMillis)
})
