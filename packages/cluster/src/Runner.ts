/**
 * A runner: a process that joins a cluster over its storage, listens for runner traffic on its
 * address, and serves the entities forkjoin registers (`entities`). Started by
 * `forkjoin runner --cluster URL [--capacity N] [--host H --port P]`.
 *
 * Effect's runner socket protocol authenticates nobody by itself: whoever can connect to a
 * runner's port can send it messages. So without a cluster secret a runner binds a loopback
 * address only; with one, runner traffic goes over TLS keyed by the secret (`RunnerTransport`)
 * and any address may be used.
 *
 * It owns the runner's options, the bind rule and the entity registration. It does not own the
 * sharding settings (`Sharding`) nor the storage (`ClusterStorage`).
 *
 * @since 0.1.0
 */
import { isLoopbackHost } from "@forkjoin/http/Loopback"
import type { PromptDriver } from "@forkjoin/runtime/Driver"
import { RunnerAddress } from "effect/cluster/RunnerAddress"
import type { Sharding as ShardingService } from "effect/cluster/Sharding"
import type { RunnerStorage } from "effect/cluster/RunnerStorage"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as SocketServer from "effect/socket/SocketServer"
import * as ChildAttempt from "./ChildAttempt.ts"
import type { ClusterSecret } from "./ClusterAuth.ts"
import * as ClusterStorage from "./ClusterStorage.ts"
import type { ClusterStorageError } from "./ClusterStorage.ts"
import * as ClusterUrl from "./ClusterUrl.ts"
import * as Sharding from "./Sharding.ts"
import * as Whereami from "./Whereami.ts"

/**
 * A runner's options as given: the cluster storage URL, its capacity (its share of the shards,
 * relative to the other runners), and the address it listens on and advertises.
 *
 * @category models
 * @since 0.1.0
 */
export const RunnerOptions = Schema.Struct({
  cluster: Schema.String,
  capacity: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  host: Schema.String,
  port: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 65535 }))
})

/**
 * @category models
 * @since 0.1.0
 */
export type RunnerOptions = typeof RunnerOptions.Type

/**
 * The defaults of the options a user may leave out.
 *
 * @category constants
 * @since 0.1.0
 */
export const defaults = { capacity: 1, host: "127.0.0.1", port: 34431 } as const

/**
 * A runner that must not start as asked; `message` says what to do instead.
 *
 * @category errors
 * @since 0.1.0
 */
export class RunnerError extends Schema.TaggedError<RunnerError>()("RunnerError", {
  code: Schema.Literal("runner_bind_unauthenticated"),
  host: Schema.String,
  message: Schema.String
}) {}

/**
 * What a runner with `options` would be: its storage and its side of the sharding, or why not
 * (`secured`: the cluster has a secret, so its traffic is TLS). Pure and total.
 *
 * @category constructors
 * @since 0.1.0
 */
export const plan = (
  options: RunnerOptions,
  secured = false
): Result.Result<{ readonly url: ClusterUrl.ClusterUrl; readonly side: Sharding.RunnerSide }, ClusterUrl.ClusterUrlError | RunnerError> =>
  Result.flatMap(ClusterUrl.parse(options.cluster), (url) =>
    secured || isLoopbackHost(options.host)
      ? Result.succeed({ url, side: { address: RunnerAddress.make({ host: options.host, port: options.port }), capacity: options.capacity } })
      : Result.fail(
        new RunnerError({
          code: "runner_bind_unauthenticated",
          host: options.host,
          message: `a runner without a cluster secret listens on a loopback address only (got --host ${options.host}): ` +
            "its traffic would be neither authenticated nor encrypted, so anyone who can reach the port could send it work; " +
            "give every runner and parent the same --secret-file (or FORKJOIN_CLUSTER_SECRET) to listen on another address"
        })
      ))

/**
 * Every entity a runner serves; `secret` is the runner's cluster secret, when it has one, and
 * `prompt` drives its model-driven children.
 *
 * @category layers
 * @since 0.1.0
 */
export const entities = (
  secret: Option.Option<ClusterSecret>,
  prompt: Option.Option<PromptDriver["Service"]> = Option.none()
): Layer.Layer<never, never, ShardingService> => Layer.mergeAll(Whereami.layer, ChildAttempt.layer(secret, prompt))

/**
 * The runner as a layer: its storage checked first, then it registers, listens and serves
 * `entities` until the layer's scope closes (then it releases its shards).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  options: RunnerOptions,
  cwd: string,
  secret: Option.Option<ClusterSecret> = Option.none(),
  prompt: Option.Option<PromptDriver["Service"]> = Option.none()
): Layer.Layer<ShardingService | RunnerStorage, ClusterUrl.ClusterUrlError | RunnerError | ClusterStorageError | SocketServer.SocketServerError> =>
  Layer.unwrap(Effect.map(Effect.fromResult(plan(options, Option.isSome(secret))), ({ side, url }) =>
    Layer.provideMerge(entities(secret, prompt), Sharding.layer(url, cwd, Option.some(side), secret))))

/**
 * Completes once the runner at `address` (`host:port`) is registered and healthy in the
 * cluster's storage, so a parent started after it finds it (registration runs in the
 * background of `layer`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const registered = (address: string): Effect.Effect<void, never, RunnerStorage> =>
  Effect.repeat(ClusterStorage.healthyRunners, {
    until: (runners) => runners.includes(address),
    schedule: Schedule.spaced("100 millis")
  }).pipe(Effect.asVoid)
