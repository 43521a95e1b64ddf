/**
 * The parent's side of a cluster run: it snapshots the run's baseline, serves it (and takes the
 * children's uploads) over the object server, and gives the run one `RemoteAttempt` that sends
 * each attempt of a child to the runners as a `ChildAttempt` entity and lays what comes back
 * out in the child's artifact folder, exactly as a `changesetFile` (the join revalidates it
 * like any changeset produced elsewhere). The join stays on the parent: nothing here writes
 * the workspace.
 *
 * An attempt whose runner is lost (killed, unreachable; effect redelivers its message, and the
 * parent refuses the second claim of it) fails as `runner_lost`, and one that
 * does not answer within the task's timeout (plus `REPLY_GRACE_MS` for the upload) times out:
 * both count against the task's `maxAttempts`, and the next attempt is a new entity, so a late
 * answer of the old one is never read.
 *
 * @since 0.1.0
 */
import type { Engine } from "@forkjoin/engine/Engine"
import * as Action from "@forkjoin/runtime/Action"
import * as Artifacts from "@forkjoin/runtime/Artifacts"
import { BlobStore, type BlobStoreError } from "@forkjoin/runtime/BlobStore"
import * as ChildVerify from "@forkjoin/runtime/ChildVerify"
import type { RemoteAttempt } from "@forkjoin/runtime/Children"
import type { Task } from "@forkjoin/runtime/RunPlan"
import type { SessionResult } from "@forkjoin/runtime/Session"
import { decodeUntrustedChangesetJson } from "@forkjoin/schema/Changeset"
import type { EngineError } from "@forkjoin/schema/EngineError"
import type { Sharding } from "effect/cluster/Sharding"
import type { RunnerStorage } from "effect/cluster/RunnerStorage"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Baseline from "./Baseline.ts"
import { type ClusterSecret, randomSecret, sign } from "./ClusterAuth.ts"
import * as ChangesetWire from "./ChangesetWire.ts"
import * as ClusterStorage from "./ClusterStorage.ts"
import * as ChildAttempt from "./ChildAttempt.ts"
import { Objects } from "./Objects.ts"
import * as ObjectServer from "./ObjectServer.ts"

/**
 * How long past a task's timeout the parent waits for its runner's answer (the changeset's
 * upload happens after the session's own timeout).
 *
 * @category constants
 * @since 0.1.0
 */
export const REPLY_GRACE_MS = 5_000

/**
 * How the parent serves the run's objects: the cluster secret (none: a random one per run,
 * sent to the runners with each attempt, for runners on this machine), and the address runners
 * reach it on (default 127.0.0.1; another address needs a secret).
 *
 * @category models
 * @since 0.1.0
 */
export interface ParentOptions {
  readonly secret: Option.Option<ClusterSecret>
  readonly host?: string | undefined
  readonly port?: number | undefined
}

/**
 * A started parent: the `RemoteAttempt` for the run, where its objects are served, and the
 * baseline's size.
 *
 * @category models
 * @since 0.1.0
 */
export interface Started {
  readonly remote: RemoteAttempt
  readonly objects: string
  readonly baseline: { readonly files: number; readonly bytes: number; readonly root: string }
}

/**
 * The parent cannot run children on the cluster: `no_runners` (none is registered and healthy).
 *
 * @category errors
 * @since 0.1.0
 */
export class ParentError extends Schema.TaggedError<ParentError>()("ParentError", {
  code: Schema.Literal("no_runners"),
  message: Schema.String
}) {}

/** The task as the one-task plan a runner validates. */
const planOf = (task: Task): string =>
  JSON.stringify({
    schemaVersion: 1,
    tasks: [{
      id: task.id,
      mode: task.mode,
      ...(task.writeScope === undefined ? {} : { writeScope: [...task.writeScope] }),
      maxAttempts: 1,
      timeoutMs: task.timeoutMs,
      // A task is scripted or model-driven, never both.
      ...(task.prompt === undefined ? { actions: task.actions.map(Action.encodeAction) } : { prompt: task.prompt }),
      ...(task.childVerify === undefined ? {} : { childVerify: task.childVerify })
    }]
  })

/**
 * Starts the parent's side in the current scope (the object server stops, and the uploads'
 * folder goes, when it closes). Fails with `no_runners` before anything is served when no
 * runner is registered and healthy.
 *
 * @category constructors
 * @since 0.1.0
 */
