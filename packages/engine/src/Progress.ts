/**
 * Progress of the engine's write path, for a caller that shows it (a terminal line, a log): a
 * small tagged event at each coarse point of a request (resolving, planning, waiting for the
 * workspace lock, checking, journaling, staging, committing, recording). This module owns the
 * event model, the listener type and the fiber's current listener; the stages decide when to
 * call it (per-file loops only every `PROGRESS_EVERY` files). Showing it is the caller's: the
 * engine never writes to a terminal.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * Stage 3 starts: `paths` targets (and guarded paths) are being resolved and read.
 *
 * @category models
 * @since 0.1.0
 */
export const Resolving = Schema.TaggedStruct("Resolving", { paths: Schema.Number })

/**
 * Stage 5 starts: the plan of `paths` targets is being computed in memory.
 *
 * @category models
 * @since 0.1.0
 */
export const Planning = Schema.TaggedStruct("Planning", { paths: Schema.Number })

/**
 * Stage 6: another process holds the workspace lock; `waitedMs` so far. Sent when the wait
 * starts, then at most every `LOCK_WAIT_EVERY_MS` while it lasts.
 *
 * @category models
 * @since 0.1.0
 */
export const LockWaiting = Schema.TaggedStruct("LockWaiting", { waitedMs: Schema.Number })

/**
 * Stage 6 under the lock: the `files` planned against are re-read (nothing may have moved).
 *
 * @category models
 * @since 0.1.0
 */
export const Checking = Schema.TaggedStruct("Checking", { files: Schema.Number })

/**
 * Stage 7 starts: the intent and every pre/post blob of `files` files are journaled.
 *
 * @category models
 * @since 0.1.0
 */
export const Journaling = Schema.TaggedStruct("Journaling", { files: Schema.Number })

/**
 * Stage 7: `done` of `total` new contents written to fsynced temp files.
 *
 * @category models
 * @since 0.1.0
 */
export const Staging = Schema.TaggedStruct("Staging", { done: Schema.Number, total: Schema.Number })

/**
 * Stage 8: `done` of `total` files renamed (or removed) into place.
 *
 * @category models
 * @since 0.1.0
 */
export const Committing = Schema.TaggedStruct("Committing", { done: Schema.Number, total: Schema.Number })

/**
 * Stage 9 starts: the record of `files` files is written to the history.
 *
 * @category models
 * @since 0.1.0
 */
export const Recording = Schema.TaggedStruct("Recording", { files: Schema.Number })

/**
 * One progress event.
 *
 * @category models
 * @since 0.1.0
 */
export const ProgressEvent = Schema.Union([Resolving, Planning, LockWaiting, Checking, Journaling, Staging, Committing, Recording])

/**
 * One progress event (the type of the `ProgressEvent` schema).
 *
 * @category models
 * @since 0.1.0
 */
export type ProgressEvent = typeof ProgressEvent.Type

/**
 * Receives progress events synchronously, on the request's fiber: it must be cheap and must
 * not throw (a thrown error is a defect of the request).
 *
 * @category models
 * @since 0.1.0
 */
export type ProgressListener = (event: ProgressEvent) => void

/**
 * A per-file loop reports once every this many files (and at its end), never per file.
 *
 * @category models
 * @since 0.1.0
 */
export const PROGRESS_EVERY = 128

/**
 * A lock wait reports at its start, then at most once per this many milliseconds.
 *
 * @category models
 * @since 0.1.0
 */
export const LOCK_WAIT_EVERY_MS = 250

// -------------------------------------------------------------------------------------
// services
// -------------------------------------------------------------------------------------

/**
 * The listener of the current fiber, used when a request has no `onProgress` of its own and
 * by the engine's startup repair (which runs while the engine layer is built, before any
 * request): provide it around the program that builds and uses the engine. None by default.
 *
 * @category services
 * @since 0.1.0
 */
export const CurrentListener: Context.Reference<ProgressListener | undefined> = Context.Reference<
  ProgressListener | undefined
>("forkjoin/engine/Progress/CurrentListener", { defaultValue: () => undefined })
