/**
 * Turns of Node's event loop for the engine's synchronous work. The engine's stages call
 * synchronous SQLite and file functions; a long stage (resolving, re-checking or staging
 * thousands of files) would keep its process's timers and I/O (a gateway's other clients, a
 * child process's pipes) waiting until it ends. Such a stage is written as pausable work (a
 * generator that `yield`s between files), and `runWithTurns` lets the event loop run at a
 * pause once 10 ms passed since the last turn. The same clock serves the turn an apply takes
 * before the workspace lock (`lock.ts`). No SQLite transaction is ever open across a pause:
 * the stages pause only between file calls.
 */
import * as Effect from "effect/Effect"

// When a turn last let Node's event loop run (ms, `performance.now()`).
let lastTurn = -Infinity
const TURN_EVERY_MS = 10

const turnDue = (): boolean => performance.now() - lastTurn >= TURN_EVERY_MS

// A `setImmediate`, in real time even under a `TestClock`: timers and I/O callbacks queued
// meanwhile run before it.
const takeTurn: Effect.Effect<void> = Effect.callback<void>((resume) => {
  const handle = setImmediate(() => {
    lastTurn = performance.now()
    resume(Effect.void)
  })
  return Effect.sync(() => clearImmediate(handle))
})

/**
 * One turn of Node's event loop unless one was taken in the last 10 ms. Back-to-back small
 * applies take one every few applies (about 3% of their time, measured).
 */
export const turnOfTheEventLoop: Effect.Effect<void> = Effect.suspend(() => (turnDue() ? takeTurn : Effect.void))

/** Work that may pause: a generator that `yield`s where the event loop may take a turn. */
export type Pausable<A> = Generator<void, A, void>

/** Runs pausable work to its end without pausing (repair, undo, tools and tests). */
export const runNow = <A>(work: Pausable<A>): A => {
  for (;;) {
    const next = work.next()
    if (next.done === true) return next.value
  }
}

/**
 * Runs pausable work, taking a turn of the event loop at a pause once 10 ms passed since the
 * last one; what the work throws becomes `onThrow`'s error. The caller decides what may run
 * meanwhile (locks) and keeps the work uninterruptible when stopping at a pause would strand it.
 */
export const runWithTurns = <A, E>(work: () => Pausable<A>, onThrow: (error: unknown) => E): Effect.Effect<A, E> =>
  Effect.suspend(() => {
    const running = work()
    const resume: Effect.Effect<A, E> = Effect.suspend(() => {
      try {
        for (;;) {
          const next = running.next()
          if (next.done === true) return Effect.succeed(next.value)
          if (turnDue()) return Effect.andThen(takeTurn, resume)
        }
      } catch (error) {
        return Effect.fail(onThrow(error))
      }
    })
    return resume
  })
