/**
 * The verified join (a plan's `verify` command): after a child's transaction the command runs
 * in the workspace; exit 0 within the time limit passes, anything else fails and the join
 * rolls that child back. The command's last output lines are kept in the child's artifacts.
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
import { killChild } from "./ChildProcesses.ts"

/** Lines of output kept from a verification run. */
const TAIL_LINES = 40

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
 * Where a child's verification log goes: `<run>/subagents/<task-id>/verify.log`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const logFile = (runDirectory: string, childId: TaskId): string => path.join(runDirectory, "subagents", childId, "verify.log")

/**
 * Runs `verify.command` in `cwd` (no shell), kills it at the time limit, writes the last
 * output lines to `log`. Never fails: a command that cannot start is a failed verification.
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
    const finish = (ok: boolean, summary: string) => {
      const tail = output.filter((l, i) => l !== "" || i < output.length - 1).slice(-TAIL_LINES)
      try {
        fs.mkdirSync(path.dirname(log), { recursive: true })
        fs.writeFileSync(log, [`$ ${verify.command.join(" ")}`, ...tail, `# ${summary}`].join("\n") + "\n")
      } catch {
        // The log is a convenience; the outcome does not depend on it.
      }
      resume(Effect.succeed({ ok, summary, log }))
    }
    let timedOut = false
    const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"] })
    const timer = setTimeout(() => {
      timedOut = true
      killChild(child)
    }, verify.timeoutMs)
    child.stdout.on("data", keep)
    child.stderr.on("data", keep)
    child.on("error", (e) => {
      clearTimeout(timer)
      finish(false, `verification command '${command}' could not start (${e.message})`)
    })
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      if (timedOut) finish(false, `verification timed out after ${verify.timeoutMs} ms`)
      else if (code === 0) finish(true, "verification passed")
      else finish(false, `verification failed (${code === null ? `signal ${signal}` : `exit ${code}`})`)
    })
    return Effect.sync(() => {
      clearTimeout(timer)
      killChild(child)
    })
  })
