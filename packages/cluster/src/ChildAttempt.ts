/**
 * One attempt of a child on a runner, as a cluster entity (one entity id per run, task and
 * attempt, so a late reply from a lost runner can never stand for a later attempt). The parent
 * sends the task as a one-task plan's JSON (the runner validates it as any plan), where the
 * run's baseline is served and its root hash; the runner runs the child's session over that
 * baseline (`RemoteBase`), uploads its changeset (`ChangesetWire.send`) and answers with the
 * session's ending, its steps and the changeset's hash. Nothing here writes a workspace.
 *
 * A runner that dies mid-attempt answers nothing, and effect sends the same message to the
 * runner that takes its shard over. So a runner claims each attempt from the parent before
 * running it: a second delivery is refused (`attempt_redelivered`), the parent counts the lost
 * attempt against the task's `maxAttempts` and sends a new one (`Parent`). A child that kills
 * every runner it lands on thus stops after `maxAttempts` runners, not all of them.
 *
 * @since 0.1.0
 */
import * as Fault from "@forkjoin/engine/Fault"
import { Observation } from "@forkjoin/runtime/Action"
import * as Action from "@forkjoin/runtime/Action"
import { BlobStore, makeMemory } from "@forkjoin/runtime/BlobStore"
import { Driver, type PromptDriver, scripted } from "@forkjoin/runtime/Driver"
import * as RunPlan from "@forkjoin/runtime/RunPlan"
import * as Session from "@forkjoin/runtime/Session"
import * as ChildVerify from "@forkjoin/runtime/ChildVerify"
import { Sha256Hash, TaskId, ThreadId } from "@forkjoin/schema/Ids"
import { ChildVerifyResult } from "@forkjoin/schema/MergeRun"
import * as Entity from "effect/cluster/Entity"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Rpc from "effect/rpc/Rpc"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type ClusterSecret, makeVerifier, type Verifier } from "./ClusterAuth.ts"
import * as Checkout from "./Checkout.ts"
import * as ChangesetWire from "./ChangesetWire.ts"
import * as ObjectClient from "./ObjectClient.ts"
import * as RemoteBase from "./RemoteBase.ts"

/**
 * What the parent asks: the run, task and attempt; the task as a one-task plan file's JSON;
 * where the run's objects are served and the baseline's root; and, only when the parent has no
 * configured cluster secret (every member on this machine), the run's own secret in base64.
 *
 * @category models
 * @since 0.1.0
 */
export const AttemptRequest = Schema.Struct({
  runId: Schema.String,
  taskId: TaskId,
  attempt: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  plan: Schema.String,
  objects: Schema.String,
  root: Sha256Hash,
  runSecret: Schema.optionalKey(Schema.String),
  /** The parent's signature of the rest (`ClusterAuth.sign` headers), when it has a cluster secret. */
  auth: Schema.optionalKey(Schema.Record(Schema.String, Schema.String))
})

/**
 * @category models
 * @since 0.1.0
 */
export type AttemptRequest = typeof AttemptRequest.Type

/**
 * One recorded step on the wire.
 *
 * @category models
 * @since 0.1.0
 */
export const WireStep = Schema.Struct({ action: Schema.Unknown, observation: Observation })

/**
 * What the runner answers: where it ran (`host:port`, process id), the session's ending and
 * steps (JSON text: observations carry arbitrary data), an error when the attempt could not
 * run, the uploaded changeset's hash, and what crossed the wire.
 *
 * @category models
 * @since 0.1.0
 */
