/**
 * Help through the built CLI is wrapped to the terminal width (COLUMNS, else the terminal's
 * columns, else 80) at word boundaries, continuation lines indented under their column; usage
 * lines and examples stay whole.
 */
import { spawnSync } from "node:child_process"
import { beforeAll, describe, expect, it } from "vitest"
import { helpWidth, wrapHelp } from "../src/internal/helpWrap.ts"
import { BIN, buildCli, ROOT, runCli } from "./helpers.ts"

beforeAll(buildCli)

/** Every line of `text` is at most `width` columns wide, except a single word that is longer. */
const expectWrapped = (text: string, width: number): void => {
  for (const line of text.split("\n")) {
    if (line.length > width) expect(line.trim(), `too long at ${width}: ${line}`).not.toContain(" ")
  }
}

describe("help is wrapped to the terminal width", () => {
  it("through a pipe: 80 columns; continuation lines start under their column", () => {
    const { COLUMNS: _c, ...env } = process.env
    const r = spawnSync(process.execPath, [BIN, "apply", "--help"], { cwd: ROOT, encoding: "utf8", env: { ...env, NO_COLOR: "1" } })
    expect(r.status).toBe(0)
    const lines = r.stdout.split("\n")
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThanOrEqual(80)
    // The description wraps at word boundaries with its two-space indent.
    const description = lines.slice(1, lines.indexOf("USAGE") - 1)
    expect(description.length).toBeGreaterThan(1)
    for (const line of description) expect(line).toMatch(/^ {2}\S/)
    expect(description.map((l) => l.trim()).join(" ")).toMatch(/^Apply one Codex apply_patch patch to a workspace through the native engine, all or nothing\. .* 2 usage error\.$/)
    // A flag's description continues under the description column, not under the flag.
    const workspace = lines.findIndex((l) => l.startsWith("  --workspace DIR "))
    const column = lines[workspace]!.indexOf("Workspace root")
    expect(column).toBeGreaterThan(20)
    expect(lines[workspace + 1]).toMatch(new RegExp(`^ {${column}}\\S`))
    const joined = [lines[workspace]!.slice(column)]
    for (let i = workspace + 1; lines[i]!.startsWith(" ".repeat(column)); i++) joined.push(lines[i]!.trim())
    expect(joined.join(" ")).toBe(
      "Workspace root the patch's relative paths are resolved against (default: the nearest folder with .forkjoin above the current one, else the git root, else the current folder)"
    )
  })

  it("COLUMNS sets the width; examples (commands to copy) are never broken", () => {
    for (const width of [60, 100, 132]) {
      const r = runCli(["apply", "--help"], { env: { COLUMNS: String(width) } })
      expect(r.status).toBe(0)
      expectWrapped(r.stdout, width)
      expect(r.stdout.split("\n").some((l) => l.length > width - 12), `width ${width} used`).toBe(true)
      expect(r.stdout).toContain("  cat fix.patch | forkjoin apply - --workspace repo --json\n")
    }
    const top = runCli(["--help"], { env: { COLUMNS: "60" } })
    expectWrapped(top.stdout, 60)
    expect(top.stdout).toContain("\n  schema          Print the JSON Schema of plan files,\n                  changesets, history records or provider\n                  events\n")
    // A row whose left cell leaves under 24 columns puts its description below it.
    expect(top.stdout).toContain(
      "\n  --completions <bash|zsh|fish|powershell|sh|pwsh>\n          Print shell completion script (choices: bash, zsh,\n          fish, powershell, sh, pwsh)\n"
    )
  })

  it("a COLUMNS that is not a positive number is ignored (80 through a pipe)", () => {
    for (const columns of ["abc", "0", "-5", ""]) {
      const r = runCli(["apply", "--help"], { env: { COLUMNS: columns } })
      expect(r.status).toBe(0)
      expect(Math.max(...r.stdout.split("\n").map((l) => l.length)), columns).toBeLessThanOrEqual(80)
      expect(Math.max(...r.stdout.split("\n").map((l) => l.length)), columns).toBeGreaterThan(70)
    }
  })

  it("on a terminal: the terminal's columns", () => {
    // stdout on a pseudo-terminal of 70 columns (python3's pty), stdin and stderr closed off.
    const runner = `
import fcntl, json, os, pty, struct, subprocess, sys, termios
master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 70, 0, 0))
attrs = termios.tcgetattr(slave)
attrs[1] &= ~termios.OPOST
termios.tcsetattr(slave, termios.TCSANOW, attrs)
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.DEVNULL)
os.close(slave)
out = b""
while True:
    try:
        data = os.read(master, 65536)
    except OSError:
        data = b""
    if not data:
        break
    out += data
print(json.dumps({"status": p.wait(), "stdout": out.decode("utf-8")}))
`
    const { COLUMNS: _c, ...env } = process.env
    const r = spawnSync("python3", ["-c", runner, process.execPath, BIN, "apply", "--help"], { cwd: ROOT, encoding: "utf8", env: { ...env, NO_COLOR: "1" } })
    const result = JSON.parse(r.stdout) as { status: number; stdout: string }
    expect(result.status).toBe(0)
    expectWrapped(result.stdout, 70)
    expect(Math.max(...result.stdout.split("\n").map((l) => l.length))).toBeGreaterThan(60)
  })
})

describe("wrapHelp and helpWidth", () => {
  it("measures visible columns: colour codes neither count nor break, a word longer than the line stays whole", () => {
    const green = (s: string) => `\u001B[32m${s}\u001B[0m`
    const text = `FLAGS\n  ${green("--db")} ${green("FILE")}    Patch history database (default <workspace>/.forkjoin/a-very-long-path/history.db, created on first use)`
    const wrapped = wrapHelp(text, 40).split("\n")
    expect(wrapped.map((l) => l.replace(/\u001B\[[0-9;]*m/g, ""))).toEqual([
      "FLAGS",
      "  --db FILE    Patch history database",
      "               (default",
      "               <workspace>/.forkjoin/a-very-long-path/history.db,",
      "               created on first use)"
    ])
    expect(wrapped[1]).toContain(green("--db"))
  })

  it("COLUMNS first, then the terminal, then 80; never below 40", () => {
    expect(helpWidth({ isTTY: true, columns: 120 }, { COLUMNS: "90" })).toBe(90)
    expect(helpWidth({ isTTY: true, columns: 120 }, {})).toBe(120)
    expect(helpWidth({ isTTY: false, columns: 120 }, {})).toBe(80)
    expect(helpWidth({ isTTY: true, columns: 120 }, { COLUMNS: "9x" })).toBe(120)
    expect(helpWidth({}, { COLUMNS: "12" })).toBe(40)
  })
})
