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
 * Sends `signal` (default SIGKILL) to the process group of `child`, spawned `detached` (its own
 * group), so its grandchildren end too; a child that never started, or a group already gone, is left.
 *
 * @category constructors
 * @since 0.1.0
 */
export const killGroup = (child: ChildProcess, signal: NodeJS.Signals = "SIGKILL"): void => {
  // Never 0 or 1: `kill(-0)` is the caller's own group, `kill(-1)` every process it may signal.
  if (child.pid === undefined || child.pid <= 1) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    // ESRCH: every process of the group has ended.
  }
}
