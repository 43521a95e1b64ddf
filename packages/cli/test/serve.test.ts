/**
 * `forkjoin serve` as a child process: the first stdout line (text and `--json`), the loopback
 * default and `--allow-remote`, a port in use, SIGTERM stopping it cleanly, `--open-url`'s
 * one-time code, `forkjoin apply --server URL`, and a server killed during an apply that
 * restarts and repairs.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sealed } from "../../../test/support/fault.ts"
import { BIN, buildCli, makeSandbox, removeSandboxes, runCli } from "./helpers.ts"

beforeAll(() => buildCli())
afterAll(() => removeSandboxes())

interface Server {
  readonly child: ChildProcess
  readonly firstLine: string
  readonly lines: Array<string>
  readonly stderr: () => string
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

const children: Array<ChildProcess> = []
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL")
})

/** Starts `forkjoin serve ARGS` and resolves once its first stdout line arrived (or it exited). */
const startServe = (args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<Server> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "serve", ...args], {
      env: sealed({ ...process.env, NO_COLOR: "1", ...env }),
      stdio: ["ignore", "pipe", "pipe"]
    })
    children.push(child)
    let out = ""
    let err = ""
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
      child.on("exit", (code, signal) => r({ code, signal }))
    )
    const lines: Array<string> = []
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString()
      const parts = out.split("\n")
      out = parts.pop()!
      lines.push(...parts)
      if (lines.length > 0) resolve({ child, firstLine: lines[0]!, lines, stderr: () => err, exited })
    })
    child.stderr!.on("data", (d: Buffer) => {
      err += d.toString()
    })
    void exited.then(({ code }) => {
      if (lines.length === 0) resolve({ child, firstLine: "", lines, stderr: () => err, exited })
      void code
    })
    child.on("error", reject)
  })

const tokenOf = (ws: string, thread = "cli") => {
  const r = runCli(["token", "create", "--thread", thread, "--workspace", ws, "--json"])
  expect(r.status).toBe(0)
  return JSON.parse(r.stdout) as { tokenId: string; token: string; thread: string; expiresAt: string }
}

