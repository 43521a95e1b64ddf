/**
 * Request signatures and the shared secret: a correctly signed request passes once; unsigned,
 * malformed, wrong-secret, tampered (method, path, body), stale and replayed requests are each
 * refused with their code. A secret file others can read, a link, a short secret or none at
 * all is refused before anything listens.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import { loadSecret, makeVerifier, secretOf, SECRET_ENV, sign } from "../src/ClusterAuth.ts"

const secret = Result.getOrThrow(secretOf("a shared secret of enough bytes", "test"))
const other = Result.getOrThrow(secretOf("another secret of enough bytes", "test"))
const NOW = 1_800_000_000_000
const body = new TextEncoder().encode("bytes")
const request = { method: "PUT", path: "/v1/objects/abc", body }

const codeOf = (r: Result.Result<void, { readonly code: string }>) => (Result.isSuccess(r) ? "ok" : r.failure.code)

describe("verify", () => {
  it("a signed request passes once; the same request again is a replay", () => {
    const v = makeVerifier(secret)
    const headers = sign(secret, { ...request, time: NOW })
    assert.strictEqual(codeOf(v.verify(request, headers, NOW + 5_000)), "ok")
    assert.strictEqual(codeOf(v.verify(request, headers, NOW + 6_000)), "auth_replayed")
  })

  it("unsigned, malformed, wrong secret and tampered requests are refused", () => {
    const v = makeVerifier(secret)
    assert.strictEqual(codeOf(v.verify(request, {}, NOW)), "auth_missing")
    const good = sign(secret, { ...request, time: NOW })
    assert.strictEqual(codeOf(v.verify(request, { ...good, "x-forkjoin-signature": "zz" }, NOW)), "auth_malformed")
    assert.strictEqual(codeOf(v.verify(request, { ...good, "x-forkjoin-time": "-1" }, NOW)), "auth_malformed")
    assert.strictEqual(codeOf(v.verify(request, sign(other, { ...request, time: NOW }), NOW)), "auth_bad_signature")
    assert.strictEqual(codeOf(v.verify({ ...request, method: "GET" }, sign(secret, { ...request, time: NOW }), NOW)), "auth_bad_signature")
    assert.strictEqual(codeOf(v.verify({ ...request, path: "/v1/objects/abd" }, sign(secret, { ...request, time: NOW }), NOW)), "auth_bad_signature")
    assert.strictEqual(codeOf(v.verify({ ...request, body: new TextEncoder().encode("bytez") }, sign(secret, { ...request, time: NOW }), NOW)), "auth_bad_signature")
    // A signature moved to another time is wrong, not merely stale.
    assert.strictEqual(codeOf(v.verify(request, { ...good, "x-forkjoin-time": String(NOW + 1) }, NOW)), "auth_bad_signature")
  })

  it("a request signed outside the window either side is stale", () => {
    const v = makeVerifier(secret, 60_000)
    assert.strictEqual(codeOf(v.verify(request, sign(secret, { ...request, time: NOW - 60_001 }), NOW)), "auth_stale")
    assert.strictEqual(codeOf(v.verify(request, sign(secret, { ...request, time: NOW + 60_001 }), NOW)), "auth_stale")
    assert.strictEqual(codeOf(v.verify(request, sign(secret, { ...request, time: NOW - 59_000 }), NOW)), "ok")
  })

  it("a refused replay attempt does not burn the nonce for a valid request", () => {
    const v = makeVerifier(secret)
    const headers = sign(secret, { ...request, time: NOW, nonce: "00112233445566778899aabbccddeeff" })
    assert.strictEqual(codeOf(v.verify({ ...request, path: "/other" }, headers, NOW)), "auth_bad_signature")
    assert.strictEqual(codeOf(v.verify(request, headers, NOW)), "ok")
  })
})

const dirs: Array<string> = []
afterAll(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true })
})
const secretFile = (text: string, mode: number) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fj-secret-"))
  dirs.push(dir)
  const file = path.join(dir, "secret")
  fs.writeFileSync(file, text)
  fs.chmodSync(file, mode)
  return file
}
const loadCode = (file: string | undefined, env: Record<string, string> = {}) =>
  Effect.runSync(Effect.exit(loadSecret(file, env))).pipe((exit) =>
    Exit.isSuccess(exit) ? `ok:${new TextDecoder().decode(Redacted.value(exit.value))}` : exit.cause.reasons[0]?._tag === "Fail" ? exit.cause.reasons[0].error.code : "defect"
  )

describe("loadSecret", () => {
  it("reads an owner-only file, trimmed; refuses one others can read or write", () => {
    assert.strictEqual(loadCode(secretFile("0123456789abcdef0123\n", 0o600)), "ok:0123456789abcdef0123")
    assert.strictEqual(loadCode(secretFile("0123456789abcdef0123\n", 0o644)), "secret_exposed")
    assert.strictEqual(loadCode(secretFile("0123456789abcdef0123\n", 0o620)), "secret_exposed")
  })

  it("refuses a link, a missing file, a short secret and no secret at all", () => {
    const target = secretFile("0123456789abcdef0123", 0o600)
    const link = path.join(path.dirname(target), "link")
    fs.symlinkSync(target, link)
    assert.strictEqual(loadCode(link), "secret_unreadable")
    assert.strictEqual(loadCode(path.join(path.dirname(target), "absent")), "secret_unreadable")
    assert.strictEqual(loadCode(secretFile("short", 0o600)), "secret_too_short")
    assert.strictEqual(loadCode(undefined), "secret_missing")
  })

  it("falls back to the environment variable", () => {
    assert.strictEqual(loadCode(undefined, { [SECRET_ENV]: "from the environment, long enough" }), "ok:from the environment, long enough")
    assert.strictEqual(loadCode(undefined, { [SECRET_ENV]: "tiny" }), "secret_too_short")
  })
})
