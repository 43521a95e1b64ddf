/**
 * A workspace's cluster runners for `forkjoin status` and `forkjoin serve`: the cluster named
 * (`--cluster`, else the configuration's `cluster`) and its registered runners, read from its
 * storage without joining it. An unreachable storage is reported in the answer, never a failure.
 */
import * as Config from "@forkjoin/autonomy/Config"
import type { ClusterRunners } from "@forkjoin/schema/GatewayApi"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"

/** The configuration's cluster URL (none when unset or the configuration does not load: the gate says why). */
export const configuredCluster = (root: string): Effect.Effect<string | undefined> =>
  Effect.map(Effect.result(Config.load(root, process.env)), (c) => (Result.isSuccess(c) ? c.success.cluster?.url : undefined))

/** The runners of the cluster at `url` (a relative `sqlite:` path from `cwd`). */
export const runnersOf = (url: string, cwd: string): Effect.Effect<ClusterRunners> =>
  Effect.gen(function*() {
    const Cluster = yield* Effect.promise(() => import("@forkjoin/cluster"))
    const shown = Cluster.ClusterUrl.redact(url)
    const parsed = Cluster.ClusterUrl.parse(url)
    if (Result.isFailure(parsed)) return { url: shown, runners: [], unhealthy: [], error: parsed.failure.message }
    const listed = yield* Effect.result(Cluster.Sharding.listRunners(parsed.success, cwd))
    return Result.isFailure(listed)
      ? { url: shown, runners: [], unhealthy: [], error: `${listed.failure.code}: ${listed.failure.message}` }
      : { url: shown, runners: listed.success.healthy, unhealthy: listed.success.unhealthy }
  })
