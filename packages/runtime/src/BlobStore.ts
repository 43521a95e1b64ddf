/**
 * A content-addressed blob store for changeset content (SPEC §6.3): bytes are stored once
 * under their `sha256:<hex>` hash, any size and any encoding, and verified on every read. A
 * changeset names postimages by hash; this store holds the bytes between a child's export and
 * the parent's join.
 *
 * Two layers: `layerMemory` (tests, single-process runs) and `layerDirectory`, a directory
 * laid out as `<dir>/sha256/<hex>` (by convention `<artifacts>/blobs`, see `blobDirectory`),
 * written with temp file + rename so a reader never sees a partial blob. It does not own
 * retention (runs own their artifact directories) nor the history store's own blob table.
 *
 * @since 0.1.0
 */
import { describeError, sha256 } from "@forkjoin/patch"
import { readRegularFile } from "@forkjoin/patch/SafeRead"
import type { Sha256Hash } from "@forkjoin/schema"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * A blob could not be stored or read: `NotFound`, `Corrupt` (stored bytes no longer hash to
 * their name), `Unsafe` (not a regular file, or too large: never opened or read; `detail` says
 * what is there) or `Io` (the filesystem refused).
 *
 * @category errors
 * @since 0.1.0
 */
export class BlobStoreError extends Schema.TaggedError<BlobStoreError>()("BlobStoreError", {
  operation: Schema.String,
  reason: Schema.Literals(["NotFound", "Corrupt", "Unsafe", "Io"]),
  hash: Schema.optional(Schema.String),
  detail: Schema.optional(Schema.String),
  cause: Schema.optional(Schema.Defect())
}) {
  override get message(): string {
    const which = this.hash === undefined ? "" : ` for ${this.hash}`
    switch (this.reason) {
      case "NotFound":
        return `${this.operation}: no blob${which}; the changeset refers to content this store does not hold.`
      case "Corrupt":
        return `${this.operation}: the stored blob${which} does not match its hash; it was modified on disk.`
      case "Unsafe":
        return `${this.operation}: the stored blob${which} was not read: ${this.detail ?? "it is not a regular file"}; blobs must be regular files.`
      case "Io":
        return `${this.operation} failed${which} (${describeError(this.cause)}); check the blob directory's space and permissions.`
    }
  }
}

/**
 * Options of the directory layer.
 *
 * @category models
 * @since 0.1.0
 */
export interface DirectoryOptions {
  /** fsync each new blob before it is renamed into place (default true). */
  readonly fsync?: boolean
  /** Largest blob `get` reads (default `MAX_BLOB_BYTES`); a larger one is `Unsafe`, never read. */
  readonly maxBlobBytes?: number
}

/**
 * The default largest blob a directory store reads: the engine's default per-file limit, so
 * no file the engine could write is refused.
 *
 * @category models
 * @since 0.1.0
 */
export const MAX_BLOB_BYTES = 256 * 1024 * 1024

/**
 * The blob store service.
 *
 * @category services
 * @since 0.1.0
 */
export class BlobStore extends Context.Service<BlobStore, {
  /** Stores bytes under their hash (idempotent) and returns the hash. */
  readonly put: (bytes: Uint8Array) => Effect.Effect<Sha256Hash, BlobStoreError>
  /** Reads a blob, verifying its hash; `NotFound` when absent. */
  readonly get: (hash: Sha256Hash) => Effect.Effect<Uint8Array, BlobStoreError>
  /** True when the store holds the blob. */
  readonly has: (hash: Sha256Hash) => Effect.Effect<boolean, BlobStoreError>
}>()("forkjoin/runtime/BlobStore") {
  /** A fresh in-memory store per build. */
  static readonly layerMemory: Layer.Layer<BlobStore> = Layer.sync(BlobStore, () => makeMemory())
  /** A store in `dir` (created if missing), laid out as `<dir>/sha256/<hex>`. */
  static readonly layerDirectory = (dir: string, options?: DirectoryOptions): Layer.Layer<BlobStore, BlobStoreError> =>
    Layer.effect(BlobStore, makeDirectory(dir, options))
}

