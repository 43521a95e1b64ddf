/**
 * A run's lock: the process that runs a plan or resumes its join holds it for as long as it
 * does, so `gc` can tell a live run from an abandoned one and two resumes of one run never
 * interleave. It is the engine's state lock (an open SQLite write transaction on
 * `<workspace>/.forkjoin/locks/<hash of the run id>.lock`): released by the OS when its
 * holder dies, so a SIGKILLed run is collectable and resumable again at once. Nobody waits
 * on it: a second taker is told the run is busy.
 *
 * A lock file is removed only by its holder, and only once nothing can run the run again
 * (gc removed its folder, or no such run exists): removing it while another process may open
 * it would give two processes two different files to lock.
 */
import { Engine } from "@forkjoin/engine/Engine"
import { withStateLock } from "@forkjoin/engine/StateLock"
import { sha256 } from "@forkjoin/patch/Bytes"
import type { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as path from "node:path"
import { OrchestratorError } from "../OrchestratorError.ts"

/** Where run `runId`'s lock lives (run ids may hold `/` and `:`, so the file is named by their hash). */
export const lockFileOf = (root: string, runId: string): string =>
  path.join(root, ".forkjoin", "locks", `${sha256(runId).slice("sha256:".length)}.lock`)

/**
 * `effect` run holding run `runId`'s lock, as `Some` of its result; `None` without running it
 * when another process (or another taker in this one) holds the lock.
 */
export const ifIdle = <A, E, R>(
  runId: string,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<Option.Option<A>, E | EngineError, R | Engine> =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const held = yield* withStateLock(lockFileOf(engine.root, runId), { timeoutMs: 0, paths: [] }, Effect.result(effect)).pipe(
      Effect.map(Option.some),
      // Only the lock's own refusal means busy: the effect's failures are inside the Result.
      Effect.catchIf((e) => e.code === "lock_timeout", () => Effect.succeed(Option.none()))
    )
    if (Option.isNone(held)) return Option.none()
    return Option.some(yield* Effect.fromResult(held.value))
  })

/**
 * `effect` run holding run `runId`'s lock; `run_busy` (nothing done) while another process
 * runs or resumes that run.
 */
export const holding = <A, E, R>(
  runId: string,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | EngineError | OrchestratorError, R | Engine> =>
  Effect.flatMap(ifIdle(runId, effect), Option.match({
    onSome: Effect.succeed,
    onNone: () =>
      Effect.fail(
        new OrchestratorError({
          code: "run_busy",
          paths: [],
          message: `The run ${runId} is being run or resumed by another forkjoin process right now; nothing was done. ` +
            `Wait for that process to end, then run 'forkjoin status': it lists the run if its join is still unfinished ` +
            `('forkjoin run --resume ${runId}' finishes it).`
        })
      )
  }))

/** Removes run `runId`'s lock file: only for its holder, once nothing can run that run again. */
export const forget = (runId: string): Effect.Effect<void, never, Engine> =>
  Effect.gen(function*() {
    const engine = yield* Engine
    try {
      fs.rmSync(lockFileOf(engine.root, runId), { force: true })
    } catch {
      // Not removable: a leftover empty file that locks nothing.
    }
  })
