/**
 * The parent's object store for one run, as the object server serves it: the baseline's
 * directory nodes (kept in memory), the baseline's blobs (read again from the workspace on
 * demand, served only while they still hash to their name) and what runners upload (their
 * changesets and postimage blobs, into a `BlobStore`; stored only when the bytes hash to the
 * name they were sent under).
 *
 * @since 0.1.0
 */
import type { Engine } from "@forkjoin/engine/Engine"
import { sha256 } from "@forkjoin/patch"
import type { Sha256Hash } from "@forkjoin/schema"
import { BlobStore, type BlobStoreError } from "@forkjoin/runtime"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { type Baseline, readBlob } from "./Baseline.ts"

/**
 * An upload was refused: `object_hash_mismatch` (its bytes do not hash to the name it was sent
 * under; nothing was stored) or `object_store_failed` (the blob store refused; `cause` says why).
 *
 * @category errors
 * @since 0.1.0
 */
export class ObjectsError extends Schema.TaggedError<ObjectsError>()("ObjectsError", {
  code: Schema.Literals(["object_hash_mismatch", "object_store_failed"]),
  hash: Schema.String,
  detail: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message(): string {
    return `The object ${this.hash} was not stored (${this.code}): ${this.detail}.`
  }
}

/**
 * The object store service: `get` a node or blob (undefined when absent), `has`, `put` an
 * upload under its hash, and `missing`, which of some hashes it lacks (for uploads that skip
 * what is already there).
 *
 * @category services
 * @since 0.1.0
 */
export class Objects extends Context.Service<Objects, {
  readonly get: (hash: Sha256Hash) => Effect.Effect<Uint8Array | undefined, BlobStoreError>
  readonly has: (hash: Sha256Hash) => Effect.Effect<boolean, BlobStoreError>
  readonly put: (hash: Sha256Hash, bytes: Uint8Array) => Effect.Effect<void, ObjectsError>
  readonly missing: (hashes: ReadonlyArray<Sha256Hash>) => Effect.Effect<ReadonlyArray<Sha256Hash>, BlobStoreError>
}>()("forkjoin/cluster/Objects") {
  /** The objects of `baseline` over the engine's workspace, uploads into the `BlobStore`. */
  static readonly layer = (baseline: Baseline): Layer.Layer<Objects, never, Engine | BlobStore> =>
    Layer.effect(Objects, make(baseline))
}

/**
 * The service over `baseline`, the engine's workspace and the `BlobStore`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (baseline: Baseline): Effect.Effect<Objects["Service"], never, Engine | BlobStore> =>
  Effect.gen(function*() {
    const context = yield* Effect.context<Engine>()
    const store = yield* BlobStore
    const inBaseline = (hash: Sha256Hash) => baseline.tree.nodes.has(hash) || baseline.blobPaths.has(hash)
    const get = (hash: Sha256Hash): Effect.Effect<Uint8Array | undefined, BlobStoreError> =>
      Effect.gen(function*() {
        const node = baseline.tree.nodes.get(hash)
        if (node !== undefined) return node
        const blob = yield* Effect.provideContext(readBlob(baseline, hash), context)
        if (blob !== undefined) return blob
        return (yield* store.has(hash)) ? yield* store.get(hash) : undefined
      })
    const has = (hash: Sha256Hash) => inBaseline(hash) ? Effect.succeed(true) : store.has(hash)
    const put = (hash: Sha256Hash, bytes: Uint8Array): Effect.Effect<void, ObjectsError> => {
      const actual = sha256(bytes)
      if (actual !== hash) {
        return Effect.fail(new ObjectsError({ code: "object_hash_mismatch", hash, detail: `the bytes sent hash to ${actual}` }))
      }
      return store.put(bytes).pipe(
        Effect.asVoid,
        Effect.mapError((cause) => new ObjectsError({ code: "object_store_failed", hash, detail: cause.message, cause }))
      )
    }
    const missing = (hashes: ReadonlyArray<Sha256Hash>) =>
      Effect.filter([...new Set(hashes)], (h) => Effect.map(has(h), (present) => !present))
    return Objects.of({ get, has, put, missing })
  })
