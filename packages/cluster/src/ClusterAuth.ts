/**
 * How runner traffic is authenticated: every request carries an HMAC-SHA256, under a secret
 * the parent and its runners share, of its method, path, a timestamp, a random nonce and the
 * sha256 of its body. The server refuses a request without one, with a wrong one, outside the
 * clock window, or whose nonce it has already seen in that window (a replay); the compare is
 * constant-time. The secret comes from a file only its owner can read, or from
 * `FORKJOIN_CLUSTER_SECRET`.
 *
 * Signing and checking are pure but for the verifier's memory of nonces; loading the secret is
 * the effectful part.
 *
 * @since 0.1.0
 */
import { sha256 } from "@forkjoin/patch"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import * as fs from "node:fs"

/**
 * The environment variable a secret may come from.
 *
 * @category models
 * @since 0.1.0
 */
export const SECRET_ENV = "FORKJOIN_CLUSTER_SECRET"

/** The shortest secret accepted: 16 bytes, so it cannot be guessed. */
const MIN_SECRET_BYTES = 16

/**
 * The shared secret (never printed).
 *
 * @category models
 * @since 0.1.0
 */
export type ClusterSecret = Redacted.Redacted<Uint8Array>

/**
 * The headers a signed request carries.
 *
 * @category models
 * @since 0.1.0
 */
export const HEADERS = {
  time: "x-forkjoin-time",
  nonce: "x-forkjoin-nonce",
  signature: "x-forkjoin-signature"
} as const

/**
 * The secret could not be loaded: `secret_missing` (neither a file nor the variable),
 * `secret_unreadable`, `secret_exposed` (the file is readable or writable by others) or
 * `secret_too_short`.
 *
 * @category errors
 * @since 0.1.0
 */
