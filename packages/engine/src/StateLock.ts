/**
 * Cross-process locks on other files of a workspace's state folder than the workspace lock
 * (a run's lock), by the workspace lock's own mechanism: an open SQLite write transaction,
 * exclusive among processes and among connections of one process, and released by the OS
 * when its holder dies, so a killed holder never leaves a stale lock.
 *
 * @since 0.1.0
 */
import { errnoOf } from "@forkjoin/patch/SystemError"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"
import { WorkspaceLock } from "./internal/lock.ts"

/**
 * Runs `effect` holding the lock of `file` (its folder must pass the state-folder rule and is
 * created if missing). Another holder makes it fail with `lock_timeout` after `timeoutMs`
 * (`0`: one try, never waiting); the lock's own failures are `EngineError`s.
 *
 * @category constructors
 * @since 0.1.0
 */
export const withStateLock = <A, E, R>(
  file: string,
  options: { readonly timeoutMs: number; readonly paths: ReadonlyArray<string> },
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | EngineError, R> =>
  Effect.scopedWith((scope) =>
    WorkspaceLock.open(file).pipe(
      Scope.provide(scope),
      Effect.mapError(({ cause }) =>
        new EngineError({
          code: "path_invalid",
          stage: Stage.lock,
          paths: options.paths,
          message: `Cannot open the lock ${file} (${errnoOf(cause) ?? String(cause)}); check that the workspace's .forkjoin folder is writable.`,
          cause
        })
      ),
      Effect.flatMap((lock) => lock.with(options.timeoutMs, options.paths, effect))
    )
  )