export const AttemptReply = Schema.Struct({
  runner: Schema.String,
  pid: Schema.Int,
  status: Schema.Literals(["finished", "driver_stopped", "step_limit", "timed_out", "failed"]),
  steps: Schema.String,
  error: Schema.optionalKey(Schema.Struct({ code: Schema.String, message: Schema.String })),
  changeset: Schema.optionalKey(Sha256Hash),
  /** How the child's own check ended, when its task has one and the session finished. */
  childVerify: Schema.optionalKey(ChildVerifyResult),
  /** The runner's checkout of the baseline the check ran against: its size and the time it took to make (0 when reused). */
  checkout: Schema.optionalKey(Schema.Struct({ files: Schema.Int, bytes: Schema.Int, ms: Schema.Int })),
  /** A model-driven child's conversation (JSON text), kept by the parent as its `transcript.json`. */
  transcript: Schema.optionalKey(Schema.String),
  wire: Schema.Struct({ requests: Schema.Int, received: Schema.Int, sent: Schema.Int })
})

/**
 * @category models
 * @since 0.1.0
 */
export type AttemptReply = typeof AttemptReply.Type

/**
 * The steps a reply carries, decoded (untrusted).
 *
 * @category decoding
 * @since 0.1.0
 */
export const decodeSteps = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Array(WireStep)))

/**
 * The entity type: one RPC, `Attempt`.
 *
 * @category models
 * @since 0.1.0
 */
export const ChildAttempt = Entity.make("ChildAttempt", [Rpc.make("Attempt", { payload: AttemptRequest, success: AttemptReply })])

/**
 * The bytes the parent signs and a runner with a secret checks: every field but `auth`, in a
 * fixed order.
 *
 * @category encoding
 * @since 0.1.0
 */
export const signedBytes = (r: AttemptRequest): Uint8Array =>
  new TextEncoder().encode(JSON.stringify([r.runId, r.taskId, r.attempt, r.plan, r.objects, r.root, r.runSecret ?? null]))

/** The method name attempt signatures are made for (never an HTTP method). */
export const SIGNED_METHOD = "ATTEMPT"

/**
 * The entity id of one attempt.
 *
 * @category constructors
 * @since 0.1.0
 */
export const entityId = (runId: string, taskId: string, attempt: number): string => `${runId}/${taskId}/${attempt}`

/**
 * Runs one attempt on this runner (the entity's handler; `nth` counts this process's attempts
 * for the fault points). Never fails: every problem is an ending in the reply.
 *
 * @category constructors
 * @since 0.1.0
 */
