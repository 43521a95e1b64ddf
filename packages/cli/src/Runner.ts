/**
 * `forkjoin runner`: joins the cluster at `--cluster` and serves children until interrupted;
 * leaving (Ctrl-C, SIGTERM) releases its share so the other runners take it over. Storage that
 * cannot be reached, an address it must not listen on, or a secret that does not load stop it
 * before it joins, with exit 2. The flags are in `RunnerCommand.ts`.
 *
 * @since 0.1.0
 */
import * as ClusterAuth from "@forkjoin/cluster/ClusterAuth"
import * as ClusterUrl from "@forkjoin/cluster/ClusterUrl"
import * as ClusterRunner from "@forkjoin/cluster/Runner"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import { UsageError } from "./internal/errors.ts"
import { writeStdout } from "./internal/output.ts"

/**
 * One `runner` invocation, after flag parsing.
 *
 * @category models
 * @since 0.1.0
 */
export interface RunnerRequest {
  readonly cluster: string
  readonly capacity: number
  readonly host: string
  readonly port: number
  readonly secretFile?: string | undefined
  readonly json: boolean
}

const refused = (e: { readonly message: string; readonly code?: string }) =>
  new UsageError({ message: `forkjoin runner: ${e.code === undefined ? "" : `${e.code}: `}${e.message}`, cause: e })

/**
 * Joins and serves until interrupted.
 *
 * @category constructors
 * @since 0.1.0
 */
export const runner = Effect.fn("Runner.runner")(function*(request: RunnerRequest) {
  const secret = yield* ClusterAuth.optionalSecret(request.secretFile, process.env).pipe(Effect.mapError(refused))
  const options = { cluster: request.cluster, capacity: request.capacity, host: request.host, port: request.port }
  // Model-driven children use this runner's model (its folder's configuration, its keys); without
  // one the runner runs scripted children and refuses prompt tasks with model_unavailable.
  const Models = yield* Effect.promise(() => import("@forkjoin/drivers/Models"))
  const HostTools = yield* Effect.promise(() => import("@forkjoin/drivers/HostTools"))
  const choice = yield* Models.forWorkspace(process.cwd(), process.env).pipe(Effect.mapError(refused))
  const prompt = Result.isSuccess(choice) ? Option.some(HostTools.promptDriver(choice.success.model, choice.success.child)) : Option.none()
  yield* Effect.scoped(Effect.gen(function*() {
    const member = yield* Layer.build(ClusterRunner.layer(options, process.cwd(), secret, prompt)).pipe(
      Effect.mapError((e) => refused({ message: e.message, ...("code" in e && typeof e.code === "string" ? { code: e.code } : {}) }))
    )
    const where = `${request.host}:${request.port}`
    // "joined" only once a parent would find this runner.
    yield* ClusterRunner.registered(where).pipe(Effect.provideContext(member))
    const cluster = ClusterUrl.redact(request.cluster)
    yield* writeStdout(
      request.json
        ? `${JSON.stringify({ runner: where, cluster, capacity: request.capacity, pid: process.pid, model: Option.isSome(prompt) })}\n`
        : `forkjoin runner: joined ${cluster} as ${where} (capacity ${request.capacity}${Option.isSome(prompt) ? ", with a model for prompt tasks" : ""}); Ctrl-C leaves the cluster\n`
    )
    return yield* Effect.never
  }))
})
