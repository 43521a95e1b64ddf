/**
 * The smallest real entity a runner serves: `Whereami` answers which runner (address and process)
 * holds the entity id it was sent to. It proves the machinery end to end (storage, sharding,
 * socket transport, takeover after a runner dies) before children run on runners; the child
 * attempt entity registers beside it, in the same `Runner.entities`.
 *
 * @since 0.1.0
 */
import * as Entity from "effect/cluster/Entity"
import * as Effect from "effect/Effect"
import * as Rpc from "effect/rpc/Rpc"
import * as Schema from "effect/Schema"

/**
 * Where an entity lives: the runner's advertised `host:port`, its process id, the entity id.
 *
 * @category models
 * @since 0.1.0
 */
export const Location = Schema.Struct({ runner: Schema.String, pid: Schema.Int, entityId: Schema.String })

/**
 * @category models
 * @since 0.1.0
 */
export type Location = typeof Location.Type

/**
 * The entity type: one RPC, `Whereami`, no payload.
 *
 * @category models
 * @since 0.1.0
 */
export const Whereami = Entity.make("Whereami", [Rpc.make("Whereami", { success: Location })])

/**
 * The entity's handlers, registered on the runner that builds this layer.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = Whereami.toLayer(Effect.gen(function*() {
  const runner = yield* Entity.CurrentRunnerAddress
  const address = yield* Entity.CurrentAddress
  return {
    Whereami: () => Effect.sync(() => ({ runner: `${runner.host}:${runner.port}`, pid: process.pid, entityId: address.entityId }))
  }
}))
