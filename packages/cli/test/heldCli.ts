/**
 * For tests of what other commands do beside a live forkjoin process: a built `forkjoin` process
 * against a loopback model server that holds one answer until the test releases it, and
 * folders dated back (what `gc --older-than` reads).
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { type Conversation, startModelServer, type Turn } from "../../drivers/test/support/modelServer.ts"
import { BIN, ROOT } from "./helpers.ts"

const DAY = 86_400_000

/** Dates every entry below `dir` (and `dir` itself) back by `days`. */
export const ageFiles = (dir: string, days: number): void => {
  const at = new Date(Date.now() - days * DAY)
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const abs = path.join(dir, e.name)
    if (e.isDirectory()) ageFiles(abs, days)
    else fs.utimesSync(abs, at, at)
  }
  fs.utimesSync(dir, at, at)
}

/** A `forkjoin` process held at one model answer: release it, signal it (SIGKILL unless told), or wait for its end. */
export interface HeldCli {
  readonly release: () => void
  readonly kill: (signal?: NodeJS.Signals) => void
  readonly ended: () => Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null; readonly stdout: string; readonly stderr: string }>
}

/**
 * Starts `forkjoin ...args` (in `ROOT`, no model variables inherited but the loopback server's,
 * mutating children at `bold`) against a model answering `script(c, hold)`; `hold(turn)` is the
 * answer `turn` given only once `release` is called. Resolves once a held request reached the
 * model; fails if the process ended first.
 */
export const startHeldCli = async (
  args: ReadonlyArray<string>,
  script: (c: Conversation, hold: (turn: Turn) => Turn) => Turn
): Promise<HeldCli> => {
  let reached!: () => void
  const reachedModel = new Promise<void>((resolve) => (reached = resolve))
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  const hold = (turn: Turn): Turn => {
    reached()
    return { later: released.then(() => turn) }
  }
  const server = await startModelServer("openai", (c) => script(c, hold))
  const { FORKJOIN_FAULT: _f, OPENAI_API_KEY: _k, ...inherited } = process.env
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...inherited, NO_COLOR: "1", FORCE_COLOR: "0", FORKJOIN_AUTONOMY: "bold", OPENAI_BASE_URL: server.url },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("close", (code, signal) => resolve({ code, signal })))
  await Promise.race([reachedModel, exited.then(() => Promise.reject(new Error(`forkjoin ${args[0]} ended before the held answer: ${stdout}${stderr}`)))])
  return {
    release,
    kill: (signal = "SIGKILL") => child.kill(signal),
    ended: async () => {
      const r = await exited
      await server.close()
      return { ...r, stdout, stderr }
    }
  }
}
