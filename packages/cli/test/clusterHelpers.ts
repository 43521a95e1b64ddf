/**
 * The CLI's cluster tests' parts: runner processes (`forkjoin runner --json` from the built
 * bundle, waited on until it prints that it joined or exits, its stderr (effect's logs) kept in
 * a file so a test blocked on a synchronous run never stalls it, SIGKILLed after the file), the
 * plan they run, and the comparison of a cluster run with the same run here.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import * as fs from "node:fs"
import * as path from "node:path"
import { createInterface } from "node:readline"
import { afterAll, expect } from "vitest"
import { sealed } from "../../../test/support/fault.ts"
import { freePort } from "../../../test/support/ports.ts"
import { BIN, defaultDb, json, readHistory, ROOT, runCli, workspaceTree } from "./helpers.ts"
import { editTask, makeCase, planOf } from "./joinHelpers.ts"

/** A started runner: its process, advertised address and a way to read its log. */
export interface CliRunner {
  readonly child: ChildProcess
  readonly address: string
  readonly log: () => string
  /** Resolves once the process has exited (by itself or killed). */
  readonly gone: Promise<void>
}

const started: Array<CliRunner> = []

afterAll(async () => {
  for (const r of started.splice(0)) {
    r.child.kill("SIGKILL")
    await r.gone
  }
})

/** Starts `forkjoin runner --cluster URL --port P --json` (logs in `dir`, run in `cwd`); resolves when it joined. */
export const startRunner = async (cluster: string, dir: string, env: Record<string, string> = {}, cwd = ROOT): Promise<CliRunner> => {
  const port = await freePort()
  const logFile = path.join(dir, `runner-${port}.log`)
  const fd = fs.openSync(logFile, "w")
  const { FORKJOIN_FAULT: _inherited, ...inherited } = process.env
  const child = spawn(process.execPath, [BIN, "runner", "--cluster", cluster, "--port", String(port), "--json"], {
    cwd,
    env: sealed({ ...inherited, NO_COLOR: "1", ...env }),
    stdio: ["ignore", "pipe", fd]
  })
  fs.closeSync(fd)
  const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const runner: CliRunner = { child, address: `127.0.0.1:${port}`, log: () => fs.readFileSync(logFile, "utf8"), gone }
  started.push(runner)
  const lines = createInterface({ input: child.stdout! })
  const first = await Promise.race([
    once(lines, "line").then(([line]) => String(line)),
    gone.then(() => undefined)
  ])
  if (first === undefined) throw new Error(`the runner exited before it joined: ${runner.log()}`)
  const said = JSON.parse(first) as { readonly runner: string }
  if (said.runner !== runner.address) throw new Error(`the runner said ${first}`)
  return runner
}

/** `n` numbered lines tagged `tag`. */
export const lines = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i + 1}`).join("\n") + "\n"

/** The workspace the cluster tests start from. */
export const FILES = {
  "src/a.txt": lines(8, "a"),
  "src/b.txt": lines(8, "b"),
  "src/c.txt": lines(3, "c"),
  "src/d.txt": lines(3, "d"),
  "src/e.txt": lines(4, "e"),
  "scripts/run.sh": "#!/bin/sh\necho one\n"
}

/** A plan exercising merges, a conflict, adds, deletes, a move, a refused edit and a reader. */
export const PLAN = planOf([
  editTask("top", ["src/a.txt"], ["*** Update File: src/a.txt", "@@", " a1", "-a2", "+A2"]),
  editTask("bottom", ["src/a.txt"], ["*** Update File: src/a.txt", "@@", " a6", "-a7", "+A7"]),
  editTask("x", ["src/b.txt"], ["*** Update File: src/b.txt", "@@", " b2", "-b3", "+X3"]),
  editTask("y", ["src/b.txt"], ["*** Update File: src/b.txt", "@@", " b2", "-b3", "+Y3"]),
  editTask("add", ["src/new"], ["*** Add File: src/new/n.txt", "+new"]),
  editTask("del", ["src/c.txt"], ["*** Delete File: src/c.txt"]),
  editTask("mv", ["src/d.txt", "src/moved"], ["*** Update File: src/d.txt", "*** Move to: src/moved/d.txt", "@@", "-d1", "+D1"]),
  editTask("twice", ["src/e.txt"], ["*** Update File: src/e.txt", "@@", "-e1", "+E1"], ["*** Update File: src/e.txt", "@@", " E1", "-e2", "+E2"]),
  editTask("script", ["scripts"], ["*** Update File: scripts/run.sh", "@@", "-echo one", "+echo two"]),
  editTask("outside", ["src/e.txt"], ["*** Update File: src/a.txt", "@@", "-a1", "+nope"]),
  { id: "look", mode: "read_only", actions: [{ read_file: { path: "src/a.txt" } }, { list_dir: { path: "src" } }, { read_file: { path: "src/absent.txt" } }, { finish: {} }] }
])

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g
const TIME = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g

/** `value` as JSON with what differs between two runs by nature (ids, times, folders, where it ran) replaced. */
export const comparable = (value: unknown, ws: string): unknown =>
  JSON.parse(
    JSON.stringify(value, (key, v) => (key === "ranOn" || key === "artifacts" || key === "environmentId" ? undefined : v))
      .split(ws).join("<ws>")
      .replace(UUID, "<id>")
      .replace(TIME, "<time>")
  )

/** A workspace's history, `comparable`. */
export const historyOf = (ws: string) => comparable(readHistory(defaultDb(ws)), ws)


/**
 * `PLAN` run here and on `cluster` in two fresh workspaces; fails the test unless both give the
 * same exit status, workspace bytes, outcomes, conflicts, children's steps and history.
 */
export const expectSameAsLocal = (cluster: string) => {
  const local = makeCase(FILES, PLAN)
  const remote = makeCase(FILES, PLAN)
  for (const c of [local, remote]) fs.chmodSync(path.join(c.ws, "scripts/run.sh"), 0o755)
  const ranHere = runCli(["run", local.planFile, "--workspace", local.ws, "--json"])
  const ranThere = runCli(["run", remote.planFile, "--workspace", remote.ws, "--cluster", cluster, "--json"])
  expect(ranThere.status, ranThere.stderr).toBe(ranHere.status)
  const [here, there] = [json(ranHere.stdout), json(ranThere.stdout)]
  expect(workspaceTree(remote.ws)).toEqual(workspaceTree(local.ws))
  for (const key of ["mergeExecution", "conflicts", "results"]) expect(comparable(there[key], remote.ws)).toEqual(comparable(here[key], local.ws))
  expect(historyOf(remote.ws)).toEqual(historyOf(local.ws))
  return { local, remote, here, there }
}
