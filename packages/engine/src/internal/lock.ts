/**
 * Stage 6 locks. In-process: one semaphore per absolute path, in a process-wide registry, so
 * two engines in one process never commit the same file at once, and one per workspace lock
 * (`serially`), so one engine's requests never interleave while one of them lets the event loop
 * turn (`turns.ts`). Cross-process: a SQLite write transaction (`BEGIN IMMEDIATE`) on
 * `<workspace>/.forkjoin/lock.db`: exclusive among processes, and released by the OS if the
 * holder dies (no stale lock files), through `@forkjoin/sqlite`'s `LockFile`, opened and taken in
 * scopes. Acquisition polls without blocking the event loop and gives up with `lock_timeout`.
 * The lock's folder
 * must pass the state-folder rule (`openStateFolder`): a lock that would be created through a
 * link is never opened, and every acquisition fails with that refusal instead.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import { EngineError } from "@forkjoin/schema/EngineError"
import * as LockFile from "@forkjoin/sqlite/LockFile"
import type { SqliteError } from "@forkjoin/sqlite/SqliteError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as path from "node:path"
import { openStateFolder } from "../Policy.ts"
import { LOCK_WAIT_EVERY_MS, type ProgressListener } from "../Progress.ts"
import { turnOfTheEventLoop } from "./turns.ts"

const registry = new Map<string, Semaphore.Semaphore>()

const semaphoreOf = (key: string): Semaphore.Semaphore => {
  let s = registry.get(key)
  if (s === undefined) {
    s = Semaphore.makeUnsafe(1)
    registry.set(key, s)
  }
  return s
}

/**
 * Runs `effect` holding the in-process locks of `keys` (taken in sorted order, so two
 * requests never deadlock).
 */
export const withPathLocks = <A, E, R>(
  keys: ReadonlyArray<string>,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  [...new Set(keys)].sort().reduceRight<Effect.Effect<A, E, R>>(
    (inner, key) => Semaphore.withPermits(semaphoreOf(key), 1)(inner),
    effect
  )

/**
 * Runs `effect` holding a lock; `lock_timeout` after `timeoutMs`, naming `paths`. While another
 * process holds it, `onProgress` hears `LockWaiting` (at the start, then throttled).
 */
type Holding = <A, E, R>(
  timeoutMs: number,
  paths: ReadonlyArray<string>,
  effect: Effect.Effect<A, E, R>,
  onProgress?: ProgressListener
) => Effect.Effect<A, E | EngineError, R>

/**
 * A cross-process workspace lock backed by one SQLite connection, in the state folder that
 * holds `file` (`<workspace>/.forkjoin/lock.db`). A folder the state-folder rule refuses
 * leaves the lock unopened: `with` then fails with that refusal (the engine's open fails typed).
 */
export class WorkspaceLock {
  private readonly local = Semaphore.makeUnsafe(1)

  /** The open lock file, or why its folder was refused. */
  private readonly opened: Result.Result<LockFile.LockFile, EngineError>

  private constructor(opened: Result.Result<LockFile.LockFile, EngineError>) {
    this.opened = opened
  }

  /** Opens the lock of `file` for the current scope (closing it releases the lock if held). */
  static open(file: string): Effect.Effect<WorkspaceLock, SqliteError, Scope.Scope> {
    return Effect.suspend(() => {
      const dir = path.dirname(file)
      const folder = openStateFolder(dir, path.basename(dir))
      if (Result.isFailure(folder)) return Effect.succeed(new WorkspaceLock(Result.fail(folder.failure)))
      return Effect.map(LockFile.open(file), (lock) => new WorkspaceLock(Result.succeed(lock)))
    })
  }

  /**
   * Runs `effect` holding this lock's in-process part only: the requests of one engine run one
   * at a time, even while one of them lets the event loop turn. An apply holds it from
   * resolving to publishing, so a second apply plans against the first one's result.
   */
  serially<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    return Semaphore.withPermits(this.local, 1)(effect)
  }

  /**
   * Runs `effect` while holding the workspace lock; `lock_timeout` after `timeoutMs`. While
   * another process holds it, `onProgress` hears `LockWaiting` (at the start, then throttled).
   */
  readonly with: Holding = (timeoutMs, paths, effect, onProgress) => this.serially(this.held(timeoutMs, paths, effect, onProgress))

  /** `with` for a caller already inside `serially`: the cross-process part only. */
  readonly held: Holding = (timeoutMs, paths, effect, onProgress) => {
    if (Result.isFailure(this.opened)) return Effect.fail(this.opened.failure)
    const lock = this.opened.success
    // Taken in the scope below: released when `effect` ends, however it ends.
    const acquire = Effect.gen(function*() {
      yield* turnOfTheEventLoop
      const start = yield* Clock.currentTimeMillis
      const deadline = start + timeoutMs
      let delay = 1
      let reported = -Infinity
      // The lock's own SQLite failures (not contention) are bugs here, as they always were.
      while (!(yield* Effect.orDie(lock.acquire))) {
        const now = yield* Clock.currentTimeMillis
        if (onProgress !== undefined && now - reported >= LOCK_WAIT_EVERY_MS) {
          reported = now
          onProgress({ _tag: "LockWaiting", waitedMs: now - start })
        }
        if (now >= deadline) {
          return yield* new EngineError({
            code: "lock_timeout",
            stage: Stage.lock,
            paths,
            message: `Another process held the workspace lock for more than ${timeoutMs} ms; nothing was written. Retry when it finishes.`
          })
        }
        yield* Effect.sleep(delay)
        delay = Math.min(delay * 2, 20)
      }
    })
    // Waiting is uninterruptible, as an acquisition is: the lock is either taken and released
    // with the scope, or not taken at all.
    return Effect.scopedWith((scope) => Effect.andThen(Effect.uninterruptible(Scope.provide(acquire, scope)), effect))
  }
}
