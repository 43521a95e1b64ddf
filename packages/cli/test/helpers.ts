/**
 * Test helpers for the CLI: temp workspaces, a byte-exact snapshot of a directory tree
 * (contents, symlink targets, modes), a runner that spawns the built bundle and a read-only
 * view of a patch history database.
 */
import Database from "better-sqlite3"
import { execFileSync, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { expect } from "vitest"
import { sealed } from "../../../test/support/fault.ts"

/** Repository root. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..")
/** The launcher users run (`node_modules/.bin/forkjoin` points here). */
export const BIN = path.join(ROOT, "packages/cli/bin/forkjoin.mjs")

/** Rebuilds the bundle from the current sources, so tests never run a stale dist (once per test run: test/globalSetup.ts). */
export const buildCli = (): void => {
  if (process.env["FORKJOIN_TEST_CLI_BUILT"] === "1") return
  execFileSync(process.execPath, [path.join(ROOT, "scripts/build.mjs")], { stdio: "inherit" })
}

/** One finished CLI run (`signal` is set when the process was killed, e.g. by a fault). */
export interface RunResult {
  readonly status: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs the CLI with `args`; `stdin` is piped in when given (an empty stdin otherwise), `env`
 * is added to the environment. `FORKJOIN_FAULT` is only set (sealed) when a test passes it.
 */
export const runCli = (
  args: ReadonlyArray<string>,
  options: { stdin?: string; cwd?: string; env?: Record<string, string> } = {}
): RunResult => {
  const { FORKJOIN_FAULT: _inherited, ...inherited } = process.env
  const r = spawnSync(process.execPath, [BIN, ...args], {
    input: options.stdin ?? "",
    cwd: options.cwd ?? ROOT,
    encoding: "utf8",
    // Keep colors and terminal detection out of assertions. Tests run plans in scratch
    // workspaces: mutating children at `bold` unless a test sets the level itself.
    env: sealed({ ...inherited, NO_COLOR: "1", FORCE_COLOR: "0", FORKJOIN_AUTONOMY: "bold", ...options.env })
  })
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr }
}

const MODEL_VARS = ["OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"]

/**
 * Runs the CLI without blocking this process (a model server in this process answers it), with
 * the provider variables of this environment left out and `env` added.
 */
export const runCliAsync = (args: ReadonlyArray<string>, env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !MODEL_VARS.includes(k) && k !== "FORKJOIN_FAULT"))
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { ...inherited, NO_COLOR: "1", FORCE_COLOR: "0", FORKJOIN_AUTONOMY: "bold", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    child.on("close", (status) => resolve({ status, stdout, stderr }))
  })

/**
 * `forkjoin apply`'s text output without its last line, `undo: forkjoin rollback patch:<8 hex>`
 * (the transaction shortened); "(no undo line)" is appended when that line is missing.
 */
export const appliedSummary = (stdout: string): string => {
  const undo = /undo: forkjoin rollback patch:[0-9a-f]{8}\n$/.exec(stdout)
  return undo === null ? `${stdout}(no undo line)` : stdout.slice(0, undo.index)
}

/** A command's stdout as exactly one JSON line, parsed (the `--json` contract). */
export const json = (stdout: string): any => {
  const lines = stdout.trimEnd().split("\n")
  expect(lines).toHaveLength(1)
  return JSON.parse(lines[0]!)
}

const sandboxes: Array<string> = []

/** A fresh temp directory holding `ws/` (the workspace) and `outside/`. */
export const makeSandbox = (): { readonly dir: string; readonly ws: string; readonly outside: string } => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-cli-")))
  sandboxes.push(dir)
  const ws = path.join(dir, "ws")
  const outside = path.join(dir, "outside")
  fs.mkdirSync(ws)
  fs.mkdirSync(outside)
  return { dir, ws, outside }
}

/** Removes every sandbox made so far. */
export const removeSandboxes = (): void => {
  for (const dir of sandboxes.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
}

/** Writes files (relative path → text) under `root`, creating parent directories. */
export const writeTree = (root: string, files: Record<string, string>): void => {
  for (const [rel, text] of Object.entries(files)) {
    const abs = path.join(root, rel)
    fs.mkdirSync(path.dirname(abs), { recursive: true })
    fs.writeFileSync(abs, text)
  }
}

/**
 * Every entry under `root` with its kind, mode and exact content (or link target), except the
 * top-level entries named in `exclude`.
 */
export const snapshotTree = (root: string, exclude: ReadonlyArray<string> = []): Record<string, string> => {
  const out: Record<string, string> = {}
  const walk = (dir: string): void => {
    for (const name of fs.readdirSync(dir).sort()) {
      const abs = path.join(dir, name)
      const rel = path.relative(root, abs).split(path.sep).join("/")
      if (exclude.includes(rel)) continue
      const st = fs.lstatSync(abs)
      const mode = (st.mode & 0o7777).toString(8)
      if (st.isSymbolicLink()) out[rel] = `link -> ${fs.readlinkSync(abs)}`
      else if (st.isDirectory()) {
        out[rel] = `dir ${mode}`
        walk(abs)
      } else out[rel] = `file ${mode} ${fs.readFileSync(abs).toString("base64")}`
    }
  }
  walk(root)
  return out
}

/** Builds a patch from body lines. */
export const patch = (...lines: ReadonlyArray<string>): string =>
  ["*** Begin Patch", ...lines, "*** End Patch", ""].join("\n")

/**
 * The user-visible workspace: `snapshotTree` without forkjoin's own `.forkjoin/` directory
 * (history and lock databases), which any engine run may create.
 */
export const workspaceTree = (ws: string): Record<string, string> => snapshotTree(ws, [".forkjoin"])

/** Relative paths (POSIX) of every non-directory entry under `root` whose name matches `name`. */
export const findEntries = (root: string, name: RegExp): Array<string> => {
  const found: Array<string> = []
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const abs = path.join(dir, entry.name)
      if (entry.isDirectory()) walk(abs)
      else if (name.test(entry.name)) found.push(path.relative(root, abs).split(path.sep).join("/"))
    }
  }
  walk(root)
  return found.sort()
}

/** The default history database of a workspace. */
export const defaultDb = (ws: string): string => path.join(ws, ".forkjoin", "history.db")

/** What a history database holds, read without writing to it. */
export interface HistoryContents {
  /** `records.record_json`, parsed, in commit order. */
  readonly records: ReadonlyArray<unknown>
  /** Journal intents by status (`open`, `committed`, `aborted`, `uncertain`). */
  readonly intents: Readonly<Record<string, number>>
}

/** Opens `file` read-only (it must exist) and reads its records and journal intents. */
export const readHistory = (file: string): HistoryContents => {
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    const rows = db.prepare("SELECT record_json FROM records ORDER BY commit_ordinal").all() as Array<{ record_json: string }>
    const statuses = db.prepare("SELECT status, count(*) AS n FROM intents GROUP BY status").all() as Array<{
      status: string
      n: number
    }>
    return {
      records: rows.map((r) => JSON.parse(r.record_json) as unknown),
      intents: Object.fromEntries(statuses.map((s) => [s.status, s.n]))
    }
  } finally {
    db.close()
  }
}

/** `id` with each UUID cut to its first 8 characters, as text output shows an id no other UUID shares a prefix with. */
export const short8 = (id: string): string => id.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (u) => u.slice(0, 8))
