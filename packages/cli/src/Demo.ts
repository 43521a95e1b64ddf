/**
 * `forkjoin demo`: the main fork/join job on an embedded sample workspace. Not available
 * yet: it arrives with the orchestrator issue, and until then it only says so. The flags
 * and help text are in `DemoCommand.ts`.
 *
 * @since 0.1.0
 */
import * as Console from "effect/Console"

/**
 * What `forkjoin demo` prints today.
 *
 * @category models
 * @since 0.1.0
 */
export const notYetAvailable =
  "forkjoin demo is not available in this build yet.\n" +
  "It arrives with the orchestrator issue (\"Orchestrator & the transactional join\"): parallel children " +
  "staging changesets on an embedded sample workspace, joined transactionally by the native engine.\n" +
  "Today you can try 'forkjoin apply --help'."

/**
 * Runs the demo: prints that it is not available yet (exit 0).
 *
 * @category constructors
 * @since 0.1.0
 */
export const demo = Console.log(notYetAvailable)
