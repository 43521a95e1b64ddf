/**
 * `forkjoin token create|revoke`: the gateway's bearer tokens in the workspace's history
 * database (only their hashes are stored). `create` prints the token alone on the last stdout
 * line (`--json`: `{ "tokenId", "token", "thread", "expiresAt" }`); `revoke` takes its id. The
 * flags are in `TokenCommand.ts`.
 *
 * @since 0.1.0
 */
import type { ThreadId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"

import { HistoryCommandError, UsageError } from "./internal/errors.ts"
import { afterStateCheck, historyDbOf, resolveWorkspace } from "./internal/workspace.ts"

const tokenLayer = (root: string, db: string | undefined) =>
  Effect.promise(() => import("@forkjoin/gateway/TokenStoreSqlite")).pipe(
    Effect.map((TokenStoreSqlite) => afterStateCheck(root, TokenStoreSqlite.layerSqlite(historyDbOf(root, db))))
  )

const storeFailure = (e: { readonly reason: string; readonly message: string }) =>
  new HistoryCommandError({ code: e.reason === "NotFound" ? "unknown_token" : "history_unavailable", message: e.message, cause: e })

/**
 * Issues a token for `thread` valid for `ttlMs`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const create = Effect.fn("Token.create")(function*(request: {
  readonly workspace: string
  readonly db?: string | undefined
  readonly thread: ThreadId
  readonly ttl?: string | undefined
}) {
  const Tokens = yield* Effect.promise(() => import("@forkjoin/gateway/Tokens"))
  const ttlMs = request.ttl === undefined ? Tokens.DEFAULT_TTL_MS : Tokens.parseTtl(request.ttl)
  if (ttlMs === undefined) {
    return yield* new UsageError({ message: `--ttl '${request.ttl}' is not a lifetime; use a number and a unit, like 30m, 24h or 7d (at most a year).` })
  }
  const root = yield* resolveWorkspace(request.workspace)
  const layer = yield* tokenLayer(root, request.db)
  return yield* Tokens.issue(request.thread, ttlMs).pipe(
    Effect.provide(layer),
    Effect.catchTag("TokenStoreError", (e) => Effect.fail(storeFailure(e))),
    Effect.catchTag("TokenRequestError", (e) => Effect.fail(new UsageError({ message: `--thread: ${e.message}`, cause: e })))
  )
})

/**
 * Revokes the token `tokenId`; unknown is `unknown_token`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const revoke = Effect.fn("Token.revoke")(function*(request: {
  readonly workspace: string
  readonly db?: string | undefined
  readonly tokenId: string
}) {
  const Tokens = yield* Effect.promise(() => import("@forkjoin/gateway/Tokens"))
  const root = yield* resolveWorkspace(request.workspace)
  const layer = yield* tokenLayer(root, request.db)
  const row = yield* Tokens.revoke(request.tokenId).pipe(
    Effect.provide(layer),
    Effect.catchTag("TokenStoreError", (e) => Effect.fail(storeFailure(e)))
  )
  return { tokenId: row.tokenId, thread: row.threadId, revokedAt: new Date(row.revokedAt ?? Date.now()).toISOString() }
})

/**
 * The text of `create`: a line saying what the token is, then the token alone on the last line.
 *
 * @category combinators
 * @since 0.1.0
 */
export const renderCreated = (t: { readonly tokenId: string; readonly token: string; readonly thread: string; readonly expiresAt: string }): string =>
  `token ${t.tokenId} for thread '${t.thread}', expires ${t.expiresAt} (revoke: forkjoin token revoke ${t.tokenId} --workspace DIR)\n${t.token}\n`


