/**
 * `gateway` bench: the resident server (`forkjoin serve`, run as a child process from the CLI
 * bundle) under load, and applies through it against Codex and against the library.
 *
 * 1. `views_rps`              200 concurrent loopback clients (keep-alive `fetch`, spread over
 *                             `--workers` processes, each client connected first, untimed:
 *                             `connectAllMs`) reading views (timeline, file history, record diff
 *                             in turn) for 10 s: requests/s;
 *                             also `views_p50_ms`, `views_p99_ms` (per-request latency),
 *                             `views_errors` (target 0) and `server_rss_mb` (the server's peak RSS,
 *                             VmHWM, over the whole bench).
 * 2. `large_apply_server_ms`  apply of the `format` workload (100,000 lines, 2,000 chunks) through
 *                             the server, HTTP round trip included (`--profile codex`, file restored
 *                             untimed), vs the whole Codex `apply_patch` process. Target: ratio <= 1.0.
 * 3. `small_apply_server_ms`  1,000 sequential one-line durable applies over 20 small files through
 *                             the server, median per apply, vs the same through the library
 *                             (`openWorkspace` in this process), interleaved. Target: ratio <= 1.3.
 *                             Also `oursFetch`/`ratioFetch`: the same applies through the global
 *                             `fetch`, interleaved too, and `httpRoundTripMs`/`fetchRoundTripMs`
 *                             (an authenticated `GET /v1/whoami`). And the transport's floor,
 *                             interleaved too: `floor`, the same applies through a bare node:http
 *                             server whose handler is the library's apply (`openWorkspace` in a
 *                             child process: no router, no auth, no schemas), `floorRatio`
 *                             (`floor` / library) and `ratioToFloor` (ours / `floor`).
 * 4. `big_apply_latency_ms`   one authenticated 9,000-file apply (new files in 90 folders) through
 *                             the server while a poller reads `GET /v1/whoami` back to back: the
 *                             poller's p99 latency during the apply (also `p50`, `max`, `n`,
 *                             `over250Ms`: the time the poller spent in requests slower than 250 ms,
 *                             `resets`: polls whose kept-alive connection the server had dropped),
 *                             vs `floor`, the same poller on the idle server (its p99; `floorP50`,
 *                             `floorMax`), as `ratio`. Also `applyMs` (that apply, HTTP round trip
 *                             included) and `applyAloneMs` (a second 9,000-file apply, no poller).
 *                             Target: p99 <= 250 ms.
 *
 * Applies (figures 2 and 3) go through node:http with a keep-alive agent, the cheapest standard
 * client: undici's `fetch` adds about 0.4 ms per request by itself, a client cost and not the
 * server's (a user's client is theirs). The view load (figure 1) still uses `fetch`.
 *
 * Usage: `npm run bench -- gateway [--json] [--only metric[,metric]] [--seconds N] [--clients N] [--workers N] [--files N]`
 * (`--files`: the files of figure 4's applies).
 * Every apply's result is checked (bytes, record); a wrong answer or a failing run of ours makes
 * the bench exit 1. A missing Codex peer is reported as `peer: null`.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import os from "node:os"
import path from "node:path"
import { createInterface } from "node:readline"
import { openWorkspace } from "../../packages/engine/src/Facade.ts"
import { CODEX_PEER_NAME, type CodexPeer, type CodexUnavailable, ensureCodex } from "./codex.ts"
import { makeFormatWorkload, oneLineUpdatePatch } from "./fixture.ts"
import { cliPaths, emitJson, ensureCliBundle, errorFigure, type Figure, median, note, onlyMetrics, percentile, printTable, repoRoot, round, runFailure, spread, timeSpawn, wantsJson } from "./harness.ts"

const BENCH = "gateway"
const SEED = 0x5eed_f0a7
const LINES = 100_000
const CHUNKS = 2_000
const LARGE_WARMUP = 1
const LARGE_RUNS = 11
const SMALL_FILES = 20
const SMALL_LINES = 40
const SMALL_WARMUP = 40
const SMALL_OPS = 1_000
const LARGE_TARGET_RATIO = 1.0
const SMALL_TARGET_RATIO = 1.3
const BIG_DIRS = 90
const BIG_FLOOR_POLLS = 400
const BIG_TARGET_MS = 250

const argv = process.argv.slice(2)
const argValue = (name: string, fallback: number): number => {
  const i = argv.indexOf(name)
  return i === -1 ? fallback : Number(argv[i + 1])
}
const SECONDS = argValue("--seconds", 10)
const BIG_FILES = argValue("--files", 9_000)
const CLIENTS = argValue("--clients", 200)

const LOAD_WORKERS = argValue("--workers", 2)
const WORKER_FLAG = "--load-worker"
const FLOOR_FLAG = "--floor-server"

/** What one load worker measured. */
interface LoadResult {
  readonly latencies: Array<number>
  readonly errors: number
  readonly firstError?: string
  readonly connectMs: number
}