export class SecretError extends Schema.TaggedError<SecretError>()("SecretError", {
  code: Schema.Literals(["secret_missing", "secret_unreadable", "secret_exposed", "secret_too_short"]),
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/**
 * Why a request was refused (answered 401): `auth_missing` (no signature headers),
 * `auth_malformed`, `auth_bad_signature`, `auth_stale` (its time is outside the window) or
 * `auth_replayed` (its nonce was already used).
 *
 * @category models
 * @since 0.1.0
 */
export const AuthRefusalCode = Schema.Literals(["auth_missing", "auth_malformed", "auth_bad_signature", "auth_stale", "auth_replayed"])

/**
 * @category models
 * @since 0.1.0
 */
export type AuthRefusalCode = typeof AuthRefusalCode.Type

/**
 * A refusal's code and what to do about it.
 *
 * @category models
 * @since 0.1.0
 */
export const AuthRefusal = Schema.Struct({ code: AuthRefusalCode, message: Schema.String })

/**
 * @category models
 * @since 0.1.0
 */
export type AuthRefusal = typeof AuthRefusal.Type

/**
 * A secret from bytes (the file's content or the variable's value, surrounding whitespace
 * dropped), refused when shorter than 16 bytes.
 *
 * @category constructors
 * @since 0.1.0
 */
export const secretOf = (raw: string, from: string): Result.Result<ClusterSecret, SecretError> => {
  const bytes = new TextEncoder().encode(raw.trim())
  return bytes.length < MIN_SECRET_BYTES
    ? Result.fail(new SecretError({ code: "secret_too_short", message: `the cluster secret in ${from} has ${bytes.length} bytes; give at least ${MIN_SECRET_BYTES} (for example 32 random bytes in hex)` }))
    : Result.succeed(Redacted.make(bytes))
}

/**
 * A fresh random secret (a parent's own, for runners it starts on this machine).
 *
 * @category constructors
 * @since 0.1.0
 */
export const randomSecret = (): ClusterSecret => Redacted.make(new Uint8Array(randomBytes(32)))

/**
 * Loads the secret from `secretFile` (a regular file only its owner may read or write) or else
 * from `env[FORKJOIN_CLUSTER_SECRET]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const loadSecret = (
  secretFile: string | undefined,
  env: Readonly<Record<string, string | undefined>>
): Effect.Effect<ClusterSecret, SecretError> =>
  Effect.gen(function*() {
    if (secretFile === undefined) {
      const value = env[SECRET_ENV]
      if (value === undefined || value === "") {
        return yield* new SecretError({ code: "secret_missing", message: `no cluster secret: pass --secret-file FILE or set ${SECRET_ENV}` })
      }
      return yield* Effect.fromResult(secretOf(value, SECRET_ENV))
    }
    const text = yield* Effect.try({
      try: () => {
        const fd = fs.openSync(secretFile, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW)
        try {
          const stat = fs.fstatSync(fd)
          if (!stat.isFile()) return { problem: "it is not a regular file" } as const
          if ((stat.mode & 0o077) !== 0) return { exposed: (stat.mode & 0o777).toString(8) } as const
          return { text: fs.readFileSync(fd, "utf8") } as const
        } finally {
          fs.closeSync(fd)
        }
      },
      catch: (cause) => new SecretError({ code: "secret_unreadable", message: `the secret file ${secretFile} cannot be read (${String(cause)}); give a regular file you own`, cause })
    })
    if ("problem" in text) {
      return yield* new SecretError({ code: "secret_unreadable", message: `the secret file ${secretFile} was not read: ${text.problem}` })
    }
    if ("exposed" in text) {
      return yield* new SecretError({
        code: "secret_exposed",
        message: `the secret file ${secretFile} has mode ${text.exposed}, so others may read it; run chmod 600 ${secretFile} and make a new secret`
      })
    }
    return yield* Effect.fromResult(secretOf(text.text, secretFile))
  })

/**
 * The secret when one is given (`secretFile`, else `env[FORKJOIN_CLUSTER_SECRET]`), none when
 * neither is: members on one machine may go without one. A given secret must load.
 *
 * @category constructors
 * @since 0.1.0
 */
export const optionalSecret = (
  secretFile: string | undefined,
  env: Readonly<Record<string, string | undefined>>
): Effect.Effect<Option.Option<ClusterSecret>, SecretError> =>
  secretFile === undefined && (env[SECRET_ENV] ?? "") === ""
    ? Effect.succeed(Option.none())
    : Effect.map(loadSecret(secretFile, env), Option.some)

/**
 * What a signature covers: method, path (with query), timestamp (ms), nonce and body.
 *
 * @category models
 * @since 0.1.0
 */
export interface Signed {
  readonly method: string
  readonly path: string
  readonly time: number
  readonly nonce: string
  readonly body: Uint8Array
}

const mac = (secret: ClusterSecret, s: Signed): Buffer =>
  createHmac("sha256", Redacted.value(secret))
    .update(`forkjoin-cluster-v1\n${s.method.toUpperCase()}\n${s.path}\n${s.time}\n${s.nonce}\n${sha256(s.body)}`)
    .digest()

/**
 * The headers that sign a request (`nonce` defaults to 16 random bytes in hex).
 *
 * @category constructors
 * @since 0.1.0
 */
export const sign = (
  secret: ClusterSecret,
  request: Omit<Signed, "nonce"> & { readonly nonce?: string }
): Record<string, string> => {
  const nonce = request.nonce ?? randomBytes(16).toString("hex")
  return {
    [HEADERS.time]: String(request.time),
    [HEADERS.nonce]: nonce,
    [HEADERS.signature]: mac(secret, { ...request, nonce }).toString("hex")
  }
}

/**
 * Checks requests: `verify` succeeds for a correctly signed request within `windowMs` of `now`
 * whose nonce was not seen before, and remembers the nonce for the window.
 *
 * @category models
 * @since 0.1.0
 */
export interface Verifier {
  readonly verify: (
    request: { readonly method: string; readonly path: string; readonly body: Uint8Array },
    headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
    now: number
  ) => Result.Result<void, AuthRefusal>
}

/**
 * The default clock window: a request signed more than a minute away from the server's clock
 * is stale.
 *
 * @category models
 * @since 0.1.0
 */
export const DEFAULT_WINDOW_MS = 60_000

const one = (v: string | ReadonlyArray<string> | undefined): string | undefined => (typeof v === "string" ? v : undefined)

/**
 * A verifier for `secret` with a clock window of `windowMs` either side.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeVerifier = (secret: ClusterSecret, windowMs: number = DEFAULT_WINDOW_MS): Verifier => {
  // Nonce → when it can be forgotten (once its request would be stale anyway).
  const seen = new Map<string, number>()
  let pruned = 0
  const refuse = (code: AuthRefusalCode, message: string) => Result.fail({ code, message })
  return {
    verify: (request, headers, now) => {
      const time = one(headers[HEADERS.time])
      const nonce = one(headers[HEADERS.nonce])
      const signature = one(headers[HEADERS.signature])
      if (time === undefined || nonce === undefined || signature === undefined) {
        return refuse("auth_missing", "the request is not signed; runners must use the run's cluster secret")
      }
      if (!/^\d{1,16}$/.test(time) || !/^[0-9a-f]{16,128}$/.test(nonce) || !/^[0-9a-f]{64}$/.test(signature)) {
        return refuse("auth_malformed", "the request's signature headers are malformed")
      }
      const expected = mac(secret, { method: request.method, path: request.path, time: Number(time), nonce, body: request.body })
      if (!timingSafeEqual(expected, Buffer.from(signature, "hex"))) {
        return refuse("auth_bad_signature", "the request's signature is wrong; the runner and the parent must use the same cluster secret")
      }
      if (Math.abs(now - Number(time)) > windowMs) {
        return refuse("auth_stale", `the request was signed ${Math.round((now - Number(time)) / 1000)} s away from this machine's clock; synchronise the machines' clocks`)
      }
      if (now - pruned > 1_000) {
        pruned = now
        for (const [n, until] of seen) if (until < now) seen.delete(n)
      }
      if (seen.has(nonce)) return refuse("auth_replayed", "the request was already received once (a replay); it is refused")
      seen.set(nonce, Number(time) + windowMs)
      return Result.void
    }
  }
}
