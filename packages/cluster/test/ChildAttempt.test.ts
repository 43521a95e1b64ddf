/**
 * A child's attempt on a runner, in process against a real parent's object server: the remote
 * base answers every path as the engine does (file with mode and facts, folder, absent, denied,
 * not normalizable) and lists folders as the engine does; a runner runs a child over it into the
 * same changeset a local child exports; what a parent sends is validated like a plan file
 * (attempt_invalid, model_unavailable without a model here, secret_missing); only the first claim of an attempt is
 * granted, unsigned claims are refused; and a parent that goes away mid-attempt fails the attempt
 * instead of giving the child a wrong workspace.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Engine } from "@forkjoin/engine/Engine"
import { Overlay } from "@forkjoin/runtime"
import { BlobStore } from "@forkjoin/runtime/BlobStore"
import { Driver, scripted } from "@forkjoin/runtime/Driver"
import * as Session from "@forkjoin/runtime/Session"
import * as WriteScope from "@forkjoin/runtime/WriteScope"
import { TaskId, ThreadId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as path from "node:path"
import { Changeset } from "@forkjoin/schema"
import { sign } from "../src/ClusterAuth.ts"
import * as ChildAttempt from "../src/ChildAttempt.ts"
import * as Runner from "../src/Runner.ts"
import * as ObjectClient from "../src/ObjectClient.ts"
import * as RemoteBase from "../src/RemoteBase.ts"
import { codeIn, layers, makeWorkspace, raw, removeSandboxes, served } from "./helpers.ts"

afterAll(removeSandboxes)

const workspace = () => {
  const ws = makeWorkspace({ "src/a.ts": "export const a = 1\n", "src/deep/b.ts": "b\r\nc\r\n", "run.sh": "#!/bin/sh\n", ".git/config": "[core]\n", "bin.dat": "\u0000\u0001" })
  fs.chmodSync(path.join(ws, "run.sh"), 0o755)
  return ws
}

const PATHS = ["src/a.ts", "src/deep/b.ts", "run.sh", "bin.dat", "src", "src/deep", "absent.txt", "src/none/x", ".git/config", "../outside", "./src/a.ts"]

const stateOf = (state: unknown) =>
  typeof state === "object" && state !== null && "bytes" in state && state.bytes instanceof Uint8Array ? `File ${Buffer.from(state.bytes).toString("hex")}` : JSON.stringify(state)

/** Grants the first claim of each attempt, as the parent does. */
const firstClaim = () => {
  const seen = new Set<string>()
  return (attempt: string) => Effect.sync(() => (seen.has(attempt) ? false : (seen.add(attempt), true)))
}

/** An inspection as comparable data (bytes as hex). */
const shown = (r: Result.Result<{ readonly state: unknown; readonly mode: unknown; readonly landing: unknown; readonly facts: unknown }, { readonly code: string }>) =>
  Result.isFailure(r)
    ? { error: r.failure.code }
    : { state: stateOf(r.success.state), mode: r.success.mode, landing: r.success.landing, facts: r.success.facts }

const edit = (patch: string) => [{ read_file: { path: "src/a.ts" } }, { apply_patch: { patch } }, { list_dir: { path: "src" } }, { finish: {} }]
const PATCH = "*** Begin Patch\n*** Update File: src/a.ts\n@@\n-export const a = 1\n+export const a = 2\n*** Add File: src/deep/new.ts\n+new\n*** End Patch"

const request = (url: string, overrides: Partial<ChildAttempt.AttemptRequest> = {}, root = ""): ChildAttempt.AttemptRequest => ({
  runId: "run-test",
  taskId: TaskId.make("t"),
  attempt: 1,
  plan: JSON.stringify({ schemaVersion: 1, tasks: [{ id: "t", mode: "transactional_write", writeScope: ["src"], actions: edit(PATCH) }] }),
  objects: url,
  root: root as ChildAttempt.AttemptRequest["root"],
  ...overrides
})

