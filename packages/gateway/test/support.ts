/**
 * Test support for the gateway: a temp workspace, a gateway started in-process on port 0 (its
 * scope closed by `stop`), tokens issued through their own connection to the workspace's
 * database (as `forkjoin token create` does), threads registered below others, and `fetch`
 * helpers.
 */
import { environmentIdOf } from "@forkjoin/engine/Engine"
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { HistoryViews } from "@forkjoin/history/Views"
import { ThreadId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { TestClock } from "effect/testing"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import { type ServeOptions, serve } from "../src/Gateway.ts"
import * as Tokens from "../src/Tokens.ts"
import { TokenStore } from "../src/TokenStore.ts"
import * as TokenStoreSqlite from "../src/TokenStoreSqlite.ts"

/** A fresh temp directory with `ws/` (the workspace, holding `files`) and `outside/`. */
export const makeWorkspace = (files: Record<string, string | Uint8Array> = {}) => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-gw-")))
  const ws = path.join(dir, "ws")
  const outside = path.join(dir, "outside")
  fs.mkdirSync(ws)
  fs.mkdirSync(outside)
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true })
    fs.writeFileSync(path.join(ws, rel), content)
  }
  return { dir, ws, outside, db: path.join(ws, ".forkjoin", "history.db") }
}

/** A gateway running in this process. */
export interface Started {
  readonly url: string
  readonly loginUrl: string | undefined
  readonly stop: () => Promise<void>
}

/** Starts a gateway on 127.0.0.1, port 0. */
export const start = async (options: ServeOptions): Promise<Started> => {
  const scope = Effect.runSync(Scope.make())
  const running = await Effect.runPromise(Scope.provide(serve({ port: 0, ...options }), scope))
  return { ...running, stop: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/**
 * A value made before the file's tests and released after them (in the reverse order of the
 * calls, as vitest runs `afterAll` hooks); the getter it returns is for reading it inside a test.
 */
export const forTheFile = <A>(make: () => A | Promise<A>, release: (value: A) => unknown): (() => A) => {
  let value: { readonly made: A } | undefined
  beforeAll(async () => {
    value = { made: await make() }
  })
  afterAll(async () => {
    if (value !== undefined) await release(value.made)
  })
  return () => {
    if (value === undefined) throw new Error("read before the file's beforeAll made it")
    return value.made
  }
}

/** A workspace from `makeWorkspace` (or one built on it) for the file's tests: its folder is removed after them. */
export const workspaceForTheFile = <W extends { readonly dir: string }>(make: () => W | Promise<W>): (() => W) =>
  forTheFile(make, (w) => fs.rmSync(w.dir, { recursive: true, force: true }))

/**
 * For the file's tests: a workspace holding `files`, a gateway on it and a token of `thread`,
 * registered in its history; after them, the gateway stopped and the folder removed.
 */
export const servedWorkspace = (files: Record<string, string | Uint8Array>, thread = "main") => {
  const w = workspaceForTheFile(() => makeWorkspace(files))
  const gw = forTheFile(() => start({ root: w().ws, pollMs: 50 }), (g) => g.stop())
  const token = forTheFile(async () => {
    await registerThread(w().ws, w().db, thread)
    return (await tokenFor(w().db, thread)).token
  }, () => undefined)
  return {
    get w() {
      return w()
    },
    get gw() {
      return gw()
    },
    /** The token of `thread`. */
    get token() {
      return token()
    }
  }
}

const withStore = <A, E>(db: string, effect: Effect.Effect<A, E, TokenStore>) =>
  Effect.runPromise(Effect.provide(effect, TokenStoreSqlite.layerSqlite(db)))

/** Issues a token for `thread` in the database `db`. */
export const tokenFor = (db: string, thread: string, ttlMs?: number) => withStore(db, Tokens.issue(ThreadId.make(thread), ttlMs))

/** A token for `thread` that expired long ago: issued for 1 ms at the epoch (a test clock), so no test waits for it to expire. */
export const expiredTokenFor = (db: string, thread: string) =>
  withStore(db, Tokens.issue(ThreadId.make(thread), 1).pipe(Effect.provide(TestClock.layer())))

/** Revokes a token. */
export const revokeToken = (db: string, tokenId: string) => withStore(db, Tokens.revoke(tokenId))

/** Registers `child` below `parent` in the workspace's history. */
export const registerThread = (ws: string, db: string, child: string, parent?: string) =>
  Effect.runPromise(
    HistoryStore.use((s) => s.registerThread(ThreadId.make(child), parent === undefined ? undefined : ThreadId.make(parent))).pipe(
      Effect.provide(HistoryViews.layerWithStore(db, { environmentId: environmentIdOf(fs.realpathSync(ws)), root: ws }).pipe(Layer.orDie))
    )
  )

/** `fetch` with a bearer token and a JSON body; resolves to status, headers and parsed body. */
export const call = async (
  url: string,
  options: { readonly token?: string; readonly method?: string; readonly body?: unknown; readonly raw?: string; readonly headers?: Record<string, string> } = {}
) => {
  const headers: Record<string, string> = { ...options.headers }
  if (options.token !== undefined) headers["authorization"] = `Bearer ${options.token}`
  let body: string | undefined
  if (options.raw !== undefined) body = options.raw
  else if (options.body !== undefined) body = JSON.stringify(options.body)
  if (body !== undefined) headers["content-type"] = "application/json"
  const r = await fetch(url, { method: options.method ?? (body === undefined ? "GET" : "POST"), headers, ...(body === undefined ? {} : { body }) })
  const text = await r.text()
  let json: any
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: r.status, headers: r.headers, text, json }
}

/**
 * Opens the gateway's event stream with `token`: the response, `until(pattern)` (reads until the
 * text seen so far matches, or the stream ends), `seen()` and `close()`.
 */
export const openEvents = async (url: string, token: string) => {
  const controller = new AbortController()
  const response = await fetch(`${url}/v1/events`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal })
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let seen = ""
  return {
    response,
    until: async (pattern: RegExp): Promise<void> => {
      while (!pattern.test(seen)) {
        const chunk = await reader.read()
        if (chunk.done) break
        seen += decoder.decode(chunk.value)
      }
    },
    seen: () => seen,
    close: () => controller.abort()
  }
}

