/**
 * The boundary flags through the built CLI: `forkjoin serve --host-name` (answered names, a bad
 * name refused at start) and `forkjoin token create --thread` held to the id rule.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, buildCli, makeWorkspace, runCli } from "./support.ts"

const w = makeWorkspace({ "a.txt": "one\n" })
const children: Array<ChildProcess> = []

beforeAll(() => buildCli())
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL")
  fs.rmSync(w.dir, { recursive: true, force: true })
})

/** Starts `forkjoin serve ARGS --json` and resolves to its URL once it printed it. */
const serve = (args: ReadonlyArray<string>): Promise<string> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "serve", "--workspace", w.ws, "--port", "0", "--json", ...args], { stdio: ["ignore", "pipe", "pipe"] })
    children.push(child)
    let out = ""
    let err = ""
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString()
      if (out.includes("\n")) resolve(JSON.parse(out.split("\n")[0]!).url)
    })
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()))
    child.on("exit", (code) => reject(new Error(`serve exited ${code}: ${err}`)))
  })

const statusFor = (url: string, host: string): Promise<number> =>
  new Promise((resolve, reject) => {
    const u = new URL(url)
    http.get({ host: u.hostname, port: u.port, path: "/openapi.json", headers: { host }, setHost: false, agent: false }, (r) => {
      r.resume()
      resolve(r.statusCode ?? 0)
    }).on("error", reject)
  })

describe("forkjoin serve --host-name", () => {
  it("answers loopback names and the given names, refuses others with 403", async () => {
    const url = await serve(["--host-name", "gw.example.test", "--host-name", "other.example.test"])
    const port = new URL(url).port
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `gw.example.test:${port}`, "other.example.test"]) {
      expect({ host, status: await statusFor(url, host) }).toEqual({ host, status: 200 })
    }
    expect(await statusFor(url, `evil.example.test:${port}`)).toBe(403)
  })

  it("refuses a --host-name that is not a host name: usage error, exit 2, saying what to give", () => {
    const r = runCli(["serve", "--workspace", w.ws, "--port", "0", "--host-name", "http://gw.example.test:8080"])
    expect(r.status).toBe(2)
    expect(r.stderr).toMatch(/--host-name 'http:\/\/gw\.example\.test:8080' is not a host name/)
  })
})

describe("forkjoin token create --thread", () => {
  it("refuses thread ids outside the id rule (exit 2) and issues one inside it", () => {
    for (const thread of ["../x", "a/../b", "a//b", "x/"]) {
      const r = runCli(["token", "create", "--thread", thread, "--workspace", w.ws])
      expect({ thread, status: r.status, stdout: r.stdout }).toEqual({ thread, status: 2, stdout: "" })
      expect(r.stderr).toMatch(/letters, digits and _ \. - : \//)
    }
    const ok = runCli(["token", "create", "--thread", "parent/child", "--workspace", w.ws, "--json"])
    expect(ok.status).toBe(0)
    expect(JSON.parse(ok.stdout).thread).toBe("parent/child")
  })
})
