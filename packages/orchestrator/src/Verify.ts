/**
 * The verified join (a plan's `verify` command): after a child's transaction the command runs
 * in the workspace; exit 0 within the time limit passes, anything else fails and the join
 * rolls that child back. The command runs in a process group of its own: at the time limit the
 * whole group is killed, and the outcome is decided when the command itself exits, never by
 * when its output pipes close (a background process it leaves keeps them open; it is ended
 * too). The command's last output lines are kept in the child's artifacts.
 *
 * Owns running the command and keeping its log. Does not own the rollback (`Rollback`).
 *
 * @since 0.1.0
 */
import type { TaskId, VerifyCommand } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { killGroup } from "./ChildProcesses.ts"

/** Lines of output kept from a verification run. */
const TAIL_LINES = 40

/**
 * How long output is still read after the command exited and its group was killed: only a
 * process that left the group (its own session) can hold the pipes that long.
 */
const DRAIN_MS = 1000

/**
 * The outcome of one verification: passed or not, a one-line summary and where the log is.
 *
 * @category models
 * @since 0.1.0
 */
export interface VerifyResult {
  readonly ok: boolean
  readonly summary: string
  readonly log: string
}

/**
 * Where a child's verification log goes: `<run>/subagents/<task-id>/verify.log`; an atomic
 * join's one verification (no `childId`) logs to `<run>/verify.log`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const logFile = (runDirectory: string, childId?: TaskId): string =>
  childId === undefined ? path.join(runDirectory, "verify.log") : path.join(runDirectory, "subagents", childId, "verify.log")

/**
 * Runs `verify.command` in `cwd` (no shell) in a process group of its own, kills the group at
 * the time limit, and decides when the command exits (then ends what it left running); writes
 * the last output lines to `log`. Never fails: a command that cannot start is a failed
 * verification.
 *
 * @category constructors
 * @since 0.1.0
 */
export const run = (verify: VerifyCommand, cwd: string, log: string): Effect.Effect<VerifyResult> =>
  Effect.callback<VerifyResult>((resume) => {
    const [command, ...args] = verify.command
    const output: Array<string> = []
    const keep = (chunk: Buffer) => {
      output.push(...chunk.toString("utf8").split(/\r?\n/))
      if (output.length > TAIL_LINES * 4) output.splice(0, output.length - TAIL_LINES)
    }
    let decided: { readonly ok: boolean; readonly summary: string } | undefined
    let reported = false
    let drain: ReturnType<typeof setTimeout> | undefined
    const report = () => {
      if (reported || decided === undefined) return
      reported = true
      clearTimeout(drain)
      proc.stdout?.destroy()
      proc.stderr?.destroy()
      const tail = output.filter((l, i) => l !== "" || i < output.length - 1).slice(-TAIL_LINES)
      try {
        fs.mkdirSync(path.dirname(log), { recursive: true })
        fs.writeFileSync(log, [`$ ${verify.command.join(" ")}`, ...tail, `# ${decided.summary}`].join("\n") + "\n")
      } catch {
        // The log is a convenience; the outcome does not depend on it.
      }
      resume(Effect.succeed({ ...decided, log }))
    }
    // The outcome is fixed here; the log waits for the output still in the pipes.
    const decide = (ok: boolean, summary: string) => {
      if (decided !== undefined) return
      decided = { ok, summary }
      clearTimeout(timer)
      killGroup(proc)
      drain = setTimeout(report, DRAIN_MS)
      if (closed === 2) report()
    }
    let timedOut = false
    let closed = 0
    // `detached`: the command leads a new process group, so a kill reaches what it started.
    const proc = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"], detached: true })
    const timer = setTimeout(() => {
      timedOut = true
      killGroup(proc)
    }, verify.timeoutMs)
    for (const stream of [proc.stdout, proc.stderr]) {
      stream.on("data", keep)
      stream.on("close", () => {
        closed += 1
        if (closed === 2) report()
      })
    }
    proc.on("error", (e) => decide(false, `verification command '${command}' could not start (${e.message})`))
    proc.on("exit", (code, signal) => {
      if (timedOut) decide(false, `verification timed out after ${verify.timeoutMs} ms`)
      else if (code === 0) decide(true, "verification passed")
      else decide(false, `verification failed (${code === null ? `signal ${signal}` : `exit ${code}`})`)
    })
    return Effect.sync(() => {
      clearTimeout(timer)
      clearTimeout(drain)
      killGroup(proc)
    })
  })