export const runAttempt = (
  request: AttemptRequest,
  runner: RunnerSide,
  where: { readonly runner: string; readonly nth: number }
) =>
  Effect.gen(function*() {
    const secret = runner.secret
    const base = { runner: where.runner, pid: process.pid }
    const failed = (code: string, message: string, wire = { requests: 0, received: 0, sent: 0 }): AttemptReply => ({
      ...base,
      status: "failed",
      steps: "[]",
      error: { code, message },
      wire
    })
    if (Option.isSome(runner.verifier)) {
      const checked = runner.verifier.value.verify(
        { method: SIGNED_METHOD, path: entityId(request.runId, request.taskId, request.attempt), body: signedBytes(request) },
        request.auth ?? {},
        Date.now()
      )
      if (Result.isFailure(checked)) {
        return failed("attempt_unauthenticated", `this runner has a cluster secret and the attempt was not signed with it (${checked.failure.code}: ${checked.failure.message})`)
      }
    }
    const plan = RunPlan.decodeJson(request.plan)
    if (Result.isFailure(plan)) return failed("attempt_invalid", `the task sent to this runner is not valid: ${plan.failure.message}`)
    const task = plan.success.tasks[0]
    if (task === undefined || plan.success.tasks.length !== 1 || task.id !== request.taskId) {
      return failed("attempt_invalid", "the plan sent to this runner must hold exactly the one task the attempt names")
    }
    if (task.changesetFile !== undefined) {
      return failed("attempt_unsupported", `task ${task.id} brings a changeset made elsewhere: it is joined by the parent, not run on a runner`)
    }
    if (task.prompt !== undefined && Option.isNone(runner.prompt)) {
      return failed(
        "model_unavailable",
        `task ${task.id} is a model-driven child and this runner has no model: configure one where the runner runs ("models" in its forkjoin.config.json, or OPENAI_BASE_URL / ANTHROPIC_BASE_URL with their keys)`
      )
    }
    if (task.childVerify !== undefined && Option.isNone(secret)) {
      return failed("secret_required", `task ${task.id} runs a command (childVerify): a runner runs commands only for a parent that signs with the cluster secret; give the runner and the parent the same --secret-file`)
    }
    const key = Option.isSome(secret)
      ? secret.value
      : request.runSecret === undefined
      ? undefined
      : Redacted.make(new Uint8Array(Buffer.from(request.runSecret, "base64")))
    if (key === undefined) return failed("secret_missing", "this runner has no cluster secret and the parent sent none; give both the same --secret-file")
    const client = runner.clientFor(request.objects, key)
    // The client is shared by a run's attempts: this attempt's traffic is the difference.
    const before = client.stats()
    const wire = () => {
      const now = client.stats()
      return { requests: now.requests - before.requests, received: now.received - before.received, sent: now.sent - before.sent }
    }
    // The parent sees every delivery: effect redelivers a lost runner's message to another
    // runner as it is, and only the first delivery of an attempt may run it.
    const claimed = yield* Effect.result(client.claim(entityId(request.runId, request.taskId, request.attempt), where.runner))
    if (Result.isFailure(claimed)) return failed("parent_unreachable", `the parent at ${request.objects} could not be asked for this attempt: ${claimed.failure.message}`, wire())
    if (!claimed.success) {
      return failed("attempt_redelivered", `attempt ${request.attempt} of ${request.taskId} was started on another runner first, which was lost; the parent counts it and sends a new attempt`, wire())
    }
    const threadId = ThreadId.make(`${request.runId}/${task.id}`)
    const options: Exclude<Session.SessionOptions, { readonly mode: "direct" }> = task.mode === "transactional_write"
      ? { mode: "changeset_export", threadId, taskId: task.id, writeScope: task.writeScope!, timeoutMs: task.timeoutMs }
      : { mode: "analysis_only", threadId, timeoutMs: task.timeoutMs }
    const store = makeMemory()
    // A prompt task's model runs here, with the runner's configuration and keys; a script is the plan's.
    const driver = task.prompt !== undefined && Option.isSome(runner.prompt)
      ? runner.prompt.value.forTask(task, request.attempt)
      : scripted(task.actions.map(Action.encodeAction))
    const ran = yield* Session.runOn(RemoteBase.make(ObjectClient.baselineView(client, request.root)), options).pipe(
      Effect.provideService(Driver, driver),
      Effect.provideService(BlobStore, store),
      Effect.exit
    )
    if (ran._tag === "Failure") {
      return failed("baseline_unavailable", `the run's baseline could not be read from the parent at ${request.objects}: ${String(ran.cause)}`, wire())
    }
    const result = ran.value
    let changeset: Sha256Hash | undefined
    let checked: ChildVerifyResult | undefined
    let checkout: AttemptReply["checkout"]
    if (task.childVerify !== undefined && result.changeset !== undefined) {
      const made = yield* Effect.result(runner.checkouts.of(client, request.root))
      if (Result.isFailure(made)) return failed("checkout_failed", `the run's files could not be checked out on this runner for the child's check: ${made.failure.message}`, wire())
      checkout = { files: made.success.files, bytes: made.success.bytes, ms: made.success.ms }
      const logs = yield* Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-check-log-")))
      checked = yield* ChildVerify.run(task.childVerify, { root: made.success.dir, changeset: result.changeset, namespace: logs, attempt: request.attempt }).pipe(
        Effect.provideService(BlobStore, store),
        Effect.ensuring(Effect.sync(() => fs.rmSync(logs, { recursive: true, force: true })))
      )
    }
    if (result.changeset !== undefined && (checked === undefined || checked.status === "passed")) {
      yield* Fault.atRunnerUpload("before-upload", where.nth)
      const sent = yield* ChangesetWire.send(client, result.changeset).pipe(Effect.provideService(BlobStore, store), Effect.result)
      yield* Fault.atRunnerUpload("after-upload", where.nth)
      if (Result.isFailure(sent)) return failed("changeset_upload_failed", `the child's changeset could not be sent to the parent: ${sent.failure.message}`, wire())
      changeset = sent.success.changeset
    }
    return {
      ...base,
      status: result.status,
      steps: JSON.stringify(result.steps),
      ...(result.error === undefined ? {} : { error: result.error }),
      ...(changeset === undefined ? {} : { changeset }),
      ...(checked === undefined ? {} : { childVerify: checked }),
      ...(checkout === undefined ? {} : { checkout }),
      ...(driver.transcript === undefined ? {} : { transcript: JSON.stringify(driver.transcript()) }),
      wire: wire()
    } satisfies AttemptReply
  })

