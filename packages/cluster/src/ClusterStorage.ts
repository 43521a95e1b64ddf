/**
 * The cluster's storage: effect's own SQL `MessageStorage` and `RunnerStorage` over PostgreSQL
 * (`@effect/sql-pg`) or a SQLite file (forkjoin's `effect/sql` client over `@forkjoin/sqlite`),
 * with effect's own table migrations. It is decided before anything starts: the layer connects
 * and runs one statement first, so a server that refuses connections or a file that cannot be
 * opened fails here with a `ClusterStorageError` naming the storage (password redacted), and
 * no runner registers, no message is sent.
 *
 * A SQLite file records the cluster tables as the `cluster` component of the one migrator
 * (`schema_components`): a file whose cluster schema is newer than this forkjoin is refused
 * untouched; an older or unrecorded one is adopted, effect's migrator adding what is missing.
 *
 * It owns the choice of client, the reachability check and the schema record. It does not own
 * the tables (effect's storage creates them) nor the sharding configuration (`Sharding`).
 *
 * @since 0.1.0
 */
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Migrator, type SqliteError } from "@forkjoin/sqlite"
import * as SqliteClient from "@forkjoin/sqlite/SqlClient"
import type * as MessageStorage from "effect/cluster/MessageStorage"
import * as RunnerStorage from "effect/cluster/RunnerStorage"
import type { ShardingConfig } from "effect/cluster/ShardingConfig"
import * as SqlMessageStorage from "effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "effect/cluster/SqlRunnerStorage"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { SqlClient } from "effect/sql/SqlClient"
import * as path from "node:path"
import type { ClusterUrl } from "./ClusterUrl.ts"

/**
 * Why the storage cannot be used: `storage_unreachable` (no connection: refused, unknown host,
 * bad credentials, a SQLite file that cannot be opened or written), `storage_incompatible` (its
 * cluster schema is newer than this forkjoin).
 *
 * @category models
 * @since 0.1.0
 */
export const ClusterStorageErrorCode = Schema.Literals(["storage_unreachable", "storage_incompatible"])

/**
 * The cluster storage cannot be used; `storage` is the URL shown to users (password redacted),
 * `message` says what failed and what to do.
 *
 * @category errors
 * @since 0.1.0
 */
export class ClusterStorageError extends Schema.TaggedError<ClusterStorageError>()("ClusterStorageError", {
  code: ClusterStorageErrorCode,
  storage: Schema.String,
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/**
 * The cluster tables of a SQLite file as a component of the one migrator. Version 1: effect
 * 4.1.0's message and runner tables (`cluster_*`, with effect's own migration histories); a
 * forkjoin whose effect adds cluster migrations adds a version here, so older releases refuse it.
 *
 * @category models
 * @since 0.1.0
 */
export const sqliteComponent: Migrator.Component = Migrator.component({
  name: "cluster",
  label: "cluster storage schema",
  // The tables themselves are created by effect's migrator right after, on the same file.
  migrations: [{ version: 1, name: "effect 4.1.0 cluster message and runner tables", up: () => {} }]
})

// A server that does not answer must not hold the runner at start-up for long.
const CONNECT_TIMEOUT = Duration.seconds(5)

const unreachable = (url: ClusterUrl, detail: string, cause: unknown): ClusterStorageError =>
  new ClusterStorageError({
    code: "storage_unreachable",
    storage: url.display,
    message: `cannot use the cluster storage ${url.display}: ${detail}; ` +
      (url._tag === "Postgres"
        ? "check that the PostgreSQL server is running, that this machine can reach it, and the user, password and database in the URL"
        : "check that the folder exists and is writable by this user, and that the file is a SQLite database"),
    cause
  })

const fromSqlite = (url: ClusterUrl, error: SqliteError): ClusterStorageError =>
  error.reason === "Schema"
    ? new ClusterStorageError({
      code: "storage_incompatible",
      storage: url.display,
      message: `the cluster storage ${url.display} was written by a newer forkjoin (${error.message}); upgrade forkjoin on this machine or use another file`,
      cause: error
    })
    : unreachable(url, error.message, error)

/**
 * The `SqlClient` of `url`, checked by one statement before it is handed out (a SQLite file with
 * `durability` as `Sqlite.OpenOptions` says). A relative SQLite
 * path is resolved against `cwd`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerSqlClient = (url: ClusterUrl, cwd: string, durability: "full" | "normal" = "full"): Layer.Layer<SqlClient, ClusterStorageError> =>
  Layer.effect(
    SqlClient,
    Effect.gen(function*() {
      const sql: SqlClient = url._tag === "Postgres"
        ? yield* Effect.mapError(
          PgClient.make({ url: Redacted.make(url.url), connectTimeout: CONNECT_TIMEOUT }),
          (error) => unreachable(url, error.message, error)
        )
        : yield* Effect.mapError(
          SqliteClient.make(path.resolve(cwd, url.path), { components: [sqliteComponent], durability }),
          (error) => fromSqlite(url, error)
        )
      yield* Effect.mapError(sql`SELECT 1`, (error) => unreachable(url, error.message, error))
      return sql
    })
  ).pipe(Layer.provide(Reactivity.layer))

/**
 * Effect's SQL `MessageStorage` and `RunnerStorage` over `url`, their migrations run first.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  url: ClusterUrl,
  cwd: string
): Layer.Layer<MessageStorage.MessageStorage | RunnerStorage.RunnerStorage, ClusterStorageError, ShardingConfig> =>
  Layer.mergeAll(
    SqlMessageStorage.layer.pipe(Layer.provide(NodeCrypto.layerDigest)),
    Layer.effect(
      RunnerStorage.RunnerStorage,
      Effect.mapError(SqlRunnerStorage.make({}), (error) => unreachable(url, error.message, error))
    )
  ).pipe(Layer.provide(layerSqlClient(url, cwd)))

/**
 * The runners registered in the cluster's storage as sorted `host:port`, those that answer
 * health checks and those that do not (none when the storage cannot answer).
 *
 * @category constructors
 * @since 0.1.0
 */
export const registeredRunners: Effect.Effect<
  { readonly healthy: ReadonlyArray<string>; readonly unhealthy: ReadonlyArray<string> },
  never,
  RunnerStorage.RunnerStorage
> = Effect.gen(function*() {
  const storage = yield* RunnerStorage.RunnerStorage
  const runners = yield* storage.getRunners.pipe(Effect.orElseSucceed(() => []))
  const named = (healthy: boolean) => runners.filter(([, h]) => h === healthy).map(([r]) => `${r.address.host}:${r.address.port}`).sort()
  return { healthy: named(true), unhealthy: named(false) }
})

/**
 * The registered runners that answer health checks (`registeredRunners`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const healthyRunners: Effect.Effect<ReadonlyArray<string>, never, RunnerStorage.RunnerStorage> = Effect.map(
  registeredRunners,
  (r) => r.healthy
)
