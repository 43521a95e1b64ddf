/**
 * A real `forkjoin` process held just before it takes its workspace lock for the n-th time: a
 * hook preloaded with `--require` says `forkjoin-test: lock <k>` on stderr before every attempt
 * to take `<workspace>/.forkjoin/lock.db` (the engine's `BEGIN IMMEDIATE`), and at the n-th it
 * blocks on a FIFO until the test releases it. So a test acts between what the process decided
 * before the lock (a join's admission, a resolve's plan) and what it checks under it, as an
 * event, with no sleeping.
 */
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { BIN, ROOT } from "../../packages/cli/test/helpers.ts"

const REACHED = (k: number) => `forkjoin-test: lock ${k}\n`

const HOOK = `
const fs = require("node:fs")
const Database = require("node:module").createRequire(${JSON.stringify(path.join(ROOT, "packages/cli/dist/forkjoin.cjs"))})("better-sqlite3")
const hold = Number(process.env.FORKJOIN_TEST_HOLD_LOCK)
const exec = Database.prototype.exec
let k = 0
Database.prototype.exec = function (sql) {
  if (sql === "BEGIN IMMEDIATE" && this.name.endsWith("/.forkjoin/lock.db")) {
    k += 1
    fs.writeSync(2, "forkjoin-test: lock " + k + "\\n")
    if (k === hold) fs.readFileSync(process.env.FORKJOIN_TEST_GATE)
  }
  return exec.apply(this, arguments)
}
`

/** One held `forkjoin` process. */
export interface Held {
  /** Resolves once the process is held before its n-th lock attempt. */
  readonly reached: Promise<void>
  /** The process's end: exit code, stdout and stderr without the hook's lines. */
  readonly ended: Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>
  /** Lets a held process go on (nothing when it never got there). */
  readonly release: () => Promise<void>
}

/**
 * Starts `forkjoin args` (in `dir`, which holds the hook and the gate) held before its `n`-th
 * workspace-lock attempt; `n = 0` never holds (the lines say how many attempts it made).
 */
export const startHeld = (dir: string, args: ReadonlyArray<string>, n: number, env: Record<string, string> = {}): Held => {
  const hook = path.join(dir, "lock-hold.cjs")
  if (!fs.existsSync(hook)) fs.writeFileSync(hook, HOOK)
  const gate = path.join(dir, `gate-${Math.random().toString(36).slice(2)}`)
  execFileSync("mkfifo", [gate])
  const { FORKJOIN_FAULT: _f, ...inherited } = process.env
  const child = spawn(process.execPath, ["--require", hook, BIN, ...args], {
    cwd: ROOT,
    env: { ...inherited, NO_COLOR: "1", FORCE_COLOR: "0", FORKJOIN_AUTONOMY: "bold", ...env, FORKJOIN_TEST_GATE: gate, FORKJOIN_TEST_HOLD_LOCK: String(n) },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  let isHeld = false
  let reached!: () => void
  const reachedP = new Promise<void>((resolve) => (reached = resolve))
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString()
    if (!isHeld && n > 0 && stderr.includes(REACHED(n))) {
      isHeld = true
      reached()
    }
  })
  const ended = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, stderr: stderr.replace(/^forkjoin-test: lock \d+\n/gm, "") }))
  )
  return { reached: reachedP, ended, release: () => (isHeld ? fs.promises.writeFile(gate, "go") : Promise.resolve()) }
}

/** How many workspace-lock attempts a finished held process made (from its hook's lines). */
export const lockAttempts = (stderrWithHook: string): number => (stderrWithHook.match(/^forkjoin-test: lock \d+$/gm) ?? []).length
