/**
 * The CLI at a terminal (issue 9, "no progress on long work" and "plain output"): the built
 * bundle runs under pseudo-terminals (python3's `pty`: stdout and stderr each on their own,
 * so each stream is checked alone) and through pipes. On a terminal a long apply shows its
 * stages on one updating stderr line and a lock wait says so once; the A/M/D letters, run
 * statuses and `error[...]` are coloured unless NO_COLOR. Through pipes or with --json,
 * nothing extra and no escape code is ever printed. Also the pure parts: the colour rule and
 * the status line over a fake clock.
 */
import Database from "better-sqlite3"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ansi, colourEnabled, plain } from "../src/internal/colour.ts"
import { renderEngineError } from "../src/internal/errors.ts"
import { LOCK_WAIT_LINE, makeStatusLine, SHOW_AFTER_MS } from "../src/internal/terminalProgress.ts"
import { appliedSummary, BIN, buildCli, makeSandbox, patch, removeSandboxes, ROOT, writeTree } from "./helpers.ts"
import { editTask, makeCase, planOf } from "./joinHelpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

/**
 * Runs `cmd` with stdout and stderr each on its own pseudo-terminal (stdin /dev/null) and
 * collects both; the child's stderr is also passed on to this runner's stderr as it comes (so
 * a test can act on a line). Output post-processing is off, so `\n` stays `\n`.
 */
const PTY_RUNNER = `
import json, os, pty, select, subprocess, sys, termios
spec = json.loads(sys.argv[1])
pairs = [pty.openpty(), pty.openpty()]
for _, slave in pairs:
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
p = subprocess.Popen(spec["argv"], stdin=subprocess.DEVNULL, stdout=pairs[0][1], stderr=pairs[1][1], env=spec["env"], cwd=spec["cwd"])
for _, slave in pairs:
    os.close(slave)
masters = [m for m, _ in pairs]
out = {m: b"" for m in masters}
live = set(masters)
while live:
    ready, _, _ = select.select(list(live), [], [], 120)
    if not ready:
        break
    for fd in ready:
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b""
        if data:
            out[fd] += data
            if fd == masters[1]:
                sys.stderr.buffer.write(data)
                sys.stderr.buffer.flush()
        else:
            live.discard(fd)
status = p.wait()
print(json.dumps({"status": status, "stdout": out[masters[0]].decode("utf-8"), "stderr": out[masters[1]].decode("utf-8")}))
`

interface Finished {
  readonly status: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The environment of a terminal user: no colour overrides unless `env` sets them. */
const terminalEnv = (env: Record<string, string>): Record<string, string> => {
  const { FORCE_COLOR: _f, FORCE_COLOR_: _g, FORKJOIN_FAULT: _x, NO_COLOR: _n, ...rest } = process.env
  return { ...(rest as Record<string, string>), TERM: "xterm-256color", FORKJOIN_AUTONOMY: "bold", ...env }
}

/** Collects a child's output without blocking this process (a test may act while it runs, on `onStderr`: the stderr so far). */
const finished = (argv: ReadonlyArray<string>, env: Record<string, string>, onStderr?: (soFar: string) => void): Promise<Finished> =>
  new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d))
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d
      onStderr?.(stderr)
    })
    child.on("error", reject)
    child.on("close", (status) => resolve({ status, stdout, stderr }))
  })

/** `forkjoin args` on pseudo-terminals; `onStderr` hears its stderr so far as it comes. */
const underPty = async (
  args: ReadonlyArray<string>,
  env: Record<string, string> = {},
  onStderr?: (soFar: string) => void
): Promise<Finished> => {
  const spec = { argv: [process.execPath, BIN, ...args], env: terminalEnv(env), cwd: ROOT }
  const r = await finished(["python3", "-c", PTY_RUNNER, JSON.stringify(spec)], process.env as Record<string, string>, onStderr)
  if (r.status !== 0 || r.stdout === "") throw new Error(`pty runner failed (${r.status}): ${r.stderr}`)
  return JSON.parse(r.stdout) as Finished
}