interface LoadJob {
  readonly url: string
  readonly token: string
  readonly routes: ReadonlyArray<string>
  readonly clients: number
  readonly seconds: number
  readonly offset: number
}

/**
 * One load process: `clients` keep-alive clients, each connected first (untimed: new connections
 * are accepted one event-loop turn at a time while the server is busy, which would measure
 * connection set-up, not views), then reading `routes` in turn until `seconds` have passed.
 */
const loadWorker = async (job: LoadJob, ready: () => Promise<void>): Promise<LoadResult> => {
  const headers = { authorization: `Bearer ${job.token}` }
  const connectStart = performance.now()
  await Promise.all(Array.from({ length: job.clients }, () => fetch(`${job.url}/v1/whoami`, { headers }).then((r) => r.text())))
  const connectMs = performance.now() - connectStart
  await ready()
  const latencies: Array<number> = []
  let errors = 0
  let firstError: string | undefined
  const deadline = performance.now() + job.seconds * 1000
  const client = async (c: number) => {
    let i = c
    while (performance.now() < deadline) {
      const route = job.routes[i++ % job.routes.length]!
      const t0 = performance.now()
      try {
        const r = await fetch(`${job.url}${route}`, { headers })
        const body = await r.text()
        if (r.status !== 200 || !body.startsWith("{\"items\"")) {
          errors++
          firstError ??= `${route}: ${r.status} ${body.slice(0, 200)}`
        }
      } catch (e) {
        errors++
        firstError ??= `${route}: ${String(e)}`
      }
      latencies.push(performance.now() - t0)
    }
  }
  await Promise.all(Array.from({ length: job.clients }, (_, c) => client(job.offset + c)))
  return { latencies, errors, connectMs, ...(firstError === undefined ? {} : { firstError }) }
}

/**
 * Runs `loadWorker`s in child processes of this very bench file: each gets its job, connects
 * its clients and says `ready`; once all are ready, all are told `go` at once, so their reading
 * windows coincide. Resolves to each worker's result.
 */
const runLoadWorkers = (jobs: ReadonlyArray<LoadJob>): Promise<Array<LoadResult>> => {
  let readyCount = 0
  const children: Array<ChildProcess> = []
  return Promise.all(
    jobs.map((job) =>
      new Promise<LoadResult>((resolve, reject) => {
        const child = spawn(process.execPath, [process.argv[1]!, WORKER_FLAG], { stdio: ["pipe", "pipe", "inherit"] })
        children.push(child)
        let out = ""
        child.stdout!.on("data", (d: Buffer) => {
          out += d.toString()
          if (out.startsWith("ready\n")) {
            out = out.slice("ready\n".length)
            if (++readyCount === jobs.length) for (const c of children) c.stdin!.end("go\n")
          }
        })
        child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out) as LoadResult) : reject(new Error(`load worker exited ${String(code)}`))))
        child.stdin!.write(JSON.stringify(job) + "\n")
      })
    )
  )
}

const figures: Array<Figure> = []
let failed = false
const report = (f: Figure): void => {
  figures.push(f)
  if (f.error !== undefined) failed = true
  if (wantsJson(argv)) emitJson(f)
}

const writeSynced = (file: string, bytes: Uint8Array): void => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const fd = fs.openSync(file, "w")
  try {
    fs.writeSync(fd, bytes)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/** A running `forkjoin serve` child. */
interface Server {
  readonly url: string
  readonly child: ChildProcess
}

const startServer = (bin: string, ws: string): Promise<Server> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, "serve", "--workspace", ws, "--port", "0", "--json"], { stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let err = ""
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString()
      const nl = out.indexOf("\n")
      if (nl >= 0) resolve({ url: (JSON.parse(out.slice(0, nl)) as { url: string }).url, child })
    })
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()))
    child.on("exit", (code) => reject(new Error(`forkjoin serve exited ${String(code)}: ${err.slice(0, 500)}`)))
  })

