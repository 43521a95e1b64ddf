/**
 * Ending child processes safely. Node's `ChildProcess.kill` on a child whose spawn failed (a
 * missing command: no pid, the handle not yet closed) signals pid 0, which is the caller's whole
 * process group: the test runner, CI, the user's shell. Every kill of a child goes through here;
 * `killGroup` ends a detached child with every process it started.
 *
 * @since 0.1.0
 */
import type { ChildProcess } from "node:child_process"

/**
 * Sends `signal` (default SIGKILL) to `child` only when it started and has not ended yet.
 *
 * @category constructors
 * @since 0.1.0
 */
export const killChild = (child: ChildProcess, signal: NodeJS.Signals = "SIGKILL"): void => {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  child.kill(signal)
}

/**
 * Ends a detached child with its whole process group; the one copy lives with the command runner.
 *
 * @category constructors
 * @since 0.1.0
 */
export { killGroup } from "@forkjoin/runtime/Command"
