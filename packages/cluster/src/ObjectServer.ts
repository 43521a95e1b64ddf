/**
 * The parent's object server: runners fetch the baseline's nodes and blobs from it and upload
 * their changesets. Routes: `GET /v1/objects/{hex}` (the object, base64), `HEAD` (is it
 * there), `PUT /v1/objects/{hex}` (store raw bytes under their hash; `POST` is the same, for
 * clients that only send GET and POST) and `POST /v1/objects/missing` (`{"hashes":[...]}` →
 * `{"missing":[...]}`), `POST /v1/objects/get` (`{"hashes":[...]}` → `{"objects":{hash: base64}}`,
 * absent ones left out) and `POST /v1/objects/put` (`{"objects":{hash: base64}}`, stored in
 * order, each only when its bytes hash to its name), and `POST /v1/attempts/claim` (`{"attempt","runner"}` → `{"granted"}`,
 * when the server was given `claim`: a runner asks before it runs a child's attempt, so the
 * parent sees every delivery of it). Every request must be signed with the cluster secret (`ClusterAuth`);
 * bodies over the cap are refused before they are read.
 *
 * It binds loopback unless given another address, and then only with a secret; with no
 * secret on loopback it mints one (`Running.secret`) for the runners it starts, so the port
 * never accepts anyone who does not hold it.
 *
 * @since 0.1.0
 */
import { isLoopbackHost } from "@forkjoin/http/Loopback"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { type Sha256Hash, Sha256Hash as Sha256HashSchema } from "@forkjoin/schema"
import * as ByteSize from "effect/ByteSize"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as References from "effect/References"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import { type HttpServerRequest, MaxBodySize } from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { createServer } from "node:http"
import { type ClusterSecret, makeVerifier, randomSecret } from "./ClusterAuth.ts"
import {
  CLAIM_PATH,
  ClaimRequest,
  decodeBody,
  DEFAULT_MAX_OBJECT_BYTES,
  encodeBody,
  GET_MANY_PATH,
  hashOfParam,
  MAX_BATCH_OBJECTS,
  MAX_MISSING_HASHES,
  MISSING_PATH,
  ObjectBatch,
  OBJECTS_PATH,
  PUT_MANY_PATH
} from "./internal/objectWire.ts"
import { Objects } from "./Objects.ts"

/**
 * How to serve: `host` (default `127.0.0.1`; another address needs `secret`), `port` (`0`
 * picks a free one), the `secret` runners sign with, the largest body accepted and the clock
 * window of signatures.
 *
 * @category models
 * @since 0.1.0
 */
export interface ServeOptions {
  readonly host?: string | undefined
  readonly port?: number | undefined
  readonly secret?: ClusterSecret | undefined
  readonly maxBodyBytes?: number | undefined
  readonly windowMs?: number | undefined
  /** Decides a runner's claim of a child attempt (`attempt` is its entity id); without it the route answers 404. */
  readonly claim?: ((attempt: string, runner: string) => Effect.Effect<boolean>) | undefined
}

/**
 * A listening server: its URL and the secret its clients must sign with.
 *
 * @category models
 * @since 0.1.0
 */
export interface Running {
  readonly url: string
  readonly secret: ClusterSecret
}

/**
 * The server did not start: `remote_needs_secret` (a non-loopback address without a secret)
 * or `bind_failed`.
 *
 * @category errors
 * @since 0.1.0
 */