describe("RemoteBase", () => {
  it.live("answers every path and folder as the engine's workspace does", () => {
    const ws = workspace()
    return Effect.gen(function*() {
      const { baseline, client } = yield* served()
      const remote = RemoteBase.make(ObjectClient.baselineView(client, baseline.tree.root))
      const local = Overlay.engineBase(yield* Engine)
      const [there, here] = [yield* remote.inspect(PATHS), yield* local.inspect(PATHS)]
      for (const p of PATHS) assert.deepStrictEqual(shown(there.get(p)!), shown(here.get(p)!), p)
      for (const dir of ["", "src", "src/deep"]) {
        const visible = (entries: ReadonlyArray<{ readonly name: string }>) => entries.map((e) => JSON.stringify(e)).filter((e) => !e.includes(".git")).sort()
        assert.deepStrictEqual(visible(yield* remote.listDir(dir)), visible(yield* local.listDir(dir)), dir)
      }
    }).pipe(Effect.scoped, Effect.provide(layers(ws)))
  })

  it.live("a parent that is gone fails the read (a defect), never answers 'absent'", () => {
    const ws = workspace()
    return Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { baseline, client } = yield* served().pipe(Scope.provide(scope))
      yield* Scope.close(scope, Exit.void)
      const remote = RemoteBase.make(ObjectClient.baselineView(client, baseline.tree.root))
      const read = yield* Effect.exit(remote.inspect(["src/a.ts"]))
      assert.isTrue(read._tag === "Failure" && read.cause.reasons.some((r) => r._tag === "Die"))
    }).pipe(Effect.scoped, Effect.provide(layers(ws)))
  })
})

describe("ChildAttempt.runAttempt", () => {
  it.live("runs the child over the parent's baseline into the changeset a local child exports", () => {
    const ws = workspace()
    return Effect.gen(function*() {
      const { baseline, running, objects } = yield* served({ claim: firstClaim() })
      const runSecret = Buffer.from(Redacted.value(running.secret)).toString("base64")
      const reply = yield* ChildAttempt.runAttempt(request(running.url, { runSecret }, baseline.tree.root), ChildAttempt.runnerSide(Option.none(), makeWorkspace({})), { runner: "127.0.0.1:1", nth: 1 })
      assert.strictEqual(reply.status, "finished", JSON.stringify(reply))
      assert.isDefined(reply.changeset)
      const uploaded = JSON.parse(new TextDecoder().decode((yield* objects.get(reply.changeset!))!))
      const local = yield* Session.run({ mode: "changeset_export", threadId: ThreadId.make("run-test/t"), taskId: TaskId.make("t"), writeScope: WriteScope.makeUnsafe(["src"]) }).pipe(
        Effect.provideService(Driver, scripted(edit(PATCH))),
        Effect.provide(BlobStore.layerMemory)
      )
      assert.deepStrictEqual(uploaded, Schema.encodeSync(Changeset)(local.changeset!))
      assert.deepStrictEqual(ChildAttempt.decodeSteps(reply.steps).pipe(Result.getOrThrow), local.steps)
    }).pipe(Effect.scoped, Effect.provide(layers(ws)))
  })

  it.live("what a parent sends is checked like a plan file, and the secret must be there", () => {
    const ws = workspace()
    return Effect.gen(function*() {
      const { baseline, running } = yield* served({ claim: firstClaim() })
      const runSecret = Buffer.from(Redacted.value(running.secret)).toString("base64")
      const attempt = (overrides: Partial<ChildAttempt.AttemptRequest>, secret = true) =>
        Effect.map(
          ChildAttempt.runAttempt(request(running.url, { ...(secret ? { runSecret } : {}), ...overrides }, baseline.tree.root), ChildAttempt.runnerSide(Option.none(), makeWorkspace({})), { runner: "127.0.0.1:1", nth: 1 }),
          (r) => [r.status, r.error?.code, r.changeset]
        )
      const task = { id: "t", mode: "transactional_write", writeScope: ["src"], actions: edit(PATCH) }
      assert.deepStrictEqual(yield* attempt({ plan: "{not json" }), ["failed", "attempt_invalid", undefined])
      assert.deepStrictEqual(yield* attempt({ plan: JSON.stringify({ schemaVersion: 1, tasks: [{ ...task, writeScope: ["../etc"] }] }) }), ["failed", "attempt_invalid", undefined])
      assert.deepStrictEqual(yield* attempt({ plan: JSON.stringify({ schemaVersion: 1, tasks: [task, { ...task, id: "u" }] }) }), ["failed", "attempt_invalid", undefined])
      assert.deepStrictEqual(yield* attempt({ taskId: TaskId.make("other") }), ["failed", "attempt_invalid", undefined])
      assert.deepStrictEqual(yield* attempt({ plan: JSON.stringify({ schemaVersion: 1, tasks: [{ id: "t", mode: "transactional_write", writeScope: ["src"], prompt: "do it" }] }) }), ["failed", "model_unavailable", undefined])
      assert.deepStrictEqual(yield* attempt({}, false), ["failed", "secret_missing", undefined])
      // A wrong secret: the parent refuses the claim's signature, nothing runs.
      assert.deepStrictEqual(yield* attempt({ runSecret: Buffer.from("a wrong secret of enough bytes!!").toString("base64") }), ["failed", "parent_unreachable", undefined])
    }).pipe(Effect.scoped, Effect.provide(layers(ws)))
  })
})