/**
 * The conventional blob directory of a run: `<artifactsDir>/blobs`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const blobDirectory = (artifactsDir: string): string => path.join(artifactsDir, "blobs")

/**
 * The file a directory store keeps `hash` in: `<dir>/sha256/<hex>`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const blobPath = (dir: string, hash: Sha256Hash): string => path.join(dir, "sha256", hash.slice("sha256:".length))

/**
 * An in-memory store (a fresh, private map).
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeMemory = (): BlobStore["Service"] => {
  const blobs = new Map<Sha256Hash, Uint8Array>()
  return BlobStore.of({
    // Copies in and out so callers mutating their buffers cannot change stored content.
    put: (bytes) =>
      Effect.sync(() => {
        const hash = sha256(bytes)
        if (!blobs.has(hash)) blobs.set(hash, Uint8Array.from(bytes))
        return hash
      }),
    get: (hash) =>
      Effect.suspend(() => {
        const b = blobs.get(hash)
        return b === undefined
          ? Effect.fail(new BlobStoreError({ operation: "BlobStore.get", reason: "NotFound", hash }))
          : Effect.succeed(Uint8Array.from(b))
      }),
    has: (hash) => Effect.sync(() => blobs.has(hash))
  })
}

/**
 * A directory store: creates `<dir>/sha256` and serves blobs from it.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeDirectory = (
  dir: string,
  options?: DirectoryOptions
): Effect.Effect<BlobStore["Service"], BlobStoreError> =>
  Effect.try({
    try: () => fs.mkdirSync(path.join(dir, "sha256"), { recursive: true }),
    catch: (cause) => new BlobStoreError({ operation: "BlobStore.open", reason: "Io", cause })
  }).pipe(Effect.map(() => {
    const fsync = options?.fsync ?? true
    const put = (bytes: Uint8Array) =>
      Effect.try({
        try: () => {
          const hash = sha256(bytes)
          const target = blobPath(dir, hash)
          const existing = statOrUndefined(target)
          // Same name means same content; a wrong size can only be damage, so rewrite it.
          if (existing !== undefined && existing.size === bytes.length) return hash
          const temp = path.join(dir, "sha256", `.${hash.slice(7)}.${randomUUID()}.tmp`)
          try {
            const fd = fs.openSync(temp, "wx", 0o444)
            try {
              fs.writeSync(fd, bytes)
              if (fsync) fs.fsyncSync(fd)
            } finally {
              fs.closeSync(fd)
            }
            fs.renameSync(temp, target)
          } catch (e) {
            fs.rmSync(temp, { force: true })
            throw e
          }
          return hash
        },
        catch: (cause) => new BlobStoreError({ operation: "BlobStore.put", reason: "Io", cause })
      })
    const maxBlobBytes = options?.maxBlobBytes ?? MAX_BLOB_BYTES
    // Blobs are regular files: a link (to a named pipe, a device, anywhere) is never followed
    // and the size is checked before a byte is read, so a planted blob cannot hang or flood a join.
    const get = (hash: Sha256Hash) =>
      Effect.suspend(() => {
        const read = readRegularFile(blobPath(dir, hash), maxBlobBytes)
        if (Result.isFailure(read)) {
          const r = read.failure
          return Effect.fail(
            r._tag === "Missing"
              ? new BlobStoreError({ operation: "BlobStore.get", reason: "NotFound", hash })
              : new BlobStoreError({ operation: "BlobStore.get", reason: "Unsafe", hash, detail: r.detail })
          )
        }
        const bytes = read.success
        return sha256(bytes) === hash
          ? Effect.succeed(bytes)
          : Effect.fail(new BlobStoreError({ operation: "BlobStore.get", reason: "Corrupt", hash }))
      })
    const has = (hash: Sha256Hash) => Effect.sync(() => statOrUndefined(blobPath(dir, hash)) !== undefined)
    return BlobStore.of({ put, get, has })
  }))

const statOrUndefined = (p: string): fs.Stats | undefined => {
  try {
    return fs.statSync(p)
  } catch {
    return undefined
  }
}
