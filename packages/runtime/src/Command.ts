/**
 * Running a check command (a plan's `verify`, a task's `childVerify`): argv, no shell, in a
 * process group of its own. At the time limit the whole group is killed; the outcome is
 * decided when the command itself exits, never by when its output pipes close (a background
 * process it left holds them open: it is ended too). The last output lines are kept.
 *
 * Owns spawning, the deadline, the group kill and the output tail. Does not own what a
 * result means to its caller (the join's rollback, a child's failed attempt) or its log file.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { type ChildProcess, spawn } from "node:child_process"

/** Lines of output kept from a run. */
export const TAIL_LINES = 40

/**
 * How long output is still read after the command exited and its group was killed: only a
 * process that left the group (its own session) can hold the pipes that long.
 */
const DRAIN_MS = 1000

/**
 * How a command ended: `passed` (exit 0 within the limit), `failed` (another exit code or a
 * signal), `timed_out` (its group was killed at the limit), or `not_started` (it could not be
 * spawned: an absent binary, an argument Node refuses).
 *
 * @category models
 * @since 0.1.0
 */
export type CommandResult =
  | { readonly _tag: "passed"; readonly tail: ReadonlyArray<string> }
  | { readonly _tag: "failed"; readonly code: number | null; readonly signal: NodeJS.Signals | null; readonly tail: ReadonlyArray<string> }
  | { readonly _tag: "timed_out"; readonly timeoutMs: number; readonly tail: ReadonlyArray<string> }
  | { readonly _tag: "not_started"; readonly error: Error; readonly tail: ReadonlyArray<string> }

/**
 * What to run: `argv[0]` is looked up on `PATH` (or is a path, relative to `cwd`), no shell.
 *
 * @category models
 * @since 0.1.0
 */
export interface CommandOptions {
  readonly argv: readonly [string, ...Array<string>]
  readonly cwd: string
  readonly timeoutMs: number
}

/**
 * Sends SIGKILL to the process group of `child`, spawned `detached` (its own group), so its
 * grandchildren end too; a child that never started, or a group already gone, is left.
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

/**
 * Runs `options.argv` in `options.cwd` in a process group of its own and ends with how it
 * ended and its last `TAIL_LINES` output lines (stdout and stderr interleaved). Never fails;
 * interrupting it kills the group.
 *
 * @category constructors
 * @since 0.1.0
 */
export const run = (options: CommandOptions): Effect.Effect<CommandResult> =>
  Effect.callback<CommandResult>((resume) => {
    const [command, ...args] = options.argv
    const output: Array<string> = []
    const keep = (chunk: Buffer) => {
      output.push(...chunk.toString("utf8").split(/\r?\n/))
      if (output.length > TAIL_LINES * 4) output.splice(0, output.length - TAIL_LINES)
    }
    // A trailing newline leaves one empty last element: not a line of output.
    const tail = () => output.filter((l, i) => l !== "" || i < output.length - 1).slice(-TAIL_LINES)
    let proc: ChildProcess
    try {
      // `detached`: the command leads a new process group, so a kill reaches what it started.
      proc = spawn(command, args, { cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"], detached: true })
    } catch (e) {
      // Arguments Node refuses outright (a NUL byte): the caller's input is at fault, not us.
      resume(Effect.succeed({ _tag: "not_started", error: e instanceof Error ? e : new Error(String(e)), tail: [] }))
      return
    }
    type Decided = CommandResult extends infer R ? R extends CommandResult ? Omit<R, "tail"> : never : never
    let decided: Decided | undefined
    let reported = false
    let timedOut = false
    let closed = 0
    let drain: ReturnType<typeof setTimeout> | undefined
    const report = () => {
      if (reported || decided === undefined) return
      reported = true
      clearTimeout(drain)
      proc.stdout?.destroy()
      proc.stderr?.destroy()
      const result: CommandResult = { ...decided, tail: tail() }
      resume(Effect.succeed(result))
    }
    // The outcome is fixed here; the tail waits for the output still in the pipes.
    const decide = (d: Decided) => {
      if (decided !== undefined) return
      decided = d
      clearTimeout(timer)
      killGroup(proc)
      drain = setTimeout(report, DRAIN_MS)
      if (closed === 2) report()
    }
    const timer = setTimeout(() => {
      timedOut = true
      killGroup(proc)
    }, options.timeoutMs)
    for (const stream of [proc.stdout, proc.stderr]) {
      stream?.on("data", keep)
      stream?.on("close", () => {
        closed += 1
        if (closed === 2) report()
      })
    }
    proc.on("error", (error) => decide({ _tag: "not_started", error }))
    proc.on("exit", (code, signal) => {
      if (timedOut) decide({ _tag: "timed_out", timeoutMs: options.timeoutMs })
      else if (code === 0) decide({ _tag: "passed" })
      else decide({ _tag: "failed", code, signal })
    })
    return Effect.sync(() => {
      clearTimeout(timer)
      clearTimeout(drain)
      killGroup(proc)
    })
  })

/**
 * How it ended in a few words, e.g. `exit 3`, `signal SIGTERM`, `timed out after 200 ms`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const describeEnd = (result: CommandResult): string => {
  switch (result._tag) {
    case "passed":
      return "exit 0"
    case "failed":
      return result.code === null ? `signal ${result.signal}` : `exit ${result.code}`
    case "timed_out":
      return `timed out after ${result.timeoutMs} ms`
    case "not_started":
      return `could not start (${result.error.message})`
  }
}
