/**
 * A child's changeset coming back from a runner: the runner uploads the changeset JSON as an
 * object (it already names its postimage blobs by hash) after the blobs the parent says it
 * lacks, so content the parent holds (the baseline's, another child's) never crosses twice.
 * The parent lays what it received out as a `changesetFile` (`changeset.json` with
 * `blobs/sha256/<hex>` beside it), so the run stages and revalidates it exactly as a changeset
 * produced elsewhere: nothing here judges the changeset.
 *
 * @since 0.1.0
 */
import { sha256 } from "@forkjoin/patch"
import { Changeset, type Sha256Hash } from "@forkjoin/schema"
import { BlobStore, type BlobStoreError } from "@forkjoin/runtime"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import type { ObjectClient, ObjectClientError } from "./ObjectClient.ts"
import { Objects } from "./Objects.ts"

/**
 * What an upload did: the changeset object's hash and how many blobs were sent or skipped.
 *
 * @category models
 * @since 0.1.0
 */
export interface Sent {
  readonly changeset: Sha256Hash
  readonly uploaded: number
  readonly skipped: number
}

/**
 * Uploads at or below this many bytes are sent whole, without asking which objects the parent
 * already holds.
 *
 * @category constants
 * @since 0.1.0
 */
export const ASK_ABOVE_BYTES = 64 * 1024

/**
 * Uploads `changeset` (runner side): asks which of its blobs and itself the parent lacks (for
 * uploads above `ASK_ABOVE_BYTES`), sends those blobs from the runner's `BlobStore`, then the
 * changeset.
 *
 * @category constructors
 * @since 0.1.0
 */
export const send = (
  client: ObjectClient,
  changeset: Changeset,
  options: { readonly askAboveBytes?: number } = {}
): Effect.Effect<Sent, ObjectClientError | BlobStoreError, BlobStore> =>
  Effect.gen(function*() {
    const store = yield* BlobStore
    const bytes = new TextEncoder().encode(JSON.stringify(Schema.encodeSync(Changeset)(changeset)))
    const hash = sha256(bytes)
    const wanted = [...changeset.blobs.hashes, hash]
    const blobs = yield* Effect.forEach(changeset.blobs.hashes, (b) => Effect.map(store.get(b), (content) => [b, content] as const))
    // Small uploads go without asking first: the question would cost more than the bytes.
    const total = blobs.reduce((sum, [, content]) => sum + content.length, bytes.length)
    const absent = new Set(total <= (options.askAboveBytes ?? ASK_ABOVE_BYTES) ? wanted : yield* client.missing(wanted))
    const uploads: Array<readonly [Sha256Hash, Uint8Array]> = blobs.filter(([b]) => absent.has(b))
    // Last (the server stores a batch in order): a changeset the parent holds has its blobs there too.
    if (absent.has(hash)) uploads.push([hash, bytes])
    yield* client.putMany(uploads)
    const uploaded = changeset.blobs.hashes.filter((b) => absent.has(b)).length
    return { changeset: hash, uploaded, skipped: changeset.blobs.hashes.length - uploaded }
  })

/**
 * The receiving side could not lay the changeset out: `changeset_missing` (no such object was
 * uploaded) or `changeset_write_failed` (the folder could not be written).
 *
 * @category errors
 * @since 0.1.0
 */
export class ReceiveError extends Schema.TaggedError<ReceiveError>()("ReceiveError", {
  code: Schema.Literals(["changeset_missing", "changeset_write_failed"]),
  hash: Schema.String,
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

const HASH = /^sha256:[0-9a-f]{64}$/

/** The blob hashes the (untrusted) changeset lists, only well-formed ones: they become file names. */
const listedBlobs = (bytes: Uint8Array): ReadonlyArray<Sha256Hash> => {
  try {
    const v: unknown = JSON.parse(new TextDecoder().decode(bytes))
    if (typeof v !== "object" || v === null || !("blobs" in v)) return []
    const blobs: unknown = v.blobs
    if (typeof blobs !== "object" || blobs === null || !("hashes" in blobs) || !Array.isArray(blobs.hashes)) return []
    return blobs.hashes.filter((h: unknown): h is Sha256Hash => typeof h === "string" && HASH.test(h))
  } catch {
    // Not JSON: laid out as received; the run's revalidation says why it is refused.
    return []
  }
}

/**
 * Lays the uploaded changeset `hash` out in `dir` (parent side) as a `changesetFile` with its
 * blobs beside it, and returns the `changeset.json` path to give the run and the changeset's
 * bytes (`changesetFile: false`: the blobs only, for a caller that writes the file itself).
 * Blobs the changeset names but nobody uploaded are left out: the join refuses the child for them.
 *
 * @category constructors
 * @since 0.1.0
 */
export const receive = (
  hash: Sha256Hash,
  dir: string,
  options: { readonly changesetFile?: boolean } = {}
): Effect.Effect<{ readonly file: string; readonly bytes: Uint8Array }, ReceiveError | BlobStoreError, Objects> =>
  Effect.gen(function*() {
    const objects = yield* Objects
    const bytes = yield* objects.get(hash)
    if (bytes === undefined) {
      return yield* new ReceiveError({ code: "changeset_missing", hash, message: `no changeset ${hash} was uploaded; the runner must upload it again` })
    }
    const blobs: Array<readonly [Sha256Hash, Uint8Array]> = []
    for (const blob of listedBlobs(bytes)) {
      const content = yield* objects.get(blob)
      if (content !== undefined) blobs.push([blob, content])
    }
    const file = path.join(dir, "changeset.json")
    yield* Effect.try({
      try: () => {
        fs.mkdirSync(path.join(dir, "blobs", "sha256"), { recursive: true })
        for (const [blob, content] of blobs) fs.writeFileSync(path.join(dir, "blobs", "sha256", blob.slice("sha256:".length)), content)
        if (options.changesetFile !== false) fs.writeFileSync(file, bytes)
      },
      catch: (cause) => new ReceiveError({ code: "changeset_write_failed", hash, message: `cannot write the received changeset into ${dir} (${String(cause)}); check the run folder's space and permissions`, cause })
    })
    return { file, bytes }
  })
