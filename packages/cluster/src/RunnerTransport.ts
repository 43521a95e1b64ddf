/**
 * How cluster members reach runners: effect's runner socket protocol over plain TCP when the
 * cluster has no secret (then runners listen on loopback only), or over TLS keyed by the cluster
 * secret when it has one: TLS 1.2 with a pre-shared key derived from the secret (`pskOf`) and
 * ephemeral Diffie-Hellman, so only members holding the secret can connect, every message is
 * encrypted and authenticated, and a recorded session cannot be read later even with the secret.
 * No certificates to issue: the secret the parent and the runners already share is the key.
 *
 * Every member of one cluster must use the same: with a secret, all of them (runners and
 * parents) speak TLS; a member without it cannot connect to them at all.
 *
 * @since 0.1.0
 */
// The shared modules: platform-node's also load an HTTP client (undici) the CLI must not carry.
import * as NodeClusterSocket from "@effect/platform-node-shared/NodeClusterSocket"
import * as NodeSocket from "@effect/platform-node-shared/NodeSocket"
import * as NodeSocketServer from "@effect/platform-node-shared/NodeSocketServer"
import * as Runners from "effect/cluster/Runners"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as RpcClient from "effect/rpc/RpcClient"
import * as RpcSerialization from "effect/rpc/RpcSerialization"
import { Socket } from "effect/socket/Socket"
import * as SocketServer from "effect/socket/SocketServer"
import { createHmac } from "node:crypto"
import type { ClusterSecret } from "./ClusterAuth.ts"

/** The PSK identity every member presents (the key, not the name, is the secret). */
const IDENTITY = "forkjoin-cluster-v1"

/** Forward-secret PSK suites only. */
const CIPHERS = "ECDHE-PSK-CHACHA20-POLY1305:DHE-PSK-AES256-GCM-SHA384"

/**
 * The transport key of a cluster secret: HMAC-SHA256 under the secret of a fixed label, so the
 * key the sockets use is never the secret the object requests are signed with.
 *
 * @category constructors
 * @since 0.1.0
 */
export const pskOf = (secret: ClusterSecret): Uint8Array =>
  new Uint8Array(createHmac("sha256", Redacted.value(secret)).update("forkjoin-runner-transport-v1").digest())

// TLS 1.2: Node's PSK support is TLS 1.2's.
const TLS = { ciphers: CIPHERS, minVersion: "TLSv1.2", maxVersion: "TLSv1.2" } as const

/**
 * The runner's listening socket: plain without a key, TLS-PSK with one.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerSocketServer = (key: Option.Option<Uint8Array>): Layer.Layer<SocketServer.SocketServer, SocketServer.SocketServerError, ShardingConfig.ShardingConfig> =>
  Option.match(key, {
    onNone: () => NodeClusterSocket.layerSocketServer,
    onSome: (psk) =>
      Layer.unwrap(Effect.gen(function*() {
        const config = yield* ShardingConfig.ShardingConfig
        const address = Option.orElse(config.runnerListenAddress, () => config.runnerAddress)
        if (Option.isNone(address)) return yield* Effect.die(new Error("a runner needs a listen address"))
        return Layer.effect(
          SocketServer.SocketServer,
          NodeSocketServer.makeTls({
            ...TLS,
            host: address.value.host,
            port: address.value.port,
            pskIdentityHint: IDENTITY,
            pskCallback: (_socket, identity) => (identity === IDENTITY ? Buffer.from(psk) : null)
          })
        )
      }))
  })

/**
 * How a member opens a connection to a runner: plain without a key, TLS-PSK with one.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerClientProtocol = (key: Option.Option<Uint8Array>): Layer.Layer<Runners.RpcClientProtocol, never, RpcSerialization.RpcSerialization> =>
  Option.match(key, {
    onNone: () => NodeClusterSocket.layerClientProtocol,
    onSome: (psk) =>
      Layer.effect(Runners.RpcClientProtocol)(Effect.gen(function*() {
        const serialization = yield* RpcSerialization.RpcSerialization
        return {
          codecFor: serialization.codecFor,
          make: Effect.fnUntraced(function*(address) {
            const socket = yield* NodeSocket.makeTls({
              ...TLS,
              openTimeout: 1000,
              timeout: 5500,
              host: address.host,
              port: address.port,
              // Who the server is is proven by the key it shares, not by a certificate.
              checkServerIdentity: () => undefined,
              pskCallback: () => ({ psk: Buffer.from(psk), identity: IDENTITY })
            })
            return yield* RpcClient.makeProtocolSocket().pipe(
              Effect.provideService(Socket, socket),
              Effect.provideService(RpcSerialization.RpcSerialization, serialization)
            )
          }, Effect.orDie)
        }
      }))
  })
