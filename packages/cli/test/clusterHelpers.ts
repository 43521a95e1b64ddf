/**
 * Runner processes for the CLI's cluster tests: `forkjoin runner --json` from the built bundle,
 * waited on until it prints that it joined (or exits), its stderr (effect's logs) kept in a file
 * so a test blocked on a synchronous run never stalls it, and SIGKILLed after the file.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { createInterface } from "node:readline"
import { afterAll } from "vitest"
import { sealed } from "../../../test/support/fault.ts"
import { BIN, ROOT } from "./helpers.ts"

/** A loopback port free right now (the kernel's pick; released before the runner binds it). */
export const freePort = async (): Promise<number> => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1")
  await once(server, "listening")
  const port = (server.address() as net.AddressInfo).port
  server.close()
  await once(server, "close")
  return port
}

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

/** Starts `forkjoin runner --cluster URL --port P --json` in `dir`; resolves when it joined. */
export const startRunner = async (cluster: string, dir: string, env: Record<string, string> = {}): Promise<CliRunner> => {
  const port = await freePort()
  const logFile = path.join(dir, `runner-${port}.log`)
  const fd = fs.openSync(logFile, "w")
  const { FORKJOIN_FAULT: _inherited, ...inherited } = process.env
  const child = spawn(process.execPath, [BIN, "runner", "--cluster", cluster, "--port", String(port), "--json"], {
    cwd: ROOT,
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
