/** A child process racing the test (an attacker swapping files): started once its first swap is done, killed at the end. */
import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * Runs the CommonJS `script` (written into `dir`) with `args` and resolves once it prints its
 * first line, which must be `ready` (the event itself, no sleeping).
 */
export const startSwapper = async (script: string, dir: string, args: ReadonlyArray<string>): Promise<ChildProcess> => {
  const file = path.join(dir, "swapper.cjs")
  fs.writeFileSync(file, script)
  const child = spawn(process.execPath, [file, ...args], { stdio: ["ignore", "pipe", "inherit"] })
  const [chunk] = (await once(child.stdout!, "data")) as [Buffer]
  if (chunk.toString().trim() !== "ready") throw new Error(`the swapper said ${JSON.stringify(chunk.toString())}, not ready`)
  return child
}

/** Kills a swapper and waits for it to exit. */
export const stopSwapper = async (child: ChildProcess): Promise<void> => {
  if (child.exitCode !== null) return
  const exited = once(child, "exit")
  child.kill("SIGKILL")
  await exited
}
