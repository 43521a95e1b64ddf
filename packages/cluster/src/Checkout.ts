/**
 * A runner's own checkout of a run's baseline, for children that test their own work
 * (`childVerify`): every file of the manifest fetched (verified by hash) and written with its
 * mode into a folder of the runner's, once per baseline root however many children check
 * against it. A child's check then runs in a throwaway copy of it (`CheckView`), never in it.
 * Only the newest `KEEP` baselines are kept on disk.
 *
 * It is the one place a runner fetches a whole baseline: children that only read and edit stay
 * lazy (`RemoteBase`). Its cost is measured apart (`Materialized`).
 *
 * @since 0.1.0
 */
import type { Sha256Hash } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import * as fs from "node:fs"
import * as path from "node:path"
import type { ManifestError } from "./Manifest.ts"
import type { ObjectClient, ObjectClientError } from "./ObjectClient.ts"

/**
 * What materialising a baseline cost: files and bytes written, and the time it took.
 *
 * @category models
 * @since 0.1.0
 */
export interface Materialized {
  readonly dir: string
  readonly files: number
  readonly bytes: number
  readonly ms: number
}

/**
 * The checkouts of one runner, under `dir`.
 *
 * @category models
 * @since 0.1.0
 */
export interface Checkouts {
  /** The checkout of `root` (made on first use, through `client`). */
  readonly of: (client: ObjectClient, root: Sha256Hash) => Effect.Effect<Materialized, ObjectClientError | ManifestError | CheckoutIoError>
}

/**
 * Writing the checkout failed (disk full, permissions); nothing half-written is kept.
 *
 * @category errors
 * @since 0.1.0
 */
export class CheckoutIoError extends Schema.TaggedError<CheckoutIoError>()("CheckoutIoError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/** Baselines kept on disk per runner: the current run's and the one before. */
export const KEEP = 2

const hexOf = (hash: Sha256Hash) => hash.slice("sha256:".length)

/**
 * Checkouts under `dir` (created when needed).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (dir: string): Checkouts => {
  const made = new Map<Sha256Hash, Effect.Effect<Materialized, ObjectClientError | ManifestError | CheckoutIoError>>()

  const materialize = (client: ObjectClient, root: Sha256Hash) =>
    Effect.gen(function*() {
      const started = Date.now()
      const final = path.join(dir, hexOf(root))
      const partial = `${final}.partial-${process.pid}`
      const io = (what: string) => (cause: unknown) =>
        new CheckoutIoError({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}; check the runner's temp folder space and permissions`, cause })
      yield* Effect.try({ try: () => fs.rmSync(partial, { recursive: true, force: true }), catch: io("Clearing a partial checkout") })
      let files = 0
      let bytes = 0
      const write = (node: Sha256Hash, into: string): Effect.Effect<void, ObjectClientError | ManifestError | CheckoutIoError> =>
        Effect.gen(function*() {
          yield* Effect.try({ try: () => fs.mkdirSync(into, { recursive: true }), catch: io(`Creating ${into}`) })
          const entries = (yield* client.node(node)).entries
          // A folder's files in as few requests as their sizes allow.
          const contents = yield* client.getMany(entries.filter((e) => e.kind === "file").map((e) => ({ hash: e.hash, size: e.size })))
          for (const e of entries) {
            // Names were checked when the node was decoded: no '..', separators or denied names.
            const target = path.join(into, e.name)
            if (e.kind === "dir") {
              yield* write(e.hash, target)
              continue
            }
            const content = contents.get(e.hash)!
            yield* Effect.try({ try: () => fs.writeFileSync(target, content, { mode: e.mode ?? 0o644, flag: "wx" }), catch: io(`Writing ${target}`) })
            files += 1
            bytes += content.length
          }
        })
      yield* write(root, partial).pipe(Effect.tapError(() => Effect.sync(() => fs.rmSync(partial, { recursive: true, force: true }))))
      yield* Effect.try({
        try: () => {
          fs.rmSync(final, { recursive: true, force: true })
          fs.renameSync(partial, final)
        },
        catch: io("Completing the checkout")
      })
      // The oldest checkouts go once there are more than KEEP.
      const roots = [...made.keys()]
      for (const old of roots.slice(0, Math.max(0, roots.length - KEEP))) {
        made.delete(old)
        fs.rmSync(path.join(dir, hexOf(old)), { recursive: true, force: true })
      }
      return { dir: final, files, bytes, ms: Date.now() - started }
    })

  // Held only to look a root up or register it: the materialising itself runs outside.
  const lock = Semaphore.makeUnsafe(1)
  return {
    of: (client, root) =>
      Effect.flatten(lock.withPermit(Effect.gen(function*() {
        const known = made.get(root)
        if (known !== undefined) return known
        // Made once, then shared; a failed one is forgotten, so the next child tries again.
        const once = yield* Effect.cached(materialize(client, root).pipe(Effect.tapError(() => Effect.sync(() => made.delete(root)))))
        made.set(root, once)
        return once
      })))
  }
}
