/**
 * The `forkjoin demo` command: its help text, wired to the program in `Demo.ts`.
 *
 * @since 0.1.0
 */
import { Command } from "effect/cli"
import * as Demo from "./Demo.ts"

/**
 * `forkjoin demo`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const demo = Command.make("demo", {}, () => Demo.demo).pipe(
  Command.withDescription(
    "Run the main job on an embedded sample workspace. Not available yet: it arrives with the orchestrator " +
      "issue (\"Orchestrator & the transactional join\"); today it only prints that and exits 0."
  ),
  Command.withShortDescription("Sample fork/join run (arrives with the orchestrator issue)")
)
