/**
 * `forkjoin mcp`'s standard input attacked on the wire, through a real child process: a line
 * that is not JSON, very large messages (under and over the size cap) and very deep JSON each
 * get a JSON-RPC error answer on stdout (never a stack trace there), and the server answers the
 * next request.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeFramer, nestingExceeds } from "../src/internal/mcpFraming.ts"
import { BIN, buildCli, makeSandbox, removeSandboxes } from "./helpers.ts"

beforeAll(() => buildCli())
afterAll(removeSandboxes)

interface Raw {
  readonly child: ChildProcessWithoutNullStreams
  /** Every stdout line so far, as written. */
  readonly lines: Array<string>
  readonly send: (text: string) => void
  /** Resolves with the first answer (parsed) matching `match`, waiting for it if needed. */
  readonly answer: (match: (message: any) => boolean) => Promise<any>
  readonly close: () => Promise<number | null>
}

const MB = 1_000_000

const startRaw = (ws: string): Raw => {
  const child = spawn(process.execPath, [BIN, "mcp", "--workspace", ws], { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } })
  child.stderr.resume()
  const lines: Array<string> = []
  const waiters: Array<{ match: (m: any) => boolean; resolve: (m: any) => void }> = []
  let buffer = ""
  const parsed = (line: string): any => {
    try {
      return JSON.parse(line)
    } catch {
      return undefined
    }
  }
  child.stdout.setEncoding("utf8")
  child.stdout.on("data", (d: string) => {
    buffer += d
    const parts = buffer.split("\n")
    buffer = parts.pop() ?? ""
    for (const line of parts) {
      lines.push(line)
      const message = parsed(line)
      for (const w of waiters.splice(0)) {
        if (message !== undefined && w.match(message)) w.resolve(message)
        else waiters.push(w)
      }
    }
  })
  const answer = (match: (m: any) => boolean) =>
    new Promise<any>((resolve) => {
      const seen = lines.map(parsed).find((m) => m !== undefined && match(m))
      if (seen !== undefined) resolve(seen)
      else waiters.push({ match, resolve })
    })
  const close = () =>
    new Promise<number | null>((resolve) => {
      child.on("close", resolve)
      child.stdin.end()
    })
  return { child, lines, send: (text) => child.stdin.write(text), answer, close }
}

const line = (m: unknown) => `${JSON.stringify(m)}\n`
const byId = (id: number) => (m: any) => m.id === id
const initialize = line({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } })
const initialized = line({ jsonrpc: "2.0", method: "notifications/initialized" })
const listTools = (id: number) => line({ jsonrpc: "2.0", id, method: "tools/list" })
/** A call of an unknown tool whose arguments carry `bytes` of padding: answered -32602 by the server. */
const bigCall = (id: number, bytes: number) => line({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "nope", arguments: { pad: "x".repeat(bytes) } } })

/** Every stdout line is one JSON-RPC message. */
const expectOnlyJsonRpc = (lines: ReadonlyArray<string>) => {
  for (const l of lines) expect(JSON.parse(l)).toMatchObject({ jsonrpc: "2.0" })
}

