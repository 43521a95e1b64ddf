/**
 * The gateway's bearer tokens at rest (SPEC §11): one row per token with the thread it is bound
 * to, its expiry and revocation, and only the sha256 of the secret, never the secret itself.
 * This module owns the row schema, the service contract and an in-memory layer; the SQLite
 * layer, in the workspace's history database, is `TokenStoreSqlite.ts`.
 *
 * It does not own issuing or checking tokens (`Tokens.ts`) nor what a thread may see.
 *
 * @since 0.1.0
 */
import { Sha256Hash, ThreadId } from "@forkjoin/schema/Ids"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/**
 * A stored token: its public id, the hash of the whole token string, the thread it is bound
 * to, and when it was created, expires and was revoked (epoch milliseconds).
 *
 * @category models
 * @since 0.1.0
 */
export const TokenRow = Schema.Struct({
  tokenId: Schema.String,
  tokenHash: Sha256Hash,
  threadId: ThreadId,
  createdAt: Schema.Number,
  expiresAt: Schema.Number,
  revokedAt: Schema.optionalKey(Schema.Number)
})

/**
 * @category models
 * @since 0.1.0
 */
export type TokenRow = typeof TokenRow.Type

/**
 * Why the token store failed: a duplicate id or hash (`Constraint`), an unknown token
 * (`NotFound`), or the database (`Store`).
 *
 * @category errors
 * @since 0.1.0
 */
export class TokenStoreError extends Schema.TaggedError<TokenStoreError>()("TokenStoreError", {
  operation: Schema.String,
  reason: Schema.Literals(["Constraint", "NotFound", "Store"]),
  detail: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return `${this.operation}: ${this.detail}`
  }
}

/**
 * The token store.
 *
 * @category services
 * @since 0.1.0
 */
export class TokenStore extends Context.Service<TokenStore, {
  /** Stores a new token; an existing id or hash is `Constraint`. */
  readonly insert: (row: TokenRow) => Effect.Effect<void, TokenStoreError>
  /** The token whose whole string hashes to `hash`, if any. */
  readonly findByHash: (hash: Sha256Hash) => Effect.Effect<Option.Option<TokenRow>, TokenStoreError>
  /** Marks the token revoked at `at` (already revoked: unchanged); unknown is `NotFound`. */
  readonly revoke: (tokenId: string, at: number) => Effect.Effect<TokenRow, TokenStoreError>
}>()("forkjoin/gateway/TokenStore") {
  /** A fresh, private in-memory store per build (tests). */
  static readonly layerMemory: Layer.Layer<TokenStore> = Layer.sync(TokenStore, () => makeMemory())
}

/**
 * An in-memory store: a private map per call.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeMemory = (): TokenStore["Service"] => {
  const rows = new Map<string, TokenRow>()
  return TokenStore.of({
    insert: (row) =>
      Effect.suspend(() => {
        if (rows.has(row.tokenId) || [...rows.values()].some((r) => r.tokenHash === row.tokenHash)) {
          return Effect.fail(new TokenStoreError({ operation: "TokenStore.insert", reason: "Constraint", detail: `token ${row.tokenId} already exists` }))
        }
        rows.set(row.tokenId, row)
        return Effect.void
      }),
    findByHash: (hash) => Effect.sync(() => Option.fromUndefinedOr([...rows.values()].find((r) => r.tokenHash === hash))),
    revoke: (tokenId, at) =>
      Effect.suspend(() => {
        const row = rows.get(tokenId)
        if (row === undefined) {
          return Effect.fail(new TokenStoreError({ operation: "TokenStore.revoke", reason: "NotFound", detail: `no token ${tokenId}` }))
        }
        const revoked: TokenRow = row.revokedAt === undefined ? { ...row, revokedAt: at } : row
        rows.set(tokenId, revoked)
        return Effect.succeed(revoked)
      })
  })
}