/** A patch from its body lines. */
export const patchOf = (...body: ReadonlyArray<string>): string => ["*** Begin Patch", ...body, "*** End Patch"].join("\n")

/** The CLI launcher and a synchronous run of it (the bundle is rebuilt by `buildCli`). */
export const BIN = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../../cli/bin/forkjoin.mjs")

/** Rebuilds the CLI bundle from the current sources (once per test run). */
export { buildCli } from "../../cli/test/helpers.ts"

/**
 * Runs `forkjoin ARGS` without blocking this process: for while a gateway runs in it. A synchronous
 * run stalls the server, and a request sent after one that outlasts the server's keep-alive races
 * the connection's overdue close (a reset).
 */
export { runCliAsync } from "../../cli/test/helpers.ts"

/** Runs `forkjoin ARGS` (mutating children at `bold`, as scratch workspaces need); before a gateway starts, or with none in this process. */
export const runCli = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1", FORKJOIN_AUTONOMY: "bold", ...env }
  })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

const lines = (prefix: string, n: number): string => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}\n`).join("")

/** A workspace and a plan whose two children edit the same line: the join holds one conflict. */
export const conflictCase = () => {
  const w = makeWorkspace({ "m/f.txt": lines("f", 6), "m/other.txt": "o1\n" })
  const task = (id: string, body: ReadonlyArray<string>) => ({
    id,
    mode: "transactional_write",
    writeScope: ["m"],
    actions: [{ apply_patch: { patch: patchOf(...body) } }, { finish: {} }]
  })
  const plan = {
    schemaVersion: 1,
    tasks: [
      task("first", ["*** Update File: m/f.txt", "@@", "-f1", "+F1-first"]),
      task("second", ["*** Update File: m/f.txt", "@@", "-f1", "+F1-second", "*** Update File: m/other.txt", "@@", "-o1", "+O1"])
    ]
  }
  const planFile = path.join(w.dir, "plan.json")
  fs.writeFileSync(planFile, JSON.stringify(plan))
  return { ...w, planFile }
}