/**
 * The floor of an apply over HTTP in another process: a bare node:http server (this file, run
 * with `FLOOR_FLAG`) whose only handler is the library's apply on `ws`.
 */
const startFloor = (ws: string): Promise<Server> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [process.argv[1]!, FLOOR_FLAG, ws], { stdio: ["ignore", "pipe", "inherit"] })
    let out = ""
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString()
      const nl = out.indexOf("\n")
      if (nl >= 0) resolve({ url: (JSON.parse(out.slice(0, nl)) as { url: string }).url, child })
    })
    child.on("exit", (code) => reject(new Error(`the floor server exited ${String(code)}`)))
  })

const asFloorServer = async (ws: string): Promise<void> => {
  const lib = await openWorkspace(ws)
  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const { patch, turn } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { patch: string; turn: string }
      lib.applyPatch(patch, { threadId: "bench", turnId: turn, profile: "codex" }).then(
        (record) => {
          const body = JSON.stringify(record)
          res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body)
        },
        (e: unknown) => res.writeHead(500).end(String(e))
      )
    })
  })
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}` }) + "\n")
  })
  process.on("SIGTERM", () => void lib.close().then(() => process.exit(0)))
}

const stopServer = async (s: Server): Promise<void> => {
  s.child.removeAllListeners("exit")
  const done = new Promise((r) => s.child.once("exit", r))
  s.child.kill("SIGTERM")
  await done
}

/** The server's peak resident set (VmHWM), MB. */
const peakRssMb = (pid: number): number | null => {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))
    return m === null ? null : Number(m[1]) / 1024
  } catch {
    return null
  }
}

const tokenFor = (bin: string, ws: string, thread: string): string => {
  const t = timeSpawn(process.execPath, [bin, "token", "create", "--thread", thread, "--workspace", ws, "--json"])
  const bad = runFailure("forkjoin token create", t.result)
  if (bad !== undefined) throw new Error(bad)
  return (JSON.parse(t.result.stdout.toString("utf8")) as { token: string }).token
}

/**
 * The bench's client: node:http with a keep-alive agent, the cheapest standard client (the
 * global `fetch`, undici, adds about 0.4 ms per request on its own; a user's client is theirs,
 * so `small_apply_server_ms` also reports the `fetch` figure, `oursFetch`).
 */
const agent = new http.Agent({ keepAlive: true })

const request = (url: string, method: string, headers: Record<string, string>, body?: string) =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    const r = http.request(url, { method, agent, headers: body === undefined ? headers : { ...headers, "content-length": String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }))
      res.on("error", reject)
    })
    r.on("error", reject)
    r.end(body)
  })

const viaFetch = async (url: string, method: string, headers: Record<string, string>, body?: string) => {
  const r = await fetch(url, { method, headers, ...(body === undefined ? {} : { body }) })
  return { status: r.status, text: await r.text() }
}

const applyVia = async (url: string, token: string, patch: string, turn: string, profile: "native" | "codex", client: "http" | "fetch" = "http") => {
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
  const body = JSON.stringify({ patch, turn, profile })
  const r = await (client === "http" ? request : viaFetch)(`${url}/v1/apply`, "POST", headers, body)
  if (r.status !== 200) throw new Error(`apply through the server answered ${r.status}: ${r.text.slice(0, 300)}`)
  return JSON.parse(r.text) as { recordId: string; changes: Array<{ path: string; after?: { hash: string } }> }
}

const main = async (): Promise<void> => {
  const root = repoRoot()
  const only = onlyMetrics(argv)
  const enabled = (m: string) => only === undefined || only.has(m)
  const built = ensureCliBundle(root)
  if (built.error !== undefined) {
    for (const m of ["views_rps", "large_apply_server_ms", "small_apply_server_ms", "big_apply_latency_ms"]) if (enabled(m)) report(errorFigure(BENCH, m, built.error))
    return
  }
  const bin = cliPaths(root).bin
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-bench-gateway-")))
  const servers: Array<Server> = []
  try {
    // -----------------------------------------------------------------------------------------
    // Figure 1: 200 concurrent clients reading views for 10 s
    if (enabled("views_rps")) {
      note(`figure 1: ${CLIENTS} clients reading views for ${SECONDS} s`)
      const ws = path.join(tmp, "views")
      const names = Array.from({ length: 10 }, (_, i) => `src/v${i}.ts`)
      for (const n of names) writeSynced(path.join(ws, n), Buffer.from(Array.from({ length: 30 }, (_, l) => `line ${l}`).join("\n") + "\n"))
      const s = await startServer(bin, ws)
      servers.push(s)
      const token = tokenFor(bin, ws, "bench")
      // A history to read: 100 records over the 10 files.
      const recordIds: Array<string> = []
      for (let k = 0; k < 100; k++) {
        const n = names[k % names.length]!
        const current = fs.readFileSync(path.join(ws, n), "utf8").split("\n")
        const l = 3 + (k % 20)
        const r = await applyVia(s.url, token, oneLineUpdatePatch(n, current.slice(0, -1), l, `line ${l} v${k}`), `seed-${k}`, "native")
        recordIds.push(r.recordId)
      }
      const routes = [
        "/v1/timeline?limit=20",
        ...names.map((n) => `/v1/files?path=${encodeURIComponent(n)}&limit=20`),
        ...recordIds.slice(0, 20).map((id) => `/v1/diff?target=${encodeURIComponent(id)}`)
      ]
      // The clients run in LOAD_WORKERS processes (one process's fetch client saturates before the server).
      const perWorker = Math.ceil(CLIENTS / LOAD_WORKERS)
      const results = await runLoadWorkers(
        Array.from({ length: LOAD_WORKERS }, (_, w) => ({
          url: s.url,
          token,
          routes,
          clients: Math.min(perWorker, CLIENTS - w * perWorker),
          seconds: SECONDS,
          offset: w * perWorker
        }))
      )
      // Each worker reads for exactly SECONDS after its clients connected.
      const elapsed = SECONDS
      const latencies = results.flatMap((r) => r.latencies)
      const errors = results.reduce((n, r) => n + r.errors, 0)
      const firstError = results.find((r) => r.firstError !== undefined)?.firstError
      const connectMs = Math.max(...results.map((r) => r.connectMs))
      const rss = peakRssMb(s.child.pid!)
      const base = { peer: null, ratio: null, peerName: null, n: latencies.length, clients: CLIENTS, seconds: SECONDS, connectAllMs: round(connectMs, 1) }
      report({ bench: BENCH, metric: "views_rps", ours: round(latencies.length / elapsed, 1), unit: "req/s", ...base })
      report({ bench: BENCH, metric: "views_p50_ms", ours: round(percentile(latencies, 50)), unit: "ms", ...base })
      report({ bench: BENCH, metric: "views_p99_ms", ours: round(percentile(latencies, 99)), unit: "ms", ...base })
      report({
        bench: BENCH,
        metric: "views_errors",
        ours: errors,
        unit: "count",
        target: 0,
        targetKind: "ours_max",
        pass: errors === 0,
        ...base,
        ...(firstError === undefined ? {} : { error: `first error: ${firstError}` })
      })
      report({ bench: BENCH, metric: "server_rss_mb", ours: rss === null ? null : round(rss, 1), unit: "MB", ...base })
      await stopServer(s)
      servers.pop()
    }

    // -----------------------------------------------------------------------------------------
    // Figure 2: the large patch through the server vs the Codex process
    if (enabled("large_apply_server_ms")) {
      note("figure 2: large_apply_server_ms (100,000 lines, 2,000 chunks)")
      const metric = "large_apply_server_ms"
      const base = { peerName: CODEX_PEER_NAME, target: LARGE_TARGET_RATIO, targetKind: "ratio_max" as const }
      const workload = makeFormatWorkload(SEED, LINES, CHUNKS)
      const original = Buffer.from(workload.original)
      const expected = Buffer.from(workload.expected)
      const ws = path.join(tmp, "large")
      const peerWs = path.join(tmp, "large-peer")
      writeSynced(path.join(ws, workload.path), original)
      const s = await startServer(bin, ws)
      servers.push(s)
      const token = tokenFor(bin, ws, "bench")
      const peer: CodexPeer | CodexUnavailable = ensureCodex(root, note)
      const runPeer = (): number | string => {
        fs.rmSync(peerWs, { recursive: true, force: true })
        writeSynced(path.join(peerWs, workload.path), original)
        if (peer._tag !== "Available") return peer.error
        const t = timeSpawn(peer.applyPatch, [], { cwd: peerWs, input: workload.patch })
        const bad = runFailure("codex apply_patch", t.result)
        if (bad !== undefined) return bad
        return Buffer.compare(fs.readFileSync(path.join(peerWs, workload.path)), expected) === 0 ? t.ms : "codex apply_patch produced wrong bytes"
      }
      const runOurs = async (k: number): Promise<number | string> => {
        writeSynced(path.join(ws, workload.path), original)
        const t0 = performance.now()
        try {
          await applyVia(s.url, token, workload.patch, `large-${k}`, "codex")
        } catch (e) {
          return String(e)
        }
        const ms = performance.now() - t0
        return Buffer.compare(fs.readFileSync(path.join(ws, workload.path)), expected) === 0 ? ms : "the server's apply produced wrong bytes"
      }
      const ours: Array<number> = []
      const peers: Array<number> = []
      let error: string | undefined
      let peerError: string | undefined
      for (let k = 0; k < LARGE_WARMUP + LARGE_RUNS && error === undefined; k++) {
        const o = await runOurs(k)
        const p = runPeer()
        if (typeof o === "string") error = o
        else if (k >= LARGE_WARMUP) ours.push(o)
        if (typeof p === "string") peerError = p
        else if (k >= LARGE_WARMUP) peers.push(p)
      }
      if (error !== undefined) report(errorFigure(BENCH, metric, error, base))
      else {
        const o = median(ours)
        const p = peers.length > 0 ? median(peers) : null
        report({
          bench: BENCH,
          metric,
          ours: round(o),
          peer: p === null ? null : round(p),
          ratio: p === null ? null : round(o / p),
          ...(p === null ? {} : { pass: o / p <= LARGE_TARGET_RATIO }),
          unit: "ms",
          n: ours.length,
          oursSpread: spread(ours),
          ...(peers.length > 0 ? { peerSpread: spread(peers) } : {}),
          ...(peerError === undefined ? {} : { peerError }),
          ...base
        })
      }
      await stopServer(s)
      servers.pop()
    }

    // -----------------------------------------------------------------------------------------
    // Figure 3: 1,000 small durable applies, server vs library, interleaved
    if (enabled("small_apply_server_ms")) {
      note(`figure 3: small_apply_server_ms (${SMALL_OPS} applies through the server and through the library)`)
      const metric = "small_apply_server_ms"
      const base = { peerName: "library (openWorkspace, in-process)", target: SMALL_TARGET_RATIO, targetKind: "ratio_max" as const }
      const names = Array.from({ length: SMALL_FILES }, (_, f) => `src/m${String(f).padStart(2, "0")}.ts`)
      const content = names.map((_, f) =>
        Array.from({ length: SMALL_LINES }, (_, l) => `export const m${f}_v${l} = ${(f * 7919 + l * 104729) % 100_000} // m${f} line ${l}`)
      )
      const serverWs = path.join(tmp, "small-server")
      const libWs = path.join(tmp, "small-lib")
      const floorWs = path.join(tmp, "small-floor")
      for (const ws of [serverWs, libWs, floorWs]) names.forEach((n, f) => writeSynced(path.join(ws, n), Buffer.from(content[f]!.join("\n") + "\n")))
      const state = { server: content.map((c) => [...c]), lib: content.map((c) => [...c]), floor: content.map((c) => [...c]) }
      const s = await startServer(bin, serverWs)
      servers.push(s)
      const floor = await startFloor(floorWs)
      servers.push(floor)
      const token = tokenFor(bin, serverWs, "bench")
      const lib = await openWorkspace(libWs)
      // The fetch applies edit the server's files too, half the file ring away from the http ones.
      const patchFor = (who: "server" | "lib" | "fetch" | "floor", k: number) => {
        const f = (k + (who === "fetch" ? SMALL_FILES / 2 : 0)) % SMALL_FILES
        const l = 3 + ((k * 7 + f * 3) % (SMALL_LINES - 6))
        const lines = state[who === "fetch" ? "server" : who][f]!
        const next = `export const m${f}_v${l} = ${k} // ${who} op ${k}`
        const patch = oneLineUpdatePatch(names[f]!, lines, l, next)
        lines[l] = next
        return patch
      }
      const samples = { server: [] as Array<number>, lib: [] as Array<number>, fetch: [] as Array<number>, floor: [] as Array<number> }
      let error: string | undefined
      try {
        for (let k = 0; k < SMALL_WARMUP + SMALL_OPS; k++) {
          // Rotated so no client always runs first; the fetch applies go to the same server and files.
          const order = (["server", "lib", "fetch", "floor"] as const).map((_, i, all) => all[(i + k) % all.length]!)
          for (const who of order) {
            const patch = patchFor(who, k)
            const t0 = performance.now()
            if (who === "lib") await lib.applyPatch(patch, { threadId: "bench", turnId: `small-${k}`, profile: "codex" })
            else if (who === "floor") {
              const r = await request(`${floor.url}/apply`, "POST", { "content-type": "application/json" }, JSON.stringify({ patch, turn: `small-${k}` }))
              if (r.status !== 200) throw new Error(`the floor server answered ${r.status}: ${r.text.slice(0, 300)}`)
            } else await applyVia(s.url, token, patch, `small-${who}-${k}`, "codex", who === "fetch" ? "fetch" : "http")
            const ms = performance.now() - t0
            if (k >= SMALL_WARMUP) samples[who].push(ms)
          }
        }
        for (const [who, ws] of [["server", serverWs], ["lib", libWs], ["floor", floorWs]] as const) {
          names.forEach((n, f) => {
            if (fs.readFileSync(path.join(ws, n), "utf8") !== state[who][f]!.join("\n") + "\n") error ??= `${who}: ${n} holds unexpected bytes`
          })
        }
      } catch (e) {
        error = String(e)
      } finally {
        await lib.close()
      }
      // The floor the server adds: one authenticated no-op round trip (client + HTTP stack), with each client.
      const roundTrips = { http: [] as Array<number>, fetch: [] as Array<number> }
      const auth = { authorization: `Bearer ${token}` }
      for (let k = 0; k < 400; k++) {
        const client = k % 2 === 0 ? "http" : "fetch"
        const t0 = performance.now()
        await (client === "http" ? request : viaFetch)(`${s.url}/v1/whoami`, "GET", auth)
        roundTrips[client].push(performance.now() - t0)
      }
      if (error !== undefined) report(errorFigure(BENCH, metric, error, base))
      else {
        const o = median(samples.server)
        const p = median(samples.lib)
        report({
          bench: BENCH,
          metric,
          ours: round(o),
          peer: round(p),
          ratio: round(o / p),
          pass: o / p <= SMALL_TARGET_RATIO,
          unit: "ms",
          n: samples.server.length,
          oursSpread: spread(samples.server),
          peerSpread: spread(samples.lib),
          oursFetch: round(median(samples.fetch)),
          ratioFetch: round(median(samples.fetch) / p),
          oursFetchSpread: spread(samples.fetch),
          httpRoundTripMs: round(median(roundTrips.http)),
          fetchRoundTripMs: round(median(roundTrips.fetch)),
          floor: round(median(samples.floor)),
          floorRatio: round(median(samples.floor) / p),
          ratioToFloor: round(o / median(samples.floor)),
          floorSpread: spread(samples.floor),
          ...base
        })
      }
      await stopServer(floor)
      await stopServer(s)
      servers.pop()
      servers.pop()
    }

    // -----------------------------------------------------------------------------------------
    // Figure 4: other clients' latency during one 9,000-file apply
    if (enabled("big_apply_latency_ms")) {
      note(`figure 4: big_apply_latency_ms (a poller during one ${BIG_FILES}-file apply through the server)`)
      const metric = "big_apply_latency_ms"
      const base = { peerName: "the same poller on the idle server (p99)", target: BIG_TARGET_MS, targetKind: "ours_max" as const }
      const ws = path.join(tmp, "big")
      fs.mkdirSync(ws, { recursive: true })
      const s = await startServer(bin, ws)
      servers.push(s)
      const token = tokenFor(bin, ws, "bench")
      const auth = { authorization: `Bearer ${token}` }
      const fileOf = (batch: string, i: number) => `${batch}/d${i % BIG_DIRS}/f${i}.txt`
      const contentOf = (batch: string, i: number) => `${batch} file ${i}\nsecond line ${i}\n`
      const bigPatch = (batch: string) =>
        ["*** Begin Patch", ...Array.from({ length: BIG_FILES }, (_, i) => [`*** Add File: ${fileOf(batch, i)}`, ...contentOf(batch, i).slice(0, -1).split("\n").map((l) => `+${l}`)]).flat(), "*** End Patch"].join("\n")
      // A keep-alive connection the server dropped while its event loop was held (its idle timer
      // fires late) resets the next request on it: counted in `resets` and retried once on a new
      // connection, the sample being the whole wait the client saw.
      let resets = 0
      const poll = async (): Promise<number> => {
        const t0 = performance.now()
        const once = () => request(`${s.url}/v1/whoami`, "GET", auth)
        const r = await once().catch((e: unknown) => {
          if (!String(e).includes("ECONNRESET")) throw e
          resets++
          return once()
        }).catch((e: unknown) => {
          throw new Error(`GET /v1/whoami failed after ${floor.length} idle and ${during.length} polls during the apply: ${String(e)}`)
        })
        if (r.status !== 200) throw new Error(`GET /v1/whoami answered ${r.status}: ${r.text.slice(0, 300)}`)
        return performance.now() - t0
      }
      // The apply's result: every file recorded and on disk with its bytes.
      const checkApplied = (batch: string, r: { changes: ReadonlyArray<unknown> }): string | undefined => {
        if (r.changes.length !== BIG_FILES) return `the ${batch} apply recorded ${r.changes.length} changes, not ${BIG_FILES}`
        for (const i of [0, 1, BIG_FILES >> 1, BIG_FILES - 1]) {
          if (fs.readFileSync(path.join(ws, fileOf(batch, i)), "utf8") !== contentOf(batch, i)) return `${fileOf(batch, i)} holds unexpected bytes`
        }
        return undefined
      }
      let error: string | undefined
      const floor: Array<number> = []
      const during: Array<number> = []
      let applyMs = 0
      let applyAloneMs = 0
      try {
        for (let k = 0; k < BIG_FLOOR_POLLS; k++) floor.push(await poll())
        const t0 = performance.now()
        let applying = true
        const applied = applyVia(s.url, token, bigPatch("polled"), "big-polled", "native").catch((e: unknown) => {
          throw new Error(`the polled apply failed: ${String(e)}`)
        }).finally(() => {
          applyMs = performance.now() - t0
          applying = false
        })
        // Back to back until the apply answers; a poll in flight when it does still counts.
        const poller = (async () => {
          while (applying) during.push(await poll())
        })()
        const [record] = await Promise.all([applied, poller])
        error = checkApplied("polled", record)
        if (error === undefined) {
          const t1 = performance.now()
          const alone = await applyVia(s.url, token, bigPatch("alone"), "big-alone", "native").catch((e: unknown) => {
            throw new Error(`the second apply failed: ${String(e)}`)
          })
          applyAloneMs = performance.now() - t1
          error = checkApplied("alone", alone)
        }
      } catch (e) {
        error = String(e)
      }
      if (error === undefined && during.length === 0) error = "the poller made no request during the apply"
      if (error !== undefined) report(errorFigure(BENCH, metric, error, base))
      else {
        const p99 = percentile(during, 99)
        const floorP99 = percentile(floor, 99)
        report({
          bench: BENCH,
          metric,
          ours: round(p99),
          peer: round(floorP99),
          ratio: round(p99 / floorP99),
          pass: p99 <= BIG_TARGET_MS,
          unit: "ms",
          n: during.length,
          p50: round(percentile(during, 50)),
          max: round(Math.max(...during)),
          over250Ms: round(during.filter((ms) => ms > BIG_TARGET_MS).reduce((a, b) => a + b, 0)),
          resets,
          floorP50: round(percentile(floor, 50)),
          floorMax: round(Math.max(...floor)),
          floorN: floor.length,
          files: BIG_FILES,
          applyMs: round(applyMs),
          applyAloneMs: round(applyAloneMs),
          ...base
        })
      }
      await stopServer(s)
      servers.pop()
    }
  } finally {
    for (const s of servers) s.child.kill("SIGKILL")
    fs.rmSync(tmp, { recursive: true, force: true })
  }
}

const asWorker = async (): Promise<void> => {
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]()
  const job = JSON.parse(String((await lines.next()).value)) as LoadJob
  const result = await loadWorker(job, async () => {
    process.stdout.write("ready\n")
    await lines.next()
  })
  process.stdout.write(JSON.stringify(result))
}

if (process.argv[2] === WORKER_FLAG) await asWorker()
else if (process.argv[2] === FLOOR_FLAG) await asFloorServer(process.argv[3]!)
else await main().then(
  () => {
    if (!wantsJson(argv)) printTable(figures)
    process.exitCode = failed ? 1 : 0
  },
  (e: unknown) => {
    process.stderr.write(`[bench] ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`)
    process.exitCode = 1
  }
)