export const start = (
  options: ParentOptions
): Effect.Effect<Started, ParentError | ObjectServer.ObjectServerError | EngineError | BlobStoreError, Scope.Scope | Engine | Sharding | RunnerStorage> =>
  Effect.gen(function*() {
    const runners = yield* ClusterStorage.healthyRunners
    if (runners.length === 0) {
      return yield* new ParentError({
        code: "no_runners",
        message: "no runner has joined this cluster; start one with 'forkjoin runner --cluster URL' (same URL), then run again"
      })
    }
    const baseline = yield* Baseline.snapshot
    // Uploads are held in memory until the child's folder gets the copy the join reads: writing
    // them to disk first doubled the parent's file creations, its main cost per child.
    const objects = yield* Layer.build(Objects.layer(baseline).pipe(Layer.provide(BlobStore.layerMemory)))
    const secret = Option.getOrElse(options.secret, randomSecret)
    // The first runner that claimed each attempt: a later claim is a redelivery after it was lost.
    const claims = new Map<string, string>()
    const claim = (attempt: string, runner: string) =>
      Effect.sync(() => {
        if (claims.has(attempt)) return false
        claims.set(attempt, runner)
        return true
      })
    const running = yield* ObjectServer.serve({ host: options.host, port: options.port, secret, claim }).pipe(Effect.provideContext(objects))
    const runSecret = Option.isNone(options.secret) ? Buffer.from(Redacted.value(secret)).toString("base64") : undefined
    const client = yield* ChildAttempt.ChildAttempt.client

    const remote: RemoteAttempt = ({ attempt, namespace, runId, task, threadId }) => {
      const mode = task.mode === "transactional_write" ? "changeset_export" as const : "analysis_only" as const
      const ended = (status: SessionResult["status"], error?: { code: string; message: string }, ranOn?: string) => ({
        result: { threadId, mode, status, steps: [], transactions: [], ...(error === undefined ? {} : { error }) } satisfies SessionResult,
        ranOn
      })
      const unsigned: ChildAttempt.AttemptRequest = {
        runId,
        taskId: task.id,
        attempt,
        plan: planOf(task),
        objects: running.url,
        root: baseline.tree.root,
        ...(runSecret === undefined ? {} : { runSecret })
      }
      const id = ChildAttempt.entityId(runId, task.id, attempt)
      // With a cluster secret the runner checks who sent the attempt (it may run a command).
      const request: ChildAttempt.AttemptRequest = Option.isNone(options.secret) ? unsigned : {
        ...unsigned,
        auth: sign(options.secret.value, { method: ChildAttempt.SIGNED_METHOD, path: id, time: Date.now(), body: ChildAttempt.signedBytes(unsigned) })
      }
      return Effect.gen(function*() {
        const answered = yield* client(id).Attempt(request).pipe(
          Effect.timeoutOption(Duration.millis(task.timeoutMs + REPLY_GRACE_MS)),
          Effect.exit
        )
        if (answered._tag === "Failure") {
          return ended("failed", { code: "runner_lost", message: `the runner running this attempt was lost before it answered (${String(answered.cause).split("\n")[0]}); the attempt counts against maxAttempts` })
        }
        if (Option.isNone(answered.value)) {
          return ended("timed_out", {
            code: "runner_timed_out",
            message: `no runner answered within the task's ${task.timeoutMs} ms (+${REPLY_GRACE_MS} ms to upload); if the runners have a cluster secret, this run needs the same one`
          })
        }
        const reply = answered.value.value
        if (reply.error?.code === "attempt_redelivered") {
          const first = claims.get(id)
          return ended("failed", { code: "runner_lost", message: `attempt ${attempt} started on ${first ?? "another runner"}, which was lost before it answered; the attempt counts against maxAttempts` }, first)
        }
        const steps = ChildAttempt.decodeSteps(reply.steps)
        if (Result.isFailure(steps)) return ended("failed", { code: "reply_invalid", message: `runner ${reply.runner} sent steps that are not valid: ${steps.failure.message}` }, reply.runner)
        const error = reply.error === undefined ? {} : { error: reply.error }
        const childVerify = reply.childVerify
        if (childVerify !== undefined && task.childVerify !== undefined) yield* ChildVerify.writeLog(namespace, task.childVerify, childVerify)
        // A model-driven child's conversation, kept as a local one's is (best effort).
        if (reply.transcript !== undefined) {
          const text = reply.transcript
          yield* Effect.try({ try: (): unknown => JSON.parse(text), catch: (e) => e }).pipe(
            Effect.flatMap((transcript) => Artifacts.writeJson(namespace, "transcript.json", transcript)),
            Effect.ignore
          )
        }
        if (reply.changeset === undefined) {
          return { result: { threadId, mode, status: reply.status, steps: steps.success, transactions: [], ...error } satisfies SessionResult, childVerify, ranOn: reply.runner }
        }
        // The blobs only: the run writes the child's changeset.json itself, as for a local child.
        const received = yield* ChangesetWire.receive(reply.changeset, namespace, { changesetFile: false }).pipe(Effect.provideContext(objects), Effect.result)
        if (Result.isFailure(received)) return ended("failed", { code: "changeset_unreceived", message: received.failure.message }, reply.runner)
        const changeset = decodeUntrustedChangesetJson(new TextDecoder().decode(received.success.bytes))
        if (Result.isFailure(changeset)) {
          return ended("failed", { code: "changeset_invalid", message: `runner ${reply.runner} sent a changeset that is not valid: ${changeset.failure.message}` }, reply.runner)
        }
        return {
          result: { threadId, mode, status: reply.status, steps: steps.success, transactions: [], changeset: changeset.success, ...error } satisfies SessionResult,
          childVerify,
          ranOn: reply.runner
        }
      })
    }
    return { remote, objects: running.url, baseline: { files: baseline.files, bytes: baseline.bytes, root: baseline.tree.root } }
  })
