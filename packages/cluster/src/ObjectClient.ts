/**
 * A runner's side of the object wire, over the one HTTP client (`@forkjoin/http`): signed
 * requests for objects by hash, each answer verified against the hash it was asked for before
 * anything uses it (a wrong byte is `object_hash_mismatch`, never returned), kept in a small
 * cache so each node or blob crosses once per runner; `missing` and `put` for uploads.
 *
 * `BaselineView` reads a baseline from its root hash, fetching only the directory nodes on the
 * way to the paths it is asked for, and the blobs of the files actually read.
 *
 * @since 0.1.0
 */
import { send } from "@forkjoin/http/HttpTransport"
import { normalizeRelativePath, sha256 } from "@forkjoin/patch"
import { Sha256Hash as Sha256HashSchema, type Sha256Hash } from "@forkjoin/schema"
import type { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { type ClusterSecret, sign } from "./ClusterAuth.ts"
import {
  BATCH_BYTES,
  CLAIM_PATH,
  ClaimAnswer,
  decodeBody,
  DEFAULT_MAX_OBJECT_BYTES,
  encodeBody,
  GET_MANY_PATH,
  MAX_BATCH_OBJECTS,
  MISSING_PATH,
  ObjectBatch,
  objectPath,
  PUT_MANY_PATH
} from "./internal/objectWire.ts"
import { decodeNode, type ManifestEntry, type ManifestError, type ManifestNode } from "./Manifest.ts"

/**
 * A request to the parent failed: `object_missing` (it has no such object),
 * `object_hash_mismatch` (the answer's bytes are not the object asked for; dropped),
 * `object_refused` (the parent answered with an error: `serverCode` says which, e.g.
 * `auth_bad_signature`), `object_unreachable` (no answer; `cause` says why) or
 * `object_malformed` (an answer that is not what the protocol says).
 *
 * @category errors
 * @since 0.1.0
 */
export class ObjectClientError extends Schema.TaggedError<ObjectClientError>()("ObjectClientError", {
  code: Schema.Literals(["object_missing", "object_hash_mismatch", "object_refused", "object_unreachable", "object_malformed"]),
  url: Schema.String,
  hash: Schema.optional(Schema.String),
  status: Schema.optional(Schema.Number),
  serverCode: Schema.optional(Schema.String),
  detail: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message(): string {
    return `The object request ${this.url} failed (${this.code}${this.serverCode === undefined ? "" : `: ${this.serverCode}`}): ${this.detail}.`
  }
}

/**
 * Where the parent's object server is, the secret to sign with, and limits.
 *
 * @category models
 * @since 0.1.0
 */
export interface ClientOptions {
  readonly url: string
  readonly secret: ClusterSecret
  readonly maxObjectBytes?: number | undefined
  readonly timeoutMs?: number | undefined
  /** Bytes of blobs the cache keeps (nodes are always kept); default 64 MiB. */
  readonly cacheBytes?: number | undefined
}

/**
 * What crossed the wire so far: requests made, answer body bytes received, request body
 * bytes sent.
 *
 * @category models
 * @since 0.1.0
 */
export interface WireStats {
  readonly requests: number
  readonly received: number
  readonly sent: number
}

/**
 * The client: `get` an object (verified, cached), `node` (a decoded directory node),
 * `missing`, `put`, and the traffic so far.
 *
 * @category models
 * @since 0.1.0
 */
export interface ObjectClient {
  readonly get: (hash: Sha256Hash) => Effect.Effect<Uint8Array, ObjectClientError>
  readonly node: (hash: Sha256Hash) => Effect.Effect<ManifestNode, ObjectClientError | ManifestError>
  readonly missing: (hashes: ReadonlyArray<Sha256Hash>) => Effect.Effect<ReadonlyArray<Sha256Hash>, ObjectClientError>
  readonly put: (hash: Sha256Hash, bytes: Uint8Array) => Effect.Effect<void, ObjectClientError>
  /**
   * Several objects in as few requests as their `sizes` allow (each verified, cached like
   * `get`); an object the server lacks fails with `object_missing`.
   */
  readonly getMany: (wanted: ReadonlyArray<{ readonly hash: Sha256Hash; readonly size: number }>) => Effect.Effect<ReadonlyMap<Sha256Hash, Uint8Array>, ObjectClientError>
  /** Stores several objects in as few requests as their sizes allow, in order. */
  readonly putMany: (objects: ReadonlyArray<readonly [Sha256Hash, Uint8Array]>) => Effect.Effect<void, ObjectClientError>
  /** Claims the child attempt `attempt` (its entity id) for `runner`: false when another delivery of it came first. */
  readonly claim: (attempt: string, runner: string) => Effect.Effect<boolean, ObjectClientError>
  readonly stats: () => WireStats
}

const MissingAnswer = Schema.Struct({ missing: Schema.Array(Sha256HashSchema) })
const decodeMissing = Schema.decodeUnknownResult(Schema.fromJsonString(MissingAnswer))
const decodeClaim = Schema.decodeUnknownResult(Schema.fromJsonString(ClaimAnswer))
const decodeBatch = Schema.decodeUnknownResult(Schema.fromJsonString(ObjectBatch))
const serverCodeOf = (text: string): string | undefined => {
  try {
    const v: unknown = JSON.parse(text)
    return typeof v === "object" && v !== null && "code" in v && typeof v.code === "string" ? v.code : undefined
  } catch {
    return undefined
  }
}

/**
 * A client of the object server at `options.url`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: ClientOptions): ObjectClient => {
  const base = options.url.replace(/\/+$/, "")
  const maxBytes = options.maxObjectBytes ?? DEFAULT_MAX_OBJECT_BYTES
  const cacheBudget = options.cacheBytes ?? 64 * 1024 * 1024
  const nodes = new Map<Sha256Hash, ManifestNode>()
  const blobs = new Map<Sha256Hash, Uint8Array>()
  let cached = 0
  let requests = 0
  let received = 0
  let sent = 0

  const request = (method: "GET" | "POST", path: string, body: Uint8Array, hash?: Sha256Hash) => {
    const url = `${base}${path}`
    const fail = (code: ObjectClientError["code"], detail: string, extra: Partial<Pick<ObjectClientError, "status" | "serverCode">> = {}) =>
      new ObjectClientError({ code, url, detail, ...(hash === undefined ? {} : { hash }), ...extra })
    return Effect.gen(function*() {
      requests += 1
      sent += body.length
      const headers = { ...sign(options.secret, { method, path, time: Date.now(), body }), "content-type": "application/octet-stream" }
      const answer = yield* send({
        url,
        method,
        headers,
        ...(method === "POST" ? { body } : {}),
        // Base64 is 4/3 of the bytes.
        maxResponseBytes: Math.ceil(maxBytes / 3) * 4 + 1024,
        ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs })
      }).pipe(Effect.mapError((cause) => new ObjectClientError({ code: "object_unreachable", url, detail: cause.message, cause, ...(hash === undefined ? {} : { hash }) })))
      received += answer.text.length
      if (answer.status === 404) return yield* fail("object_missing", "the parent has no such object", { status: 404 })
      if (answer.status >= 400) {
        const serverCode = serverCodeOf(answer.text)
        return yield* fail("object_refused", `the parent answered ${answer.status}`, { status: answer.status, ...(serverCode === undefined ? {} : { serverCode }) })
      }
      return answer.text
    })
  }

  const remember = (hash: Sha256Hash, bytes: Uint8Array) => {
    if (bytes.length > cacheBudget) return
    // Oldest first out: a child reads a file, then mostly works on what it read.
    for (const [h, b] of blobs) {
      if (cached + bytes.length <= cacheBudget) break
      blobs.delete(h)
      cached -= b.length
    }
    blobs.set(hash, bytes)
    cached += bytes.length
  }

  /** `text` (an object's answer) as the bytes of `hash`, verified, or why not. */
  const verified = (hash: Sha256Hash, text: string, url: string): Effect.Effect<Uint8Array, ObjectClientError> => {
    const bytes = decodeBody(text)
    if (bytes === undefined) return Effect.fail(new ObjectClientError({ code: "object_malformed", url, hash, detail: "the answer is not base64" }))
    const actual = sha256(bytes)
    if (actual !== hash) return Effect.fail(new ObjectClientError({ code: "object_hash_mismatch", url, hash, detail: `the bytes received hash to ${actual}; they were dropped` }))
    remember(hash, bytes)
    return Effect.succeed(bytes)
  }

  const get = (hash: Sha256Hash): Effect.Effect<Uint8Array, ObjectClientError> =>
    Effect.gen(function*() {
      const hit = blobs.get(hash)
      if (hit !== undefined) return hit
      const text = yield* request("GET", objectPath(hash), new Uint8Array(0), hash)
      return yield* verified(hash, text, `${base}${objectPath(hash)}`)
    })

  /** `items` cut into batches of at most `MAX_BATCH_OBJECTS` objects and about `BATCH_BYTES`. */
  const batches = <A>(items: ReadonlyArray<A>, sizeOf: (a: A) => number): Array<Array<A>> => {
    const out: Array<Array<A>> = []
    let current: Array<A> = []
    let bytes = 0
    for (const item of items) {
      const size = sizeOf(item)
      if (current.length > 0 && (current.length >= MAX_BATCH_OBJECTS || bytes + size > BATCH_BYTES)) {
        out.push(current)
        current = []
        bytes = 0
      }
      current.push(item)
      bytes += size
    }
    if (current.length > 0) out.push(current)
    return out
  }

  const getMany = (wanted: ReadonlyArray<{ readonly hash: Sha256Hash; readonly size: number }>) =>
    Effect.gen(function*() {
      const found = new Map<Sha256Hash, Uint8Array>()
      const asked = new Map<Sha256Hash, number>()
      for (const w of wanted) {
        const hit = blobs.get(w.hash)
        if (hit !== undefined) found.set(w.hash, hit)
        else asked.set(w.hash, w.size)
      }
      const url = `${base}${GET_MANY_PATH}`
      for (const batch of batches([...asked], ([, size]) => size)) {
        const hashes = batch.map(([h]) => h)
        const text = yield* request("POST", GET_MANY_PATH, new TextEncoder().encode(JSON.stringify({ hashes })))
        const answer = decodeBatch(text)
        if (Result.isFailure(answer)) return yield* new ObjectClientError({ code: "object_malformed", url, detail: "the answer is not {\"objects\": {...}}" })
        for (const hash of hashes) {
          const body = answer.success.objects[hash]
          if (body === undefined) return yield* new ObjectClientError({ code: "object_missing", url, hash, detail: "the parent has no such object" })
          found.set(hash, yield* verified(hash, body, url))
        }
      }
      return found
    })

  const putMany = (objects: ReadonlyArray<readonly [Sha256Hash, Uint8Array]>) =>
    Effect.forEach(batches(objects, ([, b]) => b.length), (batch) =>
      request("POST", PUT_MANY_PATH, new TextEncoder().encode(JSON.stringify({ objects: Object.fromEntries(batch.map(([h, b]) => [h, encodeBody(b)])) }))), { discard: true })

  const node = (hash: Sha256Hash): Effect.Effect<ManifestNode, ObjectClientError | ManifestError> =>
    Effect.gen(function*() {
      const hit = nodes.get(hash)
      if (hit !== undefined) return hit
      const bytes = yield* get(hash)
      const decoded = yield* Effect.fromResult(decodeNode(hash, bytes))
      // Kept decoded: a node's bytes need not stay in the blob cache.
      if (blobs.delete(hash)) cached -= bytes.length
      nodes.set(hash, decoded)
      return decoded
    })

  const missing = (hashes: ReadonlyArray<Sha256Hash>) =>
    Effect.gen(function*() {
      const text = yield* request("POST", MISSING_PATH, new TextEncoder().encode(JSON.stringify({ hashes })))
      const decoded = decodeMissing(text)
      if (Result.isFailure(decoded)) {
        return yield* new ObjectClientError({ code: "object_malformed", url: `${base}${MISSING_PATH}`, detail: "the answer is not {\"missing\": [...]}" })
      }
      return decoded.success.missing
    })

  const put = (hash: Sha256Hash, bytes: Uint8Array) => Effect.asVoid(request("POST", objectPath(hash), bytes, hash))

  const claim = (attempt: string, runner: string) =>
    Effect.gen(function*() {
      const text = yield* request("POST", CLAIM_PATH, new TextEncoder().encode(JSON.stringify({ attempt, runner })))
      const decoded = decodeClaim(text)
      if (Result.isFailure(decoded)) {
        return yield* new ObjectClientError({ code: "object_malformed", url: `${base}${CLAIM_PATH}`, detail: "the answer is not {\"granted\": ...}" })
      }
      return decoded.success.granted
    })

  return { get, node, missing, put, getMany, putMany, claim, stats: () => ({ requests, received, sent }) }
}

/**
 * A baseline read lazily from its root hash: a path's `entry`, `read` a file's bytes (undefined when the path
 * is absent or not a file), `list` a directory's entries (`""` is the root; undefined when
 * absent or not a directory).
 *
 * @category models
 * @since 0.1.0
 */
export interface BaselineView {
  readonly root: Sha256Hash
  /** The contents of several file entries, fetched together (verified by hash). */
  readonly contents: (files: ReadonlyArray<ManifestEntry>) => Effect.Effect<ReadonlyMap<Sha256Hash, Uint8Array>, ObjectClientError>
  /** The manifest entry at `path` (undefined when absent; `""` has none). */
  readonly entry: (path: string) => Effect.Effect<ManifestEntry | undefined, ObjectClientError | ManifestError | EngineError>
  readonly read: (path: string) => Effect.Effect<Uint8Array | undefined, ObjectClientError | ManifestError | EngineError>
  readonly list: (dir: string) => Effect.Effect<ReadonlyArray<ManifestEntry> | undefined, ObjectClientError | ManifestError | EngineError>
}

/**
 * The view of the baseline `root` through `client`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const baselineView = (client: ObjectClient, root: Sha256Hash): BaselineView => {
  /** The entry at `segments` (undefined when absent), walking only the nodes on the way. */
  const entryAt = (segments: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      let entries = (yield* client.node(root)).entries
      let found: ManifestEntry | undefined
      for (const [i, name] of segments.entries()) {
        found = entries.find((e) => e.name === name)
        if (found === undefined) return undefined
        if (i < segments.length - 1) {
          if (found.kind !== "dir") return undefined
          entries = (yield* client.node(found.hash)).entries
        }
      }
      return found
    })
  const segmentsOf = (raw: string) => Effect.map(Effect.fromResult(normalizeRelativePath(raw)), (p) => p.split("/"))
  return {
    root,
    entry: (raw) => Effect.flatMap(segmentsOf(raw), entryAt),
    contents: (files) => client.getMany(files.filter((e) => e.kind === "file").map((e) => ({ hash: e.hash, size: e.size }))),
    read: (raw) =>
      Effect.gen(function*() {
        const entry = yield* entryAt(yield* segmentsOf(raw))
        if (entry === undefined || entry.kind === "dir") return undefined
        const bytes = yield* client.get(entry.hash)
        return bytes
      }),
    list: (raw) =>
      Effect.gen(function*() {
        if (raw === "" || raw === ".") return (yield* client.node(root)).entries
        const entry = yield* entryAt(yield* segmentsOf(raw))
        return entry?.kind === "dir" ? (yield* client.node(entry.hash)).entries : undefined
      })
  }
}