/**
 * What a runner brings to its attempts: its cluster secret (none: it takes the one a parent on
 * this machine sends), the verifier of parents' signatures (with a secret), and its checkouts.
 *
 * @category models
 * @since 0.1.0
 */
export interface RunnerSide {
  readonly secret: Option.Option<ClusterSecret>
  readonly verifier: Option.Option<Verifier>
  readonly checkouts: Checkout.Checkouts
  /** The client of a parent's object server, shared by the attempts of a run (its cache with them). */
  readonly clientFor: (url: string, secret: ClusterSecret) => ObjectClient.ObjectClient
  /** What drives prompt tasks here: the runner's own model configuration (none: it runs scripted children only). */
  readonly prompt: Option.Option<PromptDriver["Service"]>
}

/**
 * A runner's side with `secret`, its checkouts under `dir`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const runnerSide = (
  secret: Option.Option<ClusterSecret>,
  dir: string,
  prompt: Option.Option<PromptDriver["Service"]> = Option.none()
): RunnerSide => {
  // The newest parents' clients: a run's attempts share the nodes and blobs already fetched.
  const clients = new Map<string, ObjectClient.ObjectClient>()
  return {
    secret,
    verifier: Option.map(secret, (s) => makeVerifier(s)),
    checkouts: Checkout.make(dir),
    prompt,
    clientFor: (url, key) => {
      const id = `${url} ${Buffer.from(Redacted.value(key)).toString("hex")}`
      const known = clients.get(id)
      if (known !== undefined) return known
      const made = ObjectClient.make({ url, secret: key })
      clients.set(id, made)
      for (const old of [...clients.keys()].slice(0, Math.max(0, clients.size - CLIENTS_KEPT))) clients.delete(old)
      return made
    }
  }
}

/** Parents' clients a runner keeps (each with its cache). */
const CLIENTS_KEPT = 4

/**
 * The entity's handlers on the runner that builds this layer, with `secret` the runner's own
 * cluster secret and `prompt` what drives model-driven children here (the runner's model); its checkouts live in a temp folder removed when the layer closes.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (secret: Option.Option<ClusterSecret>, prompt: Option.Option<PromptDriver["Service"]> = Option.none()) => {
  // Attempts this process started, for the fault points.
  let attempts = 0
  return ChildAttempt.toLayer(
    Effect.gen(function*() {
      const runner = yield* Entity.CurrentRunnerAddress
      // Read where the runner was started: a sealed fault (test builds only) applies to its attempts.
      const faults = yield* Fault.Faults
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-runner-"))),
        (d) => Effect.sync(() => fs.rmSync(d, { recursive: true, force: true }))
      )
      const side = runnerSide(secret, dir, prompt)
      return {
        Attempt: ({ payload }) =>
          runAttempt(payload, side, { runner: `${runner.host}:${runner.port}`, nth: ++attempts }).pipe(Effect.provideService(Fault.Faults, faults))
      }
    }),
    { concurrency: 1, maxIdleTime: "10 seconds" }
  )
}
