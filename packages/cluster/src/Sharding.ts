/**
 * How every member of a forkjoin cluster is configured, runners and clients (the parent) alike,
 * from one place: effect's sharding must see the same shard groups and shards per group on every
 * member, or a message for a shard nobody serves (a pinned workflow) waits forever with no error.
 * So the full `ShardingConfig` is built here from effect's defaults, never from the environment.
 *
 * It owns the sharding settings and the socket transport's wiring. It does not own storage
 * (`ClusterStorage`) nor what runs on a runner (`Runner`).
 *
 * @since 0.1.0
 */
import * as RunnerHealth from "effect/cluster/RunnerHealth"
import * as Runners from "effect/cluster/Runners"
import * as RunnerStorage from "effect/cluster/RunnerStorage"
import type { RunnerAddress } from "effect/cluster/RunnerAddress"
import type { Sharding } from "effect/cluster/Sharding"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as SocketRunner from "effect/cluster/SocketRunner"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as References from "effect/References"
import * as RpcSerialization from "effect/rpc/RpcSerialization"
import type * as SocketServer from "effect/socket/SocketServer"
import type { ClusterSecret } from "./ClusterAuth.ts"
import * as ClusterStorage from "./ClusterStorage.ts"
import type { ClusterUrl } from "./ClusterUrl.ts"
import * as RunnerTransport from "./RunnerTransport.ts"

/**
 * The shard groups of every forkjoin cluster member. Changing it is a breaking change of the
 * cluster: every runner and parent must run the same release.
 *
 * @category constants
 * @since 0.1.0
 */
export const availableShardGroups: ReadonlyArray<string> = ["default"]

/**
 * Shards per group, identical on every member for the same reason.
 *
 * @category constants
 * @since 0.1.0
 */
export const shardsPerGroup = 300

/**
 * Where a runner listens and what it tells the others (`address`), and how many shards it takes
 * relative to the other runners (`capacity`, a weight).
 *
 * @category models
 * @since 0.1.0
 */
export interface RunnerSide {
  readonly address: RunnerAddress
  readonly capacity: number
}

/**
 * The sharding configuration of a member: a runner (`Option.some`) or a client only (`none`).
 * Takeover after a runner dies is bounded by the lock expiration and the health-check interval:
 * both are seconds here, not effect's default minute, because a dead runner holds children.
 *
 * @category constructors
 * @since 0.1.0
 */
export const config = (runner: Option.Option<RunnerSide>): ShardingConfig.ShardingConfig["Service"] => ({
  ...ShardingConfig.defaults,
  runnerAddress: Option.map(runner, (r) => r.address),
  runnerListenAddress: Option.map(runner, (r) => r.address),
  runnerShardWeight: Option.match(runner, { onNone: () => 1, onSome: (r) => r.capacity }),
  availableShardGroups,
  assignedShardGroups: Option.isSome(runner) ? availableShardGroups : [],
  shardsPerGroup,
  shardLockRefreshInterval: Duration.seconds(1),
  shardLockExpiration: Duration.seconds(5),
  runnerHealthCheckInterval: Duration.seconds(1),
  refreshAssignmentsInterval: Duration.seconds(1)
})

/**
 * A cluster member over `url` with effect's socket transport (over TLS keyed by `secret` when
 * the cluster has one: `RunnerTransport`): a runner listening on its address
 * when `runner` is some, else a client that sends to runners (and reads which runners are
 * registered, from `RunnerStorage`). Composed here rather than through
 * `NodeClusterSocket.layer`, which reads the sharding settings from the environment first.
 * Storage is checked before anything else starts (`ClusterStorage`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  url: ClusterUrl,
  cwd: string,
  runner: Option.Option<RunnerSide>,
  secret: Option.Option<ClusterSecret> = Option.none()
): Layer.Layer<Sharding | Runners.Runners | RunnerStorage.RunnerStorage, ClusterStorage.ClusterStorageError | SocketServer.SocketServerError> => {
  const settings = ShardingConfig.layer(config(runner))
  const key = Option.map(secret, RunnerTransport.pskOf)
  const client = RunnerTransport.layerClientProtocol(key)
  const member = Option.isSome(runner)
    ? SocketRunner.layer.pipe(
      Layer.provide([RunnerTransport.layerSocketServer(key), client]),
      Layer.provide(RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(client)))
    )
    : SocketRunner.layerClientOnly.pipe(Layer.provide(client))
  return member.pipe(
    Layer.provideMerge(ClusterStorage.layer(url, cwd)),
    Layer.provide(settings),
    Layer.provide(RpcSerialization.layerSchemaBinary()),
    // Effect's cluster logs go to stderr (stdout is the commands' own): a runner's from Info, a
    // client's (the parent's) warnings only.
    Layer.provide(Logger.layer([Logger.withConsoleError(Logger.formatSimple)])),
    Layer.provide(Layer.succeed(References.MinimumLogLevel, Option.isSome(runner) ? "Info" : "Warn"))
  )
}

/**
 * The runners registered in the cluster's storage at `url`, healthy first (`host:port`), read
 * without joining the cluster; the storage's own error when it cannot be reached.
 *
 * @category constructors
 * @since 0.1.0
 */
export const listRunners = (
  url: ClusterUrl,
  cwd: string
): Effect.Effect<{ readonly healthy: ReadonlyArray<string>; readonly unhealthy: ReadonlyArray<string> }, ClusterStorage.ClusterStorageError> =>
  Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(ClusterStorage.layer(url, cwd).pipe(Layer.provide(ShardingConfig.layer(config(Option.none())))))
    return yield* ClusterStorage.registeredRunners.pipe(Effect.provideContext(context))
  }))