export class ObjectServerError extends Schema.TaggedError<ObjectServerError>()("ObjectServerError", {
  code: Schema.Literals(["remote_needs_secret", "bind_failed"]),
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}


const problem = (status: number, code: string, message: string) => HttpServerResponse.jsonUnsafe({ code, message }, { status })

const MissingRequest = Schema.Struct({ hashes: Schema.Array(Sha256HashSchema).check(Schema.isMaxLength(MAX_MISSING_HASHES)) })
const decodeMissing = Schema.decodeUnknownResult(Schema.fromJsonString(MissingRequest), { onExcessProperty: "error" })
const decodeClaim = Schema.decodeUnknownResult(Schema.fromJsonString(ClaimRequest), { onExcessProperty: "error" })
const GetManyRequest = Schema.Struct({ hashes: Schema.Array(Sha256HashSchema).check(Schema.isMaxLength(MAX_BATCH_OBJECTS)) })
const decodeGetMany = Schema.decodeUnknownResult(Schema.fromJsonString(GetManyRequest), { onExcessProperty: "error" })
const decodePutMany = Schema.decodeUnknownResult(Schema.fromJsonString(ObjectBatch), { onExcessProperty: "error" })

/** The routes, each checking size and signature before anything else. */
const routes = (secret: ClusterSecret, windowMs: number | undefined, maxBody: number, claim: ServeOptions["claim"]) => {
  const verifier = makeVerifier(secret, windowMs)
  /** The body (within the cap) of a correctly signed request, else the refusal to answer with. */
  const admit = (request: HttpServerRequest) =>
    Effect.gen(function*() {
      const declared = Number(request.headers["content-length"] ?? "0")
      if (!(declared <= maxBody)) {
        return Result.fail(problem(413, "body_too_large", `the request body is over the ${maxBody}-byte limit; nothing was stored`))
      }
      const read = yield* Effect.result(request.arrayBuffer)
      if (Result.isFailure(read)) {
        return Result.fail(problem(413, "body_too_large", `the request body could not be read within the ${maxBody}-byte limit; nothing was stored`))
      }
      const body = new Uint8Array(read.success)
      const checked = verifier.verify({ method: request.method, path: request.url, body }, request.headers, yield* Clock.currentTimeMillis)
      return Result.isFailure(checked) ? Result.fail(problem(401, checked.failure.code, checked.failure.message)) : Result.succeed(body)
    })
  const unavailable = (e: { readonly message: string }) => Effect.succeed(problem(503, "object_store_failed", e.message))
  const badHash = problem(400, "hash_malformed", "an object is named by its sha256 as 64 lowercase hex digits")
  /** The decoded JSON body of a correctly signed request, else the refusal (`usage` says what to send). */
  const admitJson = <A>(request: HttpServerRequest, decode: (text: string) => Result.Result<A, unknown>, usage: string) =>
    Effect.map(admit(request), (admitted) =>
      Result.flatMap(admitted, (body) => Result.mapError(decode(new TextDecoder().decode(body)), () => problem(400, "request_malformed", usage))))
  /** Stores one object; the refusal to answer with when it is not stored. */
  const store = (hash: Sha256Hash, bytes: Uint8Array) =>
    Effect.gen(function*() {
      const stored = yield* Effect.result((yield* Objects).put(hash, bytes))
      return Result.isFailure(stored)
        ? problem(stored.failure.code === "object_hash_mismatch" ? 422 : 503, stored.failure.code, stored.failure.message)
        : undefined
    })

  const get = HttpRouter.add("GET", `${OBJECTS_PATH}/:hash`, (request) =>
    Effect.gen(function*() {
      const admitted = yield* admit(request)
      if (Result.isFailure(admitted)) return admitted.failure
      const hash = hashOfParam((yield* HttpRouter.params)["hash"])
      if (hash === undefined) return badHash
      const objects = yield* Objects
      if (request.method === "HEAD") {
        return (yield* objects.has(hash)) ? HttpServerResponse.empty({ status: 200 }) : HttpServerResponse.empty({ status: 404 })
      }
      const bytes = yield* objects.get(hash)
      if (bytes === undefined) return problem(404, "object_missing", `this parent has no object ${hash}`)
      return HttpServerResponse.text(encodeBody(bytes), { contentType: "text/plain; charset=us-ascii", headers: { "x-forkjoin-encoding": "base64" } })
    }).pipe(Effect.catchTag("BlobStoreError", unavailable)))

  const put = (method: "PUT" | "POST") =>
    HttpRouter.add(method, `${OBJECTS_PATH}/:hash`, (request) =>
      Effect.gen(function*() {
        const admitted = yield* admit(request)
        if (Result.isFailure(admitted)) return admitted.failure
        const hash = hashOfParam((yield* HttpRouter.params)["hash"])
        if (hash === undefined) return badHash
        return (yield* store(hash, admitted.success)) ?? HttpServerResponse.empty({ status: 204 })
      }))

  const missing = HttpRouter.add("POST", MISSING_PATH, (request) =>
    Effect.gen(function*() {
      const asked = yield* admitJson(request, decodeMissing, `send {"hashes": [...]} with at most ${MAX_MISSING_HASHES} sha256 hashes`)
      if (Result.isFailure(asked)) return asked.failure
      const absent = yield* (yield* Objects).missing(asked.success.hashes)
      return HttpServerResponse.jsonUnsafe({ missing: absent })
    }).pipe(Effect.catchTag("BlobStoreError", unavailable)))

  const getMany = HttpRouter.add("POST", GET_MANY_PATH, (request) =>
    Effect.gen(function*() {
      const asked = yield* admitJson(request, decodeGetMany, `send {"hashes": [...]} with at most ${MAX_BATCH_OBJECTS} sha256 hashes`)
      if (Result.isFailure(asked)) return asked.failure
      const objects = yield* Objects
      const found: Record<string, string> = {}
      for (const hash of new Set(asked.success.hashes)) {
        const bytes = yield* objects.get(hash)
        if (bytes !== undefined) found[hash] = encodeBody(bytes)
      }
      return HttpServerResponse.jsonUnsafe({ objects: found })
    }).pipe(Effect.catchTag("BlobStoreError", unavailable)))

  const putMany = HttpRouter.add("POST", PUT_MANY_PATH, (request) =>
    Effect.gen(function*() {
      const usage = `send {"objects": {hash: base64}} with at most ${MAX_BATCH_OBJECTS} objects`
      const sent = yield* admitJson(request, decodePutMany, usage)
      if (Result.isFailure(sent)) return sent.failure
      const entries = Object.entries(sent.success.objects)
      if (entries.length > MAX_BATCH_OBJECTS) return problem(400, "request_malformed", usage)
      for (const [name, text] of entries) {
        const hash = hashOfParam(name.startsWith("sha256:") ? name.slice("sha256:".length) : undefined)
        const bytes = decodeBody(text)
        if (hash === undefined || bytes === undefined) return problem(400, "request_malformed", `${JSON.stringify(name.slice(0, 80))} is not a sha256 hash with a base64 body`)
        const refused = yield* store(hash, bytes)
        if (refused !== undefined) return refused
      }
      return HttpServerResponse.empty({ status: 204 })
    }))

  const claims = HttpRouter.add("POST", CLAIM_PATH, (request) =>
    Effect.gen(function*() {
      const admitted = yield* admit(request)
      if (Result.isFailure(admitted)) return admitted.failure
      if (claim === undefined) return problem(404, "claims_unsupported", "this server takes no attempt claims")
      const asked = decodeClaim(new TextDecoder().decode(admitted.success))
      if (Result.isFailure(asked)) return problem(400, "request_malformed", "send {\"attempt\": ID, \"runner\": \"HOST:PORT\"}")
      return HttpServerResponse.jsonUnsafe({ granted: yield* claim(asked.success.attempt, asked.success.runner) })
    }))

  return Layer.mergeAll(get, put("PUT"), put("POST"), missing, getMany, putMany, claims)
}

/**
 * Starts the object server over the `Objects` service in the current scope; it stops when the
 * scope closes.
 *
 * @category constructors
 * @since 0.1.0
 */
export const serve = (options: ServeOptions = {}): Effect.Effect<Running, ObjectServerError, Scope.Scope | Objects> =>
  Effect.gen(function*() {
    const host = options.host ?? "127.0.0.1"
    if (!isLoopbackHost(host) && options.secret === undefined) {
      return yield* new ObjectServerError({
        code: "remote_needs_secret",
        message: `refusing to serve objects on ${host} without a cluster secret; pass --secret-file FILE (or set FORKJOIN_CLUSTER_SECRET) or bind 127.0.0.1`
      })
    }
    const secret = options.secret ?? randomSecret()
    const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_OBJECT_BYTES
    const objects = yield* Objects
    const server = HttpRouter.serve(routes(secret, options.windowMs, maxBody, options.claim), { disableLogger: true, disableListenLog: true }).pipe(
      Layer.provide(Layer.succeed(Objects, objects)),
      Layer.provide(Layer.succeed(References.TracerEnabled, false)),
      // A chunked body has no Content-Length to refuse up front: its reading stops at the cap.
      Layer.provide(Layer.succeed(MaxBodySize, ByteSize.bytes(maxBody))),
      Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: options.port ?? 0, host }))
    )
    const built = yield* Layer.build(server).pipe(
      Effect.catchTag("ServeError", (cause) =>
        Effect.fail(new ObjectServerError({ code: "bind_failed", message: `cannot listen on ${host}:${options.port ?? 0}: ${cause.message}`, cause })))
    )
    const address = Context.get(built, HttpServer.HttpServer).address
    const port = address._tag === "UnixPathAddress" ? 0 : address.port
    return { url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`, secret }
  })
