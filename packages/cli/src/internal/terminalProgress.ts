/**
 * The engine's progress shown to a person at a terminal: one updating stderr line ("staging
 * 1,024/10,000") for long work, and one "waiting for the workspace lock…" line when another
 * process holds the lock for more than a second. Only on a terminal and never with `--json`
 * (`forStderr` decides); the engine's events and their throttling are `@forkjoin/engine/Progress`.
 *
 * @since 0.1.0
 */
import { CurrentListener, type ProgressEvent, type ProgressListener } from "@forkjoin/engine/Progress"
import * as Effect from "effect/Effect"

/**
 * A request touching at least this many paths shows its stages from the start.
 *
 * @category models
 * @since 0.1.0
 */
export const SHOW_FROM_PATHS = 1_000

/**
 * Any other request shows its stages once it has run this long.
 *
 * @category models
 * @since 0.1.0
 */
export const SHOW_AFTER_MS = 1_000

/**
 * The line printed once when the workspace lock wait passes `SHOW_AFTER_MS`.
 *
 * @category models
 * @since 0.1.0
 */
export const LOCK_WAIT_LINE = "waiting for the workspace lock held by another forkjoin process…"

/** A repaint of the same stage is skipped within this many milliseconds (its last count is always shown). */
const REPAINT_MS = 50

const count = (n: number): string => n.toLocaleString("en-US")

/**
 * The status-line text of one event (`LockWaiting` has its own line: undefined).
 *
 * @category combinators
 * @since 0.1.0
 */
export const describeProgress = (event: ProgressEvent): string | undefined => {
  switch (event._tag) {
    case "Resolving":
      return `resolving ${count(event.paths)} paths…`
    case "Planning":
      return `planning ${count(event.paths)} paths…`
    case "LockWaiting":
      return undefined
    case "Checking":
      return `checking ${count(event.files)} files…`
    case "Journaling":
      return `journaling ${count(event.files)} files…`
    case "Staging":
      return `staging ${count(event.done)}/${count(event.total)}`
    case "Committing":
      return `committing ${count(event.done)}/${count(event.total)}`
    case "Recording":
      return `recording ${count(event.files)} files…`
  }
}

/**
 * A status line over `write`: `listener` hears the engine, `finish` erases the line (call it
 * before printing the result).
 *
 * @category models
 * @since 0.1.0
 */
export interface StatusLine {
  readonly listener: ProgressListener
  readonly finish: () => void
}

/**
 * A status line writing to `write` (a terminal), timed by `now`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeStatusLine = (write: (text: string) => void, now: () => number = Date.now): StatusLine => {
  const start = now()
  let large = false
  let lockSaid = false
  // Painted with `\r` and spaces, no escape codes: works on any terminal and under NO_COLOR.
  let painted = 0
  let lastTag: string | undefined
  let lastPaint = -Infinity
  const erase = () => {
    if (painted > 0) write(`\r${" ".repeat(painted)}\r`)
    painted = 0
  }
  const listener: ProgressListener = (event) => {
    const t = now()
    if (event._tag === "LockWaiting") {
      if (!lockSaid && event.waitedMs >= SHOW_AFTER_MS) {
        lockSaid = true
        erase()
        write(`${LOCK_WAIT_LINE}\n`)
      }
      return
    }
    if (event._tag === "Resolving" && event.paths >= SHOW_FROM_PATHS) large = true
    if (!large && t - start < SHOW_AFTER_MS) return
    const last = (event._tag === "Staging" || event._tag === "Committing") && event.done === event.total
    if (event._tag === lastTag && !last && t - lastPaint < REPAINT_MS) return
    lastTag = event._tag
    lastPaint = t
    const text = describeProgress(event) ?? ""
    write(`\r${text}${" ".repeat(Math.max(0, painted - text.length))}`)
    painted = Math.max(painted, text.length)
  }
  return { listener, finish: erase }
}

/**
 * The status line of a command on this process's stderr, or undefined with `--json` or when
 * stderr is not a terminal (then nothing extra is ever printed).
 *
 * @category constructors
 * @since 0.1.0
 */
export const forStderr = (json: boolean): StatusLine | undefined =>
  json || process.stderr.isTTY !== true ? undefined : makeStatusLine((text) => process.stderr.write(text))

/**
 * Runs `effect` (which builds and uses an engine) with the stderr status line listening, and
 * erases the line when it ends, before its result or failure is printed.
 *
 * @category combinators
 * @since 0.1.0
 */
export const withStatusLine = (json: boolean) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    const line = forStderr(json)
    return line === undefined
      ? effect
      : effect.pipe(Effect.provideService(CurrentListener, line.listener), Effect.ensuring(Effect.sync(line.finish)))
  })
