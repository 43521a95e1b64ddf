/**
 * A real `forkjoin` process held at one SQL statement: a hook preloaded with `--require` wraps
 * better-sqlite3's statement `get` or `all` and, at the first call on a statement whose SQL
 * matches, before or after it runs, says so on stderr (a pipe: written at once) and blocks until
 * the test writes to the process's gate FIFO. So a test holds several processes at the same
 * point and lets them go together, as an event, with no sleeping.
 */
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { BIN, ROOT } from "../../packages/cli/test/helpers.ts"

/** Where a hook holds its process: the first `method` call on a statement whose SQL matches `source`. */
export interface HoldPoint {
  readonly method: "get" | "all"
  readonly source: RegExp
  /** Hold once the call returned (what it read is then the process's), not before it runs. */
  readonly after: boolean
  /** Said on stderr when the process is held there. */
  readonly reached: string
}

/** Writes the hook holding at `point` as `file`, for `node --require file`. */
export const writeHoldHook = (file: string, point: HoldPoint): void =>
  fs.writeFileSync(file, `
const fs = require("node:fs")
const Database = require("node:module").createRequire(${JSON.stringify(path.join(ROOT, "packages/cli/dist/forkjoin.cjs"))})("better-sqlite3")
const probe = new Database(":memory:")
const proto = Object.getPrototypeOf(probe.prepare("SELECT 1"))
probe.close()
const original = proto[${JSON.stringify(point.method)}]
const source = new RegExp(${JSON.stringify(point.source.source)})
let held = false
const hold = () => {
  held = true
  fs.writeSync(2, ${JSON.stringify(point.reached)})
  fs.readFileSync(process.env.FORKJOIN_TEST_GATE)
}
proto[${JSON.stringify(point.method)}] = function (...params) {
  const due = !held && source.test(this.source)
  if (due && !${point.after}) hold()
  const out = original.apply(this, params)
  if (due && ${point.after}) hold()
  return out
}
`)

/** A process started with a hold hook: `reached` once held, `ended` with its output, `release` to let it go. */
export interface Held {
  readonly reached: Promise<void>
  readonly ended: Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>
  readonly release: () => Promise<void>
}

/**
 * `forkjoin ...args` with the hook `hook` (written for `point`), its gate FIFO `gate-<k>` in
 * `dir`; no fault injected.
 */
export const startHeld = (dir: string, k: number, hook: string, point: HoldPoint, args: ReadonlyArray<string>): Held => {
  const gate = path.join(dir, `gate-${k}`)
  execFileSync("mkfifo", [gate])
  const { FORKJOIN_FAULT: _f, ...inherited } = process.env
  const child = spawn(process.execPath, ["--require", hook, BIN, ...args], {
    cwd: ROOT,
    env: { ...inherited, NO_COLOR: "1", FORCE_COLOR: "0", FORKJOIN_TEST_GATE: gate },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  let reached!: () => void
  const reachedP = new Promise<void>((resolve) => (reached = resolve))
  let isHeld = false
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString()
    if (!isHeld && stderr.includes(point.reached)) {
      isHeld = true
      reached()
    }
  })
  const ended = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, stderr: stderr.replace(point.reached, "") }))
  )
  return { reached: reachedP, ended, release: () => (isHeld ? fs.promises.writeFile(gate, "go") : Promise.resolve()) }
}