describe("forkjoin serve", () => {
  it("GET /v1/cluster lists the cluster's runners (none here), or says there is no cluster; a token is needed", async () => {
    const { dir, ws } = makeSandbox()
    const cluster = `sqlite:${path.join(dir, "cluster.db")}`
    const withCluster = await startServe(["--workspace", ws, "--port", "0", "--json", "--cluster", cluster])
    const plain = await startServe(["--workspace", ws, "--port", "0", "--json", "--cluster", "none"])
    const { token } = tokenOf(ws)
    const get = async (s: Server, auth = true) => {
      const r = await fetch(`${JSON.parse(s.firstLine).url}/v1/cluster`, auth ? { headers: { authorization: `Bearer ${token}` } } : {})
      return { status: r.status, body: await r.json() }
    }
    expect(await get(withCluster)).toEqual({ status: 200, body: { url: cluster, runners: [], unhealthy: [] } })
    expect(await get(plain)).toEqual({ status: 200, body: { runners: [], unhealthy: [] } })
    expect((await get(withCluster, false)).status).toBe(401)
  }, 60_000)

  it("prints the listening line first, serves, and stops on SIGTERM with exit 130", async () => {
    const { ws } = makeSandbox()
    const s = await startServe(["--workspace", ws, "--port", "0"])
    expect(s.firstLine).toMatch(/^forkjoin serve: listening on http:\/\/127\.0\.0\.1:\d+$/)
    const url = s.firstLine.slice("forkjoin serve: listening on ".length)
    const api = await fetch(`${url}/openapi.json`)
    expect(api.status).toBe(200)
    expect((await fetch(`${url}/v1/whoami`)).status).toBe(401)
    const page = await fetch(`${url}/`)
    expect(page.headers.get("content-type")).toMatch(/text\/html/)
    s.child.kill("SIGTERM")
    const exit = await s.exited
    // Interrupted like any forkjoin command: 130, after the server and the database closed.
    expect(exit.code).toBe(130)
  })

  it("--json prints {\"url\"} and --open-url a one-time code the page exchanges for a session token", async () => {
    const { ws } = makeSandbox()
    const s = await startServe(["--workspace", ws, "--port", "0", "--json", "--open-url", "--thread", "ops"])
    const line = JSON.parse(s.firstLine) as { url: string; loginUrl: string }
    expect(line.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    const code = new URL(line.loginUrl).hash.slice("#code=".length)
    const exchange = (c: string) =>
      fetch(`${line.url}/auth/exchange`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ code: c }) })
    const first = await exchange(code)
    expect(first.status).toBe(200)
    const session = (await first.json()) as { token: string; thread: string }
    expect(session.thread).toBe("ops")
    const who = await fetch(`${line.url}/v1/whoami`, { headers: { authorization: `Bearer ${session.token}` } })
    expect(await who.json()).toEqual({ thread: "ops" })
    expect((await exchange(code)).status).toBe(401)
    s.child.kill("SIGTERM")
    await s.exited
  })

  it("refuses a non-loopback host without --allow-remote and a port in use (exit 2, nothing served)", async () => {
    const { ws } = makeSandbox()
    const remote = runCli(["serve", "--workspace", ws, "--host", "0.0.0.0", "--port", "0"])
    expect(remote.status).toBe(2)
    expect(remote.stderr).toMatch(/--allow-remote/)
    const s = await startServe(["--workspace", ws, "--port", "0"])
    const port = new URL(s.firstLine.slice("forkjoin serve: listening on ".length)).port
    const busy = runCli(["serve", "--workspace", ws, "--port", port])
    expect(busy.status).toBe(2)
    expect(busy.stderr).toMatch(new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}`))
    expect(runCli(["serve", "--workspace", ws, "--port", "70000"]).status).toBe(2)
    s.child.kill("SIGTERM")
    await s.exited
    const remoteOk = await startServe(["--workspace", ws, "--host", "0.0.0.0", "--allow-remote", "--port", "0"])
    expect(remoteOk.firstLine).toMatch(/^forkjoin serve: listening on http:\/\/0\.0\.0\.0:\d+$/)
    remoteOk.child.kill("SIGTERM")
    await remoteOk.exited
  })

  it("forkjoin apply --server URL applies through the running server with a token", async () => {
    const { ws } = makeSandbox()
    fs.writeFileSync(path.join(ws, "a.txt"), "one\n")
    const s = await startServe(["--workspace", ws, "--port", "0"])
    const url = s.firstLine.slice("forkjoin serve: listening on ".length)
    const { token } = tokenOf(ws)
    const patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch\n"
    const ok = runCli(["apply", "-", "--workspace", ws, "--server", url, "--json"], { stdin: patch, env: { FORKJOIN_TOKEN: token } })
    expect(ok.status).toBe(0)
    expect(JSON.parse(ok.stdout)).toMatchObject({ ok: true, record: { threadId: "cli", outcome: "applied" } })
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("two\n")
    const rejected = runCli(["apply", "-", "--workspace", ws, "--server", url, "--json"], { stdin: patch, env: { FORKJOIN_TOKEN: token } })
    expect(rejected.status).toBe(1)
    expect(JSON.parse(rejected.stdout)).toMatchObject({ ok: false, error: { code: "context_not_found" } })
    const noToken = runCli(["apply", "-", "--workspace", ws, "--server", url, "--json"], { stdin: patch, env: { FORKJOIN_TOKEN: "" } })
    expect(noToken.status).toBe(2)
    s.child.kill("SIGTERM")
    await s.exited
  })

  it("a server killed during an apply restarts and repairs: the workspace is back to its state before the apply", async () => {
    const { ws } = makeSandbox()
    fs.writeFileSync(path.join(ws, "a.txt"), "a\n")
    fs.writeFileSync(path.join(ws, "b.txt"), "b\n")
    const { token } = tokenOf(ws)
    const s = await startServe(["--workspace", ws, "--port", "0"], { FORKJOIN_FAULT: "commit:after-rename:1" })
    const url = s.firstLine.slice("forkjoin serve: listening on ".length)
    const patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: b.txt\n@@\n-b\n+B\n*** End Patch\n"
    const failed = await fetch(`${url}/v1/apply`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ patch, turn: "t" })
    }).then((r) => r.status, () => "connection lost")
    expect(failed).toBe("connection lost")
    expect((await s.exited).signal).toBe("SIGKILL")
    const again = await startServe(["--workspace", ws, "--port", "0"])
    expect(again.firstLine).toMatch(/^forkjoin serve: listening on /)
    expect(again.stderr()).toMatch(/repair/i)
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("a\n")
    expect(fs.readFileSync(path.join(ws, "b.txt"), "utf8")).toBe("b\n")
    again.child.kill("SIGTERM")
    await again.exited
  })
})
