/**
 * A worker process of the concurrency tests: it prints `ready` once its store is open, waits
 * for `go` on stdin (so every worker starts writing at once), and its output is collected.
 */
import { spawn } from "node:child_process"

/** A started worker: `ready` once it printed `ready`, `done` when it exits, `go` to release it. */
export interface Worker {
  readonly ready: Promise<void>
  readonly done: Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>
  readonly go: () => void
}

/** Runs the bundled worker script `script` with `args` under this Node. */
export const startWorker = (script: string, args: ReadonlyArray<string>): Worker => {
  const child = spawn(process.execPath, [script, ...args], { stdio: ["pipe", "pipe", "pipe"] })
  let stdout = ""
  let stderr = ""
  let onReady: () => void = () => {}
  const ready = new Promise<void>((resolve) => (onReady = resolve))
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8")
    if (stdout.startsWith("ready\n")) onReady()
  })
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", (code) => {
      onReady()
      resolve({ code, stdout, stderr })
    })
  )
  return { ready, done, go: () => child.stdin.end("go\n") }
}