describe("attempt claims", () => {
  it.live("the first claim of an attempt is granted, every later one refused; unsigned and malformed claims are refused", () => {
    const ws = workspace()
    return Effect.gen(function*() {
      const seen = new Map<string, string>()
      const claim = (attempt: string, runner: string) => Effect.sync(() => (seen.has(attempt) ? false : (seen.set(attempt, runner), true)))
      const { running, client } = yield* served({ claim })
      assert.isTrue(yield* client.claim("run/t/1", "127.0.0.1:1"))
      assert.isFalse(yield* client.claim("run/t/1", "127.0.0.1:2"))
      assert.isFalse(yield* client.claim("run/t/1", "127.0.0.1:1"))
      assert.isTrue(yield* client.claim("run/t/2", "127.0.0.1:2"))
      const unsigned = yield* raw("POST", `${running.url}/v1/attempts/claim`, {}, new TextEncoder().encode(JSON.stringify({ attempt: "run/t/3", runner: "x" })))
      assert.deepStrictEqual([unsigned.status, codeIn(unsigned.text)], [401, "auth_missing"])
      const body = new TextEncoder().encode(JSON.stringify({ attempt: "run/t/3", runner: "x", extra: 1 }))
      const malformed = yield* raw("POST", `${running.url}/v1/attempts/claim`, sign(running.secret, { method: "POST", path: "/v1/attempts/claim", time: Date.now(), body }), body)
      assert.deepStrictEqual([malformed.status, codeIn(malformed.text)], [400, "request_malformed"])
      assert.deepStrictEqual([...seen.keys()], ["run/t/1", "run/t/2"])
      // A server given no claim decider takes none.
      const { client: plain } = yield* served()
      const none = yield* Effect.result(plain.claim("run/t/1", "127.0.0.1:1"))
      assert.isTrue(Result.isFailure(none) && none.failure.status === 404)
    }).pipe(Effect.scoped, Effect.provide(layers(ws)))
  })
})

describe("a runner with a cluster secret", () => {
  it.live("runs only attempts signed with it, and may listen beyond loopback", () => {
    const ws = workspace()
    return Effect.gen(function*() {
      const { baseline, running } = yield* served({ claim: firstClaim() })
      const side = ChildAttempt.runnerSide(Option.some(running.secret), makeWorkspace({}))
      const unsigned = request(running.url, {}, baseline.tree.root)
      const refused = yield* ChildAttempt.runAttempt(unsigned, side, { runner: "10.0.0.5:1", nth: 1 })
      assert.deepStrictEqual([refused.status, refused.error?.code], ["failed", "attempt_unauthenticated"])
      const auth = sign(running.secret, { method: ChildAttempt.SIGNED_METHOD, path: ChildAttempt.entityId("run-test", "t", 1), time: Date.now(), body: ChildAttempt.signedBytes(unsigned) })
      // A signature over other fields (another task's plan) does not carry over.
      const forged = yield* ChildAttempt.runAttempt({ ...unsigned, plan: unsigned.plan.replace("src", "src/deep"), auth }, side, { runner: "10.0.0.5:1", nth: 2 })
      assert.strictEqual(forged.error?.code, "attempt_unauthenticated")
      const signed = yield* ChildAttempt.runAttempt({ ...unsigned, auth }, side, { runner: "10.0.0.5:1", nth: 3 })
      assert.strictEqual(signed.status, "finished", JSON.stringify(signed))
      const options = { cluster: "sqlite:/tmp/x.db", capacity: 1, host: "10.0.0.5", port: 34431 }
      assert.strictEqual(Result.isSuccess(Runner.plan(options, true)), true)
      const open = Runner.plan(options, false)
      assert.isTrue(Result.isFailure(open) && open.failure._tag === "RunnerError" && open.failure.code === "runner_bind_unauthenticated")
    }).pipe(Effect.scoped, Effect.provide(layers(ws)))
  })
})
