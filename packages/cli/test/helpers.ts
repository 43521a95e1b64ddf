/**
 * Test helpers for the CLI: temp workspaces, a byte-exact snapshot of a directory tree
 * (contents, symlink targets, modes) and a runner that spawns the built bundle.
 */
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** Repository root. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..")
/** The launcher users run (`node_modules/.bin/forkjoin` points here). */
export const BIN = path.join(ROOT, "packages/cli/bin/forkjoin.mjs")

/** Rebuilds the bundle from the current sources, so tests never run a stale dist. */
export const buildCli = (): void => {
  execFileSync(process.execPath, [path.join(ROOT, "scripts/build.mjs")], { stdio: "inherit" })
}

/** One finished CLI run. */
export interface RunResult {
  readonly status: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the CLI with `args`; `stdin` is piped in when given (an empty stdin otherwise). */
export const runCli = (args: ReadonlyArray<string>, options: { stdin?: string; cwd?: string } = {}): RunResult => {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    input: options.stdin ?? "",
    cwd: options.cwd ?? ROOT,
    encoding: "utf8",
    // Keep colors and terminal detection out of assertions.
    env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" }
  })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
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

/** Every entry under `root` with its kind, mode and exact content (or link target). */
export const snapshotTree = (root: string): Record<string, string> => {
  const out: Record<string, string> = {}
  const walk = (dir: string): void => {
    for (const name of fs.readdirSync(dir).sort()) {
      const abs = path.join(dir, name)
      const rel = path.relative(root, abs).split(path.sep).join("/")
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