/** `forkjoin args` through pipes, with the same environment as `underPty` (no colour overrides). */
const throughPipes = (args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<Finished> =>
  finished([process.execPath, BIN, ...args], terminalEnv(env))

const name = (i: number) => `d/f${String(i).padStart(4, "0")}.txt`

/** A workspace and a patch file adding `n` files. */
const bigApply = (n: number) => {
  const { dir, ws } = makeSandbox()
  const file = path.join(dir, "big.patch")
  fs.writeFileSync(file, patch(...Array.from({ length: n }, (_, i) => [`*** Add File: ${name(i)}`, `+${i}`]).flat()))
  return { ws, file }
}

/** The exact summary of `bigApply(n)` as a pipe gets it. */
const bigSummary = (n: number) =>
  `Success. Updated the following files:\n${Array.from({ length: n }, (_, i) => `A ${name(i)}\n`).join("")}`

/** A workspace where one patch adds, modifies and deletes a file. */
const mixedApply = () => {
  const { dir, ws } = makeSandbox()
  writeTree(ws, { "m.txt": "1\n", "gone.txt": "x\n" })
  const file = path.join(dir, "mixed.patch")
  fs.writeFileSync(file, patch("*** Add File: new.txt", "+n", "*** Update File: m.txt", "@@", "-1", "+2", "*** Delete File: gone.txt"))
  return { ws, file }
}

const ESC = "\x1b"

/**
 * Whether `stderr` holds at most the status line: repainted with `\r` and erased at the end, no
 * newline, no escape code. A small apply shows it only past SHOW_AFTER_MS (a loaded machine).
 */
const statusLineOnly = (stderr: string): boolean => !stderr.includes("\n") && !stderr.includes(ESC) && (stderr === "" || stderr.endsWith("\r"))

describe("progress on a terminal", () => {
  it("a 3,000-file apply under a pty shows its stages on one stderr line, erased before the summary", async () => {
    const { file, ws } = bigApply(3000)
    const r = await underPty(["apply", file, "--workspace", ws], { NO_COLOR: "1" })
    expect(r.status).toBe(0)
    expect(appliedSummary(r.stdout)).toBe(bigSummary(3000))
    // One updating line: repainted with \r, never a newline.
    expect(r.stderr).not.toContain("\n")
    const paints = r.stderr.split("\r").map((s) => s.trimEnd()).filter((s) => s !== "")
    expect(paints[0]).toBe("resolving 3,000 paths…")
    for (const stage of ["planning 3,000 paths…", "checking 3,000 files…", "journaling 3,000 files…", "staging 3,000/3,000", "committing 3,000/3,000", "recording 3,000 files…"]) {
      expect(paints).toContain(stage)
    }
    expect(paints.some((p) => /^staging \d{3}\/3,000$/.test(p))).toBe(true)
    // Erased at the end: the last paint is spaces only.
    expect(r.stderr.endsWith(`\r${" ".repeat("journaling 3,000 files…".length)}\r`)).toBe(true)
  })

  it("the same apply through pipes prints exactly the summary and nothing on stderr", async () => {
    const { file, ws } = bigApply(3000)
    const r = await throughPipes(["apply", file, "--workspace", ws])
    expect({ ...r, stdout: appliedSummary(r.stdout) }).toEqual({ status: 0, stdout: bigSummary(3000), stderr: "" })
  })

  it("--json under a pty prints its one line and nothing on stderr", async () => {
    const { file, ws } = bigApply(1500)
    const r = await underPty(["apply", file, "--workspace", ws, "--json"])
    expect(r.status).toBe(0)
    expect(r.stderr).toBe("")
    expect(r.stdout).not.toContain(ESC)
    expect(r.stdout.endsWith("\n") && r.stdout.split("\n").length).toBe(2)
    expect(JSON.parse(r.stdout).ok).toBe(true)
  })

  it("a small apply under a pty prints its summary, and on stderr at most its status line", async () => {
    const { file, ws } = bigApply(3)
    const r = await underPty(["apply", file, "--workspace", ws], { NO_COLOR: "1" })
    // Quick, it shows nothing at all (the status line's own test checks that on a fake clock).
    expect(statusLineOnly(r.stderr), JSON.stringify(r.stderr)).toBe(true)
    expect({ ...r, stdout: appliedSummary(r.stdout), stderr: "" }).toEqual({ status: 0, stdout: bigSummary(3), stderr: "" })
  })
})

describe("a lock held by another process", () => {
  /** Holds the workspace lock from this process (another connection) while `run` runs, until it calls `release`. */
  const whileLocked = async <A>(ws: string, run: (release: () => void) => Promise<A>): Promise<A> => {
    fs.mkdirSync(path.join(ws, ".forkjoin"), { recursive: true })
    const holder = new Database(path.join(ws, ".forkjoin", "lock.db"))
    holder.exec("BEGIN IMMEDIATE")
    const release = () => {
      if (holder.open) holder.close()
    }
    try {
      return await run(release)
    } finally {
      release()
    }
  }

  /** An `onStderr` that calls `release` once the waiting line is out (the CLI has waited past the threshold). */
  const onWaitingLine = (release: () => void) => (soFar: string) => {
    if (soFar.includes(LOCK_WAIT_LINE)) release()
  }

  it("under a pty, a wait of more than a second prints the waiting line once, then the apply goes on", async () => {
    const { file, ws } = bigApply(2)
    // Held until the line is out, however late a loaded machine starts the CLI.
    const r = await whileLocked(ws, (release) => underPty(["apply", file, "--workspace", ws], { NO_COLOR: "1" }, onWaitingLine(release)))
    expect(r.status).toBe(0)
    expect(r.stderr.split(LOCK_WAIT_LINE).length).toBe(2)
    expect(r.stderr.startsWith(`${LOCK_WAIT_LINE}\n`)).toBe(true)
    expect(appliedSummary(r.stdout)).toBe(bigSummary(2))
  })

  it("through pipes the same wait prints nothing extra", async () => {
    const { file, ws } = bigApply(2)
    // A witness under a pty, started after it, waits for the same lock: the lock is let go once
    // the witness has waited past the threshold, so the piped one has waited about as long.
    const witnessPatch = path.join(path.dirname(file), "witness.patch")
    fs.writeFileSync(witnessPatch, patch("*** Add File: witness.txt", "+w"))
    const [r, witness] = await whileLocked(ws, (release) => {
      const piped = throughPipes(["apply", file, "--workspace", ws])
      return Promise.all([piped, underPty(["apply", witnessPatch, "--workspace", ws], { NO_COLOR: "1" }, onWaitingLine(release))])
    })
    expect(witness.stderr).toContain(LOCK_WAIT_LINE)
    expect({ ...r, stdout: appliedSummary(r.stdout) }).toEqual({ status: 0, stdout: bigSummary(2), stderr: "" })
  })
})

describe("colour on a terminal", () => {
  it("apply's A/M/D letters are green, yellow and red under a pty", async () => {
    const { file, ws } = mixedApply()
    const r = await underPty(["apply", file, "--workspace", ws])
    expect(r.status).toBe(0)
    expect(appliedSummary(r.stdout)).toBe(
      `Success. Updated the following files:\n${ESC}[32mA${ESC}[39m new.txt\n${ESC}[33mM${ESC}[39m m.txt\n${ESC}[31mD${ESC}[39m gone.txt\n`
    )
    expect(statusLineOnly(r.stderr), JSON.stringify(r.stderr)).toBe(true)
  })

  it("a rejection's error[code] is red under a pty, plain through pipes and as JSON", async () => {
    const { dir, ws } = makeSandbox()
    writeTree(ws, { "a.txt": "x\n" })
    const file = path.join(dir, "clash.patch")
    fs.writeFileSync(file, patch("*** Add File: a.txt", "+y"))
    const tty = await underPty(["apply", file, "--workspace", ws])
    expect(tty.status).toBe(1)
    expect(tty.stderr.startsWith(`${ESC}[31merror[target_exists]${ESC}[39m (stage plan): `)).toBe(true)
    const piped = await throughPipes(["apply", file, "--workspace", ws])
    expect(piped.status).toBe(1)
    expect(piped.stderr.startsWith("error[target_exists] (stage plan): ")).toBe(true)
    expect(piped.stderr).not.toContain(ESC)
    const json = await underPty(["apply", file, "--workspace", ws, "--json"])
    expect(json.stdout).not.toContain(ESC)
    expect(JSON.parse(json.stdout).error.code).toBe("target_exists")
  })

  it("NO_COLOR=1 under a pty prints no escape code at all (summary, progress, errors)", async () => {
    const mixed = mixedApply()
    const ok = await underPty(["apply", mixed.file, "--workspace", mixed.ws], { NO_COLOR: "1" })
    expect(ok.status).toBe(0)
    expect(appliedSummary(ok.stdout)).toBe("Success. Updated the following files:\nA new.txt\nM m.txt\nD gone.txt\n")
    const again = await underPty(["apply", mixed.file, "--workspace", mixed.ws], { NO_COLOR: "1" })
    expect(again.status).toBe(1)
    expect(again.stderr).toMatch(/^error\[/)
    const big = bigApply(1200)
    const progress = await underPty(["apply", big.file, "--workspace", big.ws], { NO_COLOR: "1" })
    expect(progress.stderr).toContain("staging 1,200/1,200")
    for (const r of [ok, again, progress]) expect(r.stdout + r.stderr).not.toContain(ESC)
  })

  it("run's status column is coloured under a pty (applied green, conflicted yellow) and plain through pipes", async () => {
    const c = makeCase(
      { "a.txt": "1\n2\n3\n", "b.txt": "b\n" },
      planOf([
        editTask("one", ["a.txt"], ["*** Update File: a.txt", "@@", " 1", "-2", "+two", " 3"]),
        editTask("two", ["a.txt"], ["*** Update File: a.txt", "@@", " 1", "-2", "+TWO", " 3"]),
        editTask("bee", ["b.txt"], ["*** Update File: b.txt", "@@", "-b", "+B"])
      ])
    )
    const tty = await underPty(["run", c.planFile, "--workspace", c.ws])
    expect(tty.stdout).toContain(`${ESC}[32mapplied${ESC}[39m`)
    expect(tty.stdout).toContain(`${ESC}[33mconflicted_unresolved${ESC}[39m`)
    // The column stays aligned: padding is counted without the escape codes.
    const row = tty.stdout.split("\n").find((l) => l.includes("conflicted_unresolved"))!
    expect(row.replace(/\x1b\[\d+m/g, "")).toMatch(/^ {2}\S+ +conflicted_unresolved {11}conflicts: a\.txt$/)
    const again = makeCase({ "a.txt": "1\n2\n3\n", "b.txt": "b\n" }, JSON.parse(fs.readFileSync(c.planFile, "utf8")))
    const piped = await throughPipes(["run", again.planFile, "--workspace", again.ws])
    expect(piped.stdout).toContain("conflicted_unresolved")
    expect(piped.stdout + piped.stderr).not.toContain(ESC)
  })
})

describe("the colour rule and the status line", () => {
  it("colour needs a terminal unless FORCE_COLOR; NO_COLOR (non-empty) and TERM=dumb turn it off", () => {
    const tty = { isTTY: true }
    const pipe = { isTTY: false }
    expect(colourEnabled(tty, {})).toBe(true)
    expect(colourEnabled(pipe, {})).toBe(false)
    expect(colourEnabled(tty, { NO_COLOR: "1" })).toBe(false)
    expect(colourEnabled(tty, { NO_COLOR: "" })).toBe(true)
    expect(colourEnabled(tty, { TERM: "dumb" })).toBe(false)
    expect(colourEnabled(pipe, { FORCE_COLOR: "1" })).toBe(true)
    expect(colourEnabled(tty, { FORCE_COLOR: "0" })).toBe(false)
    expect(colourEnabled(pipe, { FORCE_COLOR: "1", NO_COLOR: "1" })).toBe(false)
  })

  it("renderers are plain by default and coloured only with a palette", () => {
    const body = { code: "stale_file", stage: 6, paths: [], message: "m" } as const
    expect(renderEngineError(body)).toBe("error[stale_file] (stage lock): m\n")
    expect(renderEngineError(body, plain)).toBe("error[stale_file] (stage lock): m\n")
    expect(renderEngineError(body, ansi)).toBe(`${ESC}[31merror[stale_file]${ESC}[39m (stage lock): m\n`)
  })

  it("a small request shows nothing before SHOW_AFTER_MS, then its stages; the lock line comes once", () => {
    let t = 0
    const out: Array<string> = []
    const line = makeStatusLine((s) => out.push(s), () => t)
    line.listener({ _tag: "Resolving", paths: 3 })
    line.listener({ _tag: "LockWaiting", waitedMs: 0 })
    line.listener({ _tag: "LockWaiting", waitedMs: 500 })
    expect(out).toEqual([])
    line.listener({ _tag: "LockWaiting", waitedMs: 1000 })
    line.listener({ _tag: "LockWaiting", waitedMs: 1250 })
    expect(out).toEqual([`${LOCK_WAIT_LINE}\n`])
    t = SHOW_AFTER_MS
    line.listener({ _tag: "Committing", done: 0, total: 3 })
    line.listener({ _tag: "Committing", done: 3, total: 3 })
    line.listener({ _tag: "Recording", files: 3 })
    line.finish()
    line.finish()
    expect(out.slice(1)).toEqual(["\rcommitting 0/3", "\rcommitting 3/3", "\rrecording 3 files…", `\r${" ".repeat(18)}\r`])
  })

  it("a large request shows from its first event and repaints a stage at most every 50 ms, its last count always", () => {
    let t = 0
    const out: Array<string> = []
    const line = makeStatusLine((s) => out.push(s), () => t)
    line.listener({ _tag: "Resolving", paths: 10_000 })
    line.listener({ _tag: "Staging", done: 128, total: 10_000 })
    line.listener({ _tag: "Staging", done: 256, total: 10_000 })
    t = 60
    line.listener({ _tag: "Staging", done: 384, total: 10_000 })
    line.listener({ _tag: "Staging", done: 10_000, total: 10_000 })
    expect(out).toEqual([
      "\rresolving 10,000 paths…",
      "\rstaging 128/10,000     ",
      "\rstaging 384/10,000     ",
      "\rstaging 10,000/10,000  "
    ])
  })
})
