/**
 * The object server and its client over a real workspace, on loopback: a runner reads the
 * baseline by path (links and denied folders absent, as the engine reads neither); every request that is
 * not correctly signed, is stale or replayed is 401 with its code; uploads whose bytes do not
 * hash to their name, or over the body cap, are refused and nothing is stored; a parent (or
 * anything in between) that answers with other bytes, or with a node naming `..`, is caught
 * by the client before the bytes are used. A non-loopback address without a secret is refused.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { sha256 } from "@forkjoin/patch"
import type { Sha256Hash } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as path from "node:path"
import { secretOf, sign } from "../src/ClusterAuth.ts"
import { encodeBody } from "../src/internal/objectWire.ts"
import * as ObjectClient from "../src/ObjectClient.ts"
import { encodeNode } from "../src/Manifest.ts"
import { Objects } from "../src/Objects.ts"
import { codeIn, layers, makeWorkspace, raw, removeSandboxes, served, servedOver } from "./helpers.ts"

afterAll(removeSandboxes)

const utf8 = (s: string) => new TextEncoder().encode(s)
const text = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b))
const hex = (h: Sha256Hash) => h.slice("sha256:".length)

const workspace = () => {
  const ws = makeWorkspace({ "src/a.ts": "export const a = 1\n", "src/deep/b.ts": "b\n", "README.md": "read me\n", ".git/config": "[core]\n" })
  fs.chmodSync(path.join(ws, "README.md"), 0o755)
  fs.symlinkSync("a.ts", path.join(ws, "src", "link.ts"))
  fs.symlinkSync("deep", path.join(ws, "src", "dirlink"))
  return ws
}

const failureCode = <A, E extends { readonly code: string }>(r: Result.Result<A, E>) => (Result.isSuccess(r) ? "ok" : r.failure.code)

describe("ObjectServer + ObjectClient", () => {
  it.live("a runner reads the baseline by path; links and denied folders are absent, as the engine reads neither", () => {
    const ws = workspace()
    return Effect.gen(function*() {
      const { baseline, client } = yield* served()
      const view = ObjectClient.baselineView(client, baseline.tree.root)
      assert.strictEqual(text(yield* view.read("src/a.ts")), "export const a = 1\n")
      assert.strictEqual(text(yield* view.read("src/deep/b.ts")), "b\n")
      // Changed on disk after the snapshot: the parent never serves other bytes under the old name.
      fs.writeFileSync(path.join(ws, "README.md"), "changed\n")
      assert.strictEqual(failureCode(yield* Effect.result(view.read("README.md"))), "object_missing")
      assert.isUndefined(yield* view.read("src/link.ts"))
      assert.isUndefined(yield* view.read("src/absent.ts"))
      assert.isUndefined(yield* view.read("src"))
      assert.isUndefined(yield* view.read(".git/config"))
      const root = (yield* view.list(""))!
      assert.deepStrictEqual(root.map((e) => [e.name, e.kind, e.mode === undefined ? undefined : e.mode & 0o111]), [["README.md", "file", 0o111], ["src", "dir", undefined]])
      assert.deepStrictEqual((yield* view.list("src"))!.map((e) => `${e.name}:${e.kind}`), ["a.ts:file", "deep:dir"])
      const traversal = yield* Effect.result(view.read("../etc/passwd"))
      assert.isTrue(Result.isFailure(traversal) && traversal.failure._tag === "EngineError")
    }).pipe(Effect.scoped, Effect.provide(layers(ws)))
  })

  it.live("unsigned, wrong-secret, stale and replayed requests are 401 with their code", () => {
    const ws = workspace()
    return Effect.gen(function*() {
      const { baseline, running } = yield* served()
      const target = `/v1/objects/${hex(baseline.tree.root)}`
      const url = `${running.url}${target}`
      const unsigned = yield* raw("GET", url)
      assert.deepStrictEqual([unsigned.status, codeIn(unsigned.text)], [401, "auth_missing"])
      const wrong = Result.getOrThrow(secretOf("not the run's secret at all", "test"))
      const other = yield* Effect.result(ObjectClient.make({ url: running.url, secret: wrong }).get(baseline.tree.root))
      assert.isTrue(Result.isFailure(other) && other.failure.code === "object_refused" && other.failure.serverCode === "auth_bad_signature")
      const stale = yield* raw("GET", url, sign(running.secret, { method: "GET", path: target, time: Date.now() - 10 * 60_000, body: new Uint8Array(0) }))
      assert.deepStrictEqual([stale.status, codeIn(stale.text)], [401, "auth_stale"])
      const headers = sign(running.secret, { method: "GET", path: target, time: Date.now(), body: new Uint8Array(0) })
      const first = yield* raw("GET", url, headers)
      assert.strictEqual(first.status, 200)
      assert.strictEqual(first.text, encodeBody(baseline.tree.nodes.get(baseline.tree.root)!))
      const replayed = yield* raw("GET", url, headers)
      assert.deepStrictEqual([replayed.status, codeIn(replayed.text)], [401, "auth_replayed"])
      // The signature covers the path: the same headers on another object are wrong.
      const moved = yield* raw("GET", `${running.url}/v1/objects/${"0".repeat(64)}`, sign(running.secret, { method: "GET", path: target, time: Date.now(), body: new Uint8Array(0) }))
      assert.deepStrictEqual([moved.status, codeIn(moved.text)], [401, "auth_bad_signature"])
    }).pipe(Effect.scoped, Effect.provide(layers(ws)))
  })

  it.live("PUT stores only bytes that hash to their name; oversized bodies are refused unread; HEAD says whether it is there", () => {
    const ws = workspace()
    return Effect.gen(function*() {
      const { running, client, objects } = yield* served({ maxBodyBytes: 1024 })
      const bytes = utf8("a postimage\n")
      const hash = sha256(bytes)
      const liar = sha256("something else")
      const mismatch = yield* Effect.result(client.put(liar, bytes))
      assert.isTrue(Result.isFailure(mismatch) && mismatch.failure.status === 422 && mismatch.failure.serverCode === "object_hash_mismatch")
      assert.isFalse(yield* objects.has(liar))
      const big = new Uint8Array(2048).fill(7)
      const tooLarge = yield* Effect.result(client.put(sha256(big), big))
      assert.isTrue(Result.isFailure(tooLarge) && tooLarge.failure.status === 413 && tooLarge.failure.serverCode === "body_too_large")
      assert.isFalse(yield* objects.has(sha256(big)))
      const head = (h: Sha256Hash) => raw("HEAD", `${running.url}/v1/objects/${hex(h)}`, sign(running.secret, { method: "HEAD", path: `/v1/objects/${hex(h)}`, time: Date.now(), body: new Uint8Array(0) }))
      assert.strictEqual((yield* head(hash)).status, 404)
      // The PUT method itself, as HTTP clients other than ours send it.
      const put = yield* raw("PUT", `${running.url}/v1/objects/${hex(hash)}`, sign(running.secret, { method: "PUT", path: `/v1/objects/${hex(hash)}`, time: Date.now(), body: bytes }), bytes)
      assert.strictEqual(put.status, 204)
      assert.strictEqual((yield* head(hash)).status, 200)
      assert.strictEqual(text(yield* client.get(hash)), "a postimage\n")
      assert.deepStrictEqual(yield* client.missing([hash, liar]), [liar])
      const badName = yield* raw("GET", `${running.url}/v1/objects/..%2F..`, sign(running.secret, { method: "GET", path: "/v1/objects/..%2F..", time: Date.now(), body: new Uint8Array(0) }))
      assert.deepStrictEqual([badName.status, codeIn(badName.text)], [400, "hash_malformed"])
    }).pipe(Effect.scoped, Effect.provide(layers(ws)))
  })

  it.live("batches: several objects per request, each verified; a batch naming a wrong hash or unsigned is refused", () => {
    const ws = workspace()
    return Effect.gen(function*() {
      const { baseline, running, client, objects } = yield* served()
      const readme = (yield* ObjectClient.baselineView(client, baseline.tree.root).entry("README.md"))!
      const a = (yield* ObjectClient.baselineView(client, baseline.tree.root).entry("src/a.ts"))!
      const before = client.stats().requests
      const got = yield* client.getMany([readme, a].map((e) => ({ hash: e.hash, size: e.size })))
      assert.deepStrictEqual([text(got.get(readme.hash)), text(got.get(a.hash))], ["read me\n", "export const a = 1\n"])
      assert.strictEqual(client.stats().requests - before, 1)
      assert.strictEqual(failureCode(yield* Effect.result(client.getMany([{ hash: sha256("absent"), size: 1 }]))), "object_missing")
      const [one, two] = [utf8("one\n"), utf8("two\n")]
      yield* client.putMany([[sha256(one), one], [sha256(two), two]])
      assert.isTrue((yield* objects.has(sha256(one))) && (yield* objects.has(sha256(two))))
      const liar = utf8("three\n")
      const refused = yield* Effect.result(client.putMany([[sha256("not three"), liar]]))
      assert.isTrue(Result.isFailure(refused) && refused.failure.status === 422 && refused.failure.serverCode === "object_hash_mismatch")
      assert.isFalse(yield* objects.has(sha256("not three")))
      const body = utf8(JSON.stringify({ objects: { "../../etc/passwd": encodeBody(liar) } }))
      const badName = yield* raw("POST", `${running.url}/v1/objects/put`, sign(running.secret, { method: "POST", path: "/v1/objects/put", time: Date.now(), body }), body)
      assert.deepStrictEqual([badName.status, codeIn(badName.text)], [400, "request_malformed"])
      const unsigned = yield* raw("POST", `${running.url}/v1/objects/get`, {}, utf8(JSON.stringify({ hashes: [readme.hash] })))
      assert.deepStrictEqual([unsigned.status, codeIn(unsigned.text)], [401, "auth_missing"])
    }).pipe(Effect.scoped, Effect.provide(layers(ws)))
  })

  it.live("a parent answering with other bytes, or a node naming '..', is caught before anything uses it", () =>
    Effect.gen(function*() {
      const real = utf8("the real content\n")
      const evilNode = encodeNode({ v: 1, entries: [{ name: "..", kind: "file", hash: sha256(real), size: real.length }] })
      const evilRoot = sha256(evilNode)
      const lying = Objects.of({
        get: (h) => Effect.succeed(h === sha256(real) ? utf8("tampered content\n") : h === evilRoot ? evilNode : undefined),
        has: () => Effect.succeed(true),
        put: () => Effect.void,
        missing: () => Effect.succeed([])
      })
      const running = yield* servedOver(lying)
      const client = ObjectClient.make({ url: running.url, secret: running.secret })
      assert.strictEqual(failureCode(yield* Effect.result(client.getMany([{ hash: sha256(real), size: real.length }]))), "object_hash_mismatch")
      assert.strictEqual(failureCode(yield* Effect.result(client.get(sha256(real)))), "object_hash_mismatch")
      // Asked again: refused again (never cached), and never returned.
      assert.strictEqual(failureCode(yield* Effect.result(client.get(sha256(real)))), "object_hash_mismatch")
      assert.strictEqual(failureCode(yield* Effect.result(ObjectClient.baselineView(client, evilRoot).list(""))), "node_name_refused")
      assert.strictEqual(failureCode(yield* Effect.result(client.get(sha256("absent")))), "object_missing")
    }).pipe(Effect.scoped))

  it.live("an address other than loopback needs a secret", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.result(servedOver(Objects.of({ get: () => Effect.succeed(undefined), has: () => Effect.succeed(false), put: () => Effect.void, missing: (h) => Effect.succeed(h) }), { host: "0.0.0.0" }))
      assert.strictEqual(failureCode(refused), "remote_needs_secret")
    }).pipe(Effect.scoped))
})