describe("forkjoin mcp frames its standard input", () => {
  it("a line that is not JSON gets -32700 on stdout (only JSON lines there), and the next request is answered", async () => {
    const { ws } = makeSandbox()
    const raw = startRaw(ws)
    raw.send(initialize + initialized)
    await raw.answer(byId(1))
    raw.send("this is not json\n")
    raw.send(listTools(2))
    const parseError = await raw.answer((m) => m.error?.code === -32700)
    expect(parseError).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700, message: expect.stringContaining("not JSON") } })
    const listed = await raw.answer(byId(2))
    expect(listed.result.tools.length).toBeGreaterThan(0)
    expect(await raw.close()).toBe(0)
    expectOnlyJsonRpc(raw.lines)
  })

  it("an 8 MB message and one just under the cap are answered, and so is the next request", async () => {
    const { ws } = makeSandbox()
    const raw = startRaw(ws)
    raw.send(initialize + initialized)
    await raw.answer(byId(1))
    raw.send(bigCall(2, 8 * MB))
    raw.send(bigCall(3, 16 * MB - 1000))
    raw.send(listTools(4))
    expect((await raw.answer(byId(2))).error).toMatchObject({ code: -32602, message: "Tool 'nope' not found" })
    expect((await raw.answer(byId(3))).error).toMatchObject({ code: -32602, message: "Tool 'nope' not found" })
    expect((await raw.answer(byId(4))).result.tools.length).toBeGreaterThan(0)
    expect(await raw.close()).toBe(0)
    expectOnlyJsonRpc(raw.lines)
  })

  it("a message over the cap (16 MiB) is refused with an error and discarded; the next request is answered", async () => {
    const { ws } = makeSandbox()
    const raw = startRaw(ws)
    raw.send(initialize + initialized)
    await raw.answer(byId(1))
    raw.send(bigCall(2, 17 * 1024 * 1024))
    raw.send(listTools(3))
    const refused = await raw.answer((m) => m.error?.code === -32600)
    expect(refused).toMatchObject({ id: null, error: { message: expect.stringContaining("larger than 16777216 bytes") } })
    expect((await raw.answer(byId(3))).result.tools.length).toBeGreaterThan(0)
    expect(await raw.close()).toBe(0)
    // The over-cap call itself was never served.
    expect(raw.lines.map((l) => JSON.parse(l)).filter((m) => m.id === 2)).toEqual([])
    expectOnlyJsonRpc(raw.lines)
  })

  it("very deep JSON (100,000 nested arrays, alone and inside a request) gets an error answer; the next request is answered", async () => {
    const { ws } = makeSandbox()
    const raw = startRaw(ws)
    raw.send(initialize + initialized)
    await raw.answer(byId(1))
    const deep = "[".repeat(100_000) + "]".repeat(100_000)
    raw.send(`${deep}\n`)
    raw.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":${deep}}}}\n`)
    raw.send(listTools(3))
    expect((await raw.answer(byId(3))).result.tools.length).toBeGreaterThan(0)
    const refusals = raw.lines.map((l) => JSON.parse(l)).filter((m) => m.error?.code === -32600)
    expect(refusals).toHaveLength(2)
    expect(refusals[0].error.message).toContain("deeper than 512 levels")
    expect(await raw.close()).toBe(0)
    expectOnlyJsonRpc(raw.lines)
  })

  it("a message split across many small writes is one message", async () => {
    const { ws } = makeSandbox()
    const raw = startRaw(ws)
    const text = initialize + initialized + listTools(2)
    for (let i = 0; i < text.length; i += 7) raw.send(text.slice(i, i + 7))
    expect((await raw.answer(byId(2))).result.tools.length).toBeGreaterThan(0)
    expect(await raw.close()).toBe(0)
  })
})

describe("the framer", () => {
  const bytes = (text: string) => new TextEncoder().encode(text)

  it("splits lines across chunk boundaries, drops a trailing CR and blank lines", () => {
    const framer = makeFramer(100)
    expect(framer.push(bytes("{\"a\":"))).toEqual([])
    expect(framer.push(bytes("1}\r\n\n  \n{\"b\""))).toEqual([{ _tag: "Line", text: "{\"a\":1}" }])
    expect(framer.push(bytes(":2}\n"))).toEqual([{ _tag: "Line", text: "{\"b\":2}" }])
  })

  it("refuses an over-cap line once, as soon as it crosses the cap, and keeps the line after it whole", () => {
    const framer = makeFramer(10)
    expect(framer.push(bytes("0123456789"))).toEqual([])
    expect(framer.push(bytes("A"))).toEqual([{ _tag: "TooLarge" }])
    expect(framer.push(bytes("BBBBBBBBBBBBBBBBBBBB"))).toEqual([])
    expect(framer.push(bytes("C\nok\n"))).toEqual([{ _tag: "Line", text: "ok" }])
  })

  it("measures nesting outside strings only", () => {
    expect(nestingExceeds("[[[]]]", 3)).toBe(false)
    expect(nestingExceeds("[[[[]]]]", 3)).toBe(true)
    expect(nestingExceeds(JSON.stringify({ s: "[[[[[[\\\"[[[[" }), 1)).toBe(false)
  })
})
