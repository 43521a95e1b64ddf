/**
 * Real runner processes for the cluster tests: `runnerEntry.ts` bundled once (CommonJS, as the
 * CLI ships, native addons loaded from node_modules), started with `node`, each waited on until
 * it says it has joined (or why it refused), killed with SIGKILL when a test says so.
 */
import { afterAll, beforeAll } from "@effect/vitest"
import * as esbuild from "esbuild"
import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..")

/** Bundles the runner entry into `dir`; returns the script to run. */
export const buildRunner = async (dir: string): Promise<string> => {
  const outfile = path.join(dir, "runner.cjs")
  await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: [path.join(ROOT, "packages/cluster/test/support/runnerEntry.ts")],
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    outfile,
    external: JSON.parse(fs.readFileSync(path.join(ROOT, "scripts/native-addons.json"), "utf8")),
    logLevel: "error"
  })
  return outfile
}

/** A folder for one test's files. */
export const tempDir = (): string => fs.mkdtempSync(path.join(os.tmpdir(), "fj-cluster-"))


/** What a runner process said on its first line. */
export type Said =
  | { readonly ready: { readonly pid: number; readonly startMs: number } }
  | { readonly error: { readonly tag: string; readonly code?: string; readonly message: string } }

/** A started runner process. */
export interface RunnerProcess {
  readonly child: ChildProcess
  readonly port: number
  readonly said: Said
  /** What it printed on stdout and stderr (effect's logs, crashes). */
  readonly stderr: () => string
  /** SIGKILL, resolved once the process is gone. */
  readonly kill9: () => Promise<void>
}

/** Starts `script` with `options` and resolves once it printed its first line. */
export const startRunner = async (
  script: string,
  options: { readonly cluster: string; readonly port: number; readonly capacity?: number; readonly host?: string },
  cwd: string
): Promise<RunnerProcess> => {
  const full = { capacity: 1, host: "127.0.0.1", ...options }
  const child = spawn(process.execPath, [script, JSON.stringify(full)], {
    cwd,
    env: { ...process.env, NODE_PATH: path.join(ROOT, "node_modules") },
    stdio: ["ignore", "pipe", "pipe", "pipe"]
  })
  let stderr = ""
  const keep = (chunk: Buffer) => {
    stderr += chunk.toString()
  }
  child.stdout!.on("data", keep)
  child.stderr!.on("data", keep)
  const lines = createInterface({ input: child.stdio[3] as NodeJS.ReadableStream })
  const first = await Promise.race([
    once(lines, "line").then(([line]) => JSON.parse(String(line)) as Said),
    once(child, "exit").then(([code]) => {
      throw new Error(`the runner exited (${code}) before saying anything: ${stderr}`)
    })
  ])
  const gone = new Promise<void>((resolve) => child.exitCode !== null || child.signalCode !== null ? resolve() : child.once("exit", () => resolve()))
  return {
    child,
    port: full.port,
    said: first,
    stderr: () => stderr,
    kill9: async () => {
      child.kill("SIGKILL")
      await gone
    }
  }
}

/**
 * For one test file: the runner script, built before its tests, and the runners they start
 * (push each one), all SIGKILLed after the file.
 */
export const runnersForFile = (): { readonly script: () => string; readonly started: Array<RunnerProcess> } => {
  let script = ""
  const started: Array<RunnerProcess> = []
  beforeAll(async () => {
    script = await buildRunner(tempDir())
  }, 60_000)
  afterAll(async () => {
    await Promise.all(started.map((r) => r.kill9()))
  })
  return { script: () => script, started }
}
