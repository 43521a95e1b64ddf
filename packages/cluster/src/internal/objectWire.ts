/**
 * What the object server and its client agree on: the routes, the body encoding of objects
 * they serve (base64 text: the one HTTP client answers with text), and the limits.
 */
import type { Sha256Hash } from "@forkjoin/schema"
import * as Schema from "effect/Schema"
import { Buffer } from "node:buffer"

/** The route prefix of objects; an object's route is the prefix and its hash's 64 hex digits. */
export const OBJECTS_PATH = "/v1/objects"

/** The route that answers which of some hashes the server lacks. */
export const MISSING_PATH = `${OBJECTS_PATH}/missing`

/** The route that answers several objects at once (`{"hashes"}` → `{"objects":{hash: base64}}`, absent ones left out). */
export const GET_MANY_PATH = `${OBJECTS_PATH}/get`

/** The route that stores several objects at once (`{"objects":{hash: base64}}`, in order). */
export const PUT_MANY_PATH = `${OBJECTS_PATH}/put`

/** The most objects one batch asks for or sends. */
export const MAX_BATCH_OBJECTS = 1_024

/** The bytes (before base64) a client puts in one batch, so an answer stays well under the caps. */
export const BATCH_BYTES = 8 * 1024 * 1024

/** A batch of objects on the wire: hash → base64 of its bytes. */
export const ObjectBatch = Schema.Struct({ objects: Schema.Record(Schema.String, Schema.String) })

/** The route where a runner claims a child attempt before it runs it (once per attempt). */
export const CLAIM_PATH = "/v1/attempts/claim"

/** A claim: the attempt's entity id and the runner (`host:port`) that would run it. */
export const ClaimRequest = Schema.Struct({ attempt: Schema.String.check(Schema.isMaxLength(512)), runner: Schema.String.check(Schema.isMaxLength(512)) })

/** The answer to a claim: whether this runner may run the attempt. */
export const ClaimAnswer = Schema.Struct({ granted: Schema.Boolean })

/** The largest object either side accepts by default (a blob can be as large as the engine's file limit). */
export const DEFAULT_MAX_OBJECT_BYTES = 256 * 1024 * 1024

/** The most hashes one `missing` question may ask about. */
export const MAX_MISSING_HASHES = 50_000

/** The route of `hash`. */
export const objectPath = (hash: Sha256Hash): string => `${OBJECTS_PATH}/${hash.slice("sha256:".length)}`

/** The hash a route parameter names, or undefined when it is not 64 lowercase hex digits. */
export const hashOfParam = (param: string | undefined): Sha256Hash | undefined =>
  param !== undefined && /^[0-9a-f]{64}$/.test(param) ? (`sha256:${param}` as Sha256Hash) : undefined

/** An object's bytes as its answer body. */
export const encodeBody = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")

/** An answer body's bytes, or undefined when it is not canonical base64 (never guessed at). */
export const decodeBody = (text: string): Uint8Array | undefined => {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) return undefined
  const bytes = Buffer.from(text, "base64")
  return bytes.toString("base64") === text ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : undefined
}
