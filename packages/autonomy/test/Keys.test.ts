import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { execFileSync } from "node:child_process"
import { createPublicKey, generateKeyPairSync } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Keys from "../src/Keys.ts"
import { tempDir } from "./helpers.ts"

describe("Keys", () => {
  it.effect("keygen round trip: write a pair, read both back, same key id", () =>
    Effect.gen(function*() {
      const file = path.join(tempDir(), "keys", "ci.pem")
      const written = yield* Keys.writePair(file)
      assert.strictEqual(written.privateFile, file)
      assert.strictEqual(written.publicFile, `${file}.pub`)
      assert.strictEqual(fs.statSync(file).mode & 0o777, 0o600)
      const privateKey = yield* Keys.readPrivate(file)
      const publicKey = yield* Keys.readPublic(`${file}.pub`)
      assert.strictEqual(privateKey.asymmetricKeyType, "ed25519")
      assert.strictEqual(Keys.keyIdOf(publicKey), written.keyId)
      assert.strictEqual(Keys.keyIdOf(privateKey), written.keyId)
      assert.include(fs.readFileSync(file, "utf8"), "-----BEGIN PRIVATE KEY-----")
      assert.include(fs.readFileSync(`${file}.pub`, "utf8"), "-----BEGIN PUBLIC KEY-----")
    }))

  it("a key id is sha256 of the SPKI DER bytes, different per key", () => {
    const a = Keys.generate()
    const b = Keys.generate()
    assert.match(a.keyId, /^sha256:[0-9a-f]{64}$/)
    assert.notStrictEqual(a.keyId, b.keyId)
    assert.strictEqual(Keys.keyIdOf(createPublicKey(a.publicPem)), a.keyId)
  })

  it.effect("refuses to overwrite an existing key (either file), leaving it intact", () =>
    Effect.gen(function*() {
      const file = path.join(tempDir(), "k.pem")
      yield* Keys.writePair(file)
      const before = fs.readFileSync(file, "utf8")
      const e = yield* Effect.flip(Keys.writePair(file))
      assert.strictEqual(e.code, "key_exists")
      assert.include(e.message, "forkjoin never overwrites a key")
      assert.strictEqual(fs.readFileSync(file, "utf8"), before)

      const other = path.join(path.dirname(file), "other.pem")
      fs.writeFileSync(`${other}.pub`, "x")
      const e2 = yield* Effect.flip(Keys.writePair(other))
      assert.strictEqual(e2.code, "key_exists")
      assert.deepStrictEqual(e2.paths, [`${other}.pub`])
      assert.isFalse(fs.existsSync(other))
    }))

  it.effect("a missing key file is key_invalid naming it and saying what to do", () =>
    Effect.gen(function*() {
      const file = path.join(tempDir(), "nope.pem")
      const e = yield* Effect.flip(Keys.readPrivate(file))
      assert.strictEqual(e.code, "key_invalid")
      assert.deepStrictEqual(e.paths, [file])
      assert.include(e.message, `the private key ${file} does not exist`)
      assert.include(e.message, "forkjoin keygen --out KEYFILE")
      const e2 = yield* Effect.flip(Keys.readPublic(`${file}.pub`))
      assert.include(e2.message, `the public key ${file}.pub does not exist`)
    }))

  // The timeout is a safety net only: a blocking open of the writerless pipe would hang.
  it.effect("a named pipe without a writer, /dev/zero or a folder as a key is key_invalid at once, unread", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const fifo = path.join(dir, "ci.pem.pub")
      execFileSync("mkfifo", [fifo])
      const folder = path.join(dir, "folder.pem")
      fs.mkdirSync(folder)
      for (const [file, kind] of [[fifo, "a named pipe (FIFO)"], ["/dev/zero", "a character device"], [folder, "a folder"]] as const) {
        const e = yield* Effect.flip(Keys.readPublic(file))
        assert.strictEqual(e.code, "key_invalid")
        assert.deepStrictEqual(e.paths, [file])
        assert.include(e.message, `${file} is ${kind}, not a key file, so it was not read`)
      }
      const big = path.join(dir, "big.pem")
      fs.writeFileSync(big, "")
      fs.truncateSync(big, 1024 * 1024)
      assert.include((yield* Effect.flip(Keys.readPrivate(big))).message, "far larger than a key")
    }))

  it("a file that is not PEM is refused", () => {
    const r = Keys.parsePrivate("/k/junk.pem", "hello\n")
    assert.isTrue(Result.isFailure(r))
    if (Result.isFailure(r)) {
      assert.strictEqual(r.failure.code, "key_invalid")
      assert.include(r.failure.message, "/k/junk.pem is not a PEM key file")
    }
  })

  it("a public key where a private key is expected, and the reverse", () => {
    const pair = Keys.generate()
    const r1 = Keys.parsePrivate("/k/ci.pem.pub", pair.publicPem)
    assert.isTrue(Result.isFailure(r1) && r1.failure.message.includes("/k/ci.pem.pub is a public key where a private key is expected"))
    const r2 = Keys.parsePublic("/k/ci.pem", pair.privatePem)
    assert.isTrue(Result.isFailure(r2) && r2.failure.message.includes("/k/ci.pem is a private key where a public key is expected"))
  })

  it("a non-Ed25519 key is refused in both kinds", () => {
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 })
    const priv = rsa.privateKey.export({ type: "pkcs8", format: "pem" }).toString()
    const pub = rsa.publicKey.export({ type: "spki", format: "pem" }).toString()
    const r1 = Keys.parsePrivate("/k/rsa.pem", priv)
    assert.isTrue(Result.isFailure(r1) && r1.failure.message.includes("/k/rsa.pem is an rsa key; forkjoin signs evidence with Ed25519 keys only"))
    const r2 = Keys.parsePublic("/k/rsa.pub", pub)
    assert.isTrue(Result.isFailure(r2) && r2.failure.message.includes("/k/rsa.pub is an rsa key"))
  })

  it("a damaged PEM body and an encrypted key are refused", () => {
    const pair = Keys.generate()
    const damaged = pair.privatePem.replace(/\n[A-Za-z0-9+/=]{10}/, "\n!!!!!!!!!!")
    const r1 = Keys.parsePrivate("/k/bad.pem", damaged)
    assert.isTrue(Result.isFailure(r1) && r1.failure.message.includes("/k/bad.pem is not a readable private key"))
    const r2 = Keys.parsePrivate("/k/enc.pem", "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n")
    assert.isTrue(Result.isFailure(r2) && r2.failure.message.includes("/k/enc.pem is an encrypted private key"))
    const r3 = Keys.parsePublic("/k/cert.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    assert.isTrue(Result.isFailure(r3) && r3.failure.message.includes("holds a PEM \"CERTIFICATE\", not a key"))
  })
})
