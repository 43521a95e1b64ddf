/**
 * The SQLite implementation of `TokenStore`, in the workspace's history database through the
 * same `Sqlite` service, so `forkjoin token create` and a running `forkjoin serve` share the
 * tokens without a second file.
 *
 * It owns the `gateway_tokens` table and its migrations (`migrations/gateway/`). It does not own
 * the connection policy (`Sqlite`), the versioning (`@forkjoin/sqlite/Migrator`: the `gateway`
 * row of `schema_components`) nor any history or merge table.
 *
 * Layout (gateway migration 1): `gateway_tokens(token_id PK, token_hash UNIQUE, thread_id,
 * created_at, expires_at, revoked_at)`; times are epoch milliseconds; only the hash of a
 * token is kept.
 *
 * @since 0.1.0
 */
import type { StoreError } from "@forkjoin/history/HistoryStore"
import { sqliteOptions } from "@forkjoin/history/HistoryStoreSqlite"
import { Sqlite, type SqliteOptions } from "@forkjoin/history/Sqlite"
import { Migrator } from "@forkjoin/sqlite"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { migration as m001 } from "./migrations/gateway/001_tokens.ts"
import { TokenRow, TokenStore, TokenStoreError } from "./TokenStore.ts"

// One file per migration under `migrations/gateway/`, numbered as its version; the version is
// the `gateway` row of `schema_components`, brought up when the store is built.
const component = Migrator.component({ name: "gateway", label: "gateway schema", migrations: [m001] })

const SQL = {
  exists: "SELECT 1 AS present FROM gateway_tokens WHERE token_id = ? OR token_hash = ?",
  insert: "INSERT INTO gateway_tokens (token_id, token_hash, thread_id, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)",
  byHash: "SELECT token_id, token_hash, thread_id, created_at, expires_at, revoked_at FROM gateway_tokens WHERE token_hash = ?",
  byId: "SELECT token_id, token_hash, thread_id, created_at, expires_at, revoked_at FROM gateway_tokens WHERE token_id = ?",
  revoke: "UPDATE gateway_tokens SET revoked_at = ? WHERE token_id = ? AND revoked_at IS NULL"
} as const

interface Row {
  readonly token_id: string
  readonly token_hash: string
  readonly thread_id: string
  readonly created_at: number
  readonly expires_at: number
  readonly revoked_at: number | null
}

const decodeRow = Schema.decodeUnknownEffect(TokenRow)

const rowOf = (operation: string, row: Row): Effect.Effect<TokenRow, TokenStoreError> =>
  decodeRow({
    tokenId: row.token_id,
    tokenHash: row.token_hash,
    threadId: row.thread_id,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    ...(row.revoked_at === null ? {} : { revokedAt: row.revoked_at })
  }).pipe(
    Effect.mapError((cause) =>
      new TokenStoreError({ operation, reason: "Store", detail: `token ${row.token_id} does not decode`, cause })
    )
  )

const storeFailure = (operation: string) => (cause: StoreError): TokenStoreError =>
  new TokenStoreError({ operation, reason: "Store", detail: cause.message, cause })

/**
 * Builds the store over the provided `Sqlite` (opened with the history migrations), migrating
 * the token table first.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make: Effect.Effect<TokenStore["Service"], TokenStoreError, Sqlite> = Effect.gen(function*() {
  const sql = yield* Sqlite
  yield* sql.migrate("TokenStore.migrate", component).pipe(Effect.mapError(storeFailure("TokenStore.migrate")))
  return TokenStore.of({
    insert: (row) => {
      const operation = "TokenStore.insert"
      return sql.transaction(operation, (c) => {
        if (c.get(SQL.exists, row.tokenId, row.tokenHash) !== undefined) return false
        c.run(SQL.insert, row.tokenId, row.tokenHash, row.threadId, row.createdAt, row.expiresAt, row.revokedAt ?? null)
        return true
      }).pipe(
        Effect.mapError(storeFailure(operation)),
        Effect.flatMap((inserted) =>
          inserted
            ? Effect.void
            : Effect.fail(new TokenStoreError({ operation, reason: "Constraint", detail: `token ${row.tokenId} already exists` }))
        )
      )
    },
    findByHash: (hash) => {
      const operation = "TokenStore.findByHash"
      return sql.run(operation, (c) => c.get<Row>(SQL.byHash, hash)).pipe(
        Effect.mapError(storeFailure(operation)),
        Effect.flatMap((row) => row === undefined ? Effect.succeed(Option.none()) : Effect.map(rowOf(operation, row), Option.some))
      )
    },
    revoke: (tokenId, at) => {
      const operation = "TokenStore.revoke"
      return sql.transaction(operation, (c) => {
        c.run(SQL.revoke, at, tokenId)
        return c.get<Row>(SQL.byId, tokenId)
      }).pipe(
        Effect.mapError(storeFailure(operation)),
        Effect.flatMap((row) =>
          row === undefined
            ? Effect.fail(new TokenStoreError({ operation, reason: "NotFound", detail: `no token ${tokenId}` }))
            : rowOf(operation, row)
        )
      )
    }
  })
})

/**
 * The store over an already provided `Sqlite`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerNoDeps: Layer.Layer<TokenStore, TokenStoreError, Sqlite> = Layer.effect(TokenStore, make)

/**
 * The store in the history database `file` (history tables migrated too, as every opener does).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerSqlite = (
  file: string,
  options?: Omit<SqliteOptions, "migrations">
): Layer.Layer<TokenStore, TokenStoreError> =>
  layerNoDeps.pipe(
    Layer.provide(
      Sqlite.layer(file, sqliteOptions(options)).pipe(
        Layer.catchTag("StoreError", (e) => Layer.effect(Sqlite, Effect.fail(storeFailure("TokenStore.open")(e))))
      )
    )
  )
