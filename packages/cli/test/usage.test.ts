/**
 * Usage errors through the built CLI: with `--json` every usage error (a flag or argument
 * effect/cli refuses, an unknown command, a file the command cannot read) is one JSON line on
 * stdout with exit 2, never help text; `forkjoin <unknown> --help` is an unknown-command error,
 * not the top-level help.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, json, makeSandbox, patch, removeSandboxes, runCli, snapshotTree } from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

/** The error body every usage error carries under --json (`message` checked by each test). */
const usageError = (code: "usage_invalid" | "request_invalid", command: string) => ({
  ok: false,
  error: { code, stage: 1, stageName: "normalize", paths: [], command, message: expect.any(String) }
})

describe("usage errors under --json: one JSON line on stdout, exit 2", () => {
  const { dir, ws } = makeSandbox()
  const patchFile = path.join(dir, "ok.patch")
  fs.writeFileSync(patchFile, patch("*** Add File: x.txt", "+x"))

  it.each([
    ["a missing argument", ["rollback", "--json", "--workspace", ws], "forkjoin rollback", /^Missing required argument: [A-Z_]+\. /],
    ["an unknown flag", ["apply", "--json", "--bogus", patchFile, "--workspace", ws], "forkjoin apply", /--bogus/],
    ["a flag value that is not a number", ["history", "diff", "--json", "#1", "--max-lines", "notanumber", "--workspace", ws], "forkjoin history diff", /--max-lines/],
    ["a bad choice", ["apply", patchFile, "--profile", "yolo", "--json", "--workspace", ws], "forkjoin apply", /--profile/],
    ["an unknown command", ["frobnicate", "--json"], "forkjoin", /Unknown subcommand "frobnicate" for "forkjoin"/],
    ["a flag the command lacks", ["history", "--json"], "forkjoin history", /Unrecognized flag: --json/],
    ["a patch file that cannot be read", ["apply", path.join(dir, "missing.patch"), "--workspace", ws, "--json"], "forkjoin apply", /missing\.patch/],
    ["a workspace that does not exist", ["repair", "--workspace", path.join(dir, "nope"), "--json"], "forkjoin repair", /nope/]
  ])("%s", (_name, args, command, mentions) => {
    const r = runCli(args)
    expect(r.status, r.stderr).toBe(2)
    expect(r.stderr).toBe("")
    const out = json(r.stdout)
    expect(out).toEqual(usageError("usage_invalid", command))
    expect(out.error.message).toMatch(mentions)
    // Actionable: says where the usage is, and never carries effect/cli's help text.
    expect(out.error.message).toContain(`Run '${command} --help' for usage.`)
    expect(r.stdout).not.toMatch(/USAGE|FLAGS/)
    expect(snapshotTree(ws)).toEqual({})
    expect(fs.existsSync(path.join(dir, "nope"))).toBe(false)
  })

  it("a refused id flag is request_invalid, as the engine names a bad id", () => {
    const r = runCli(["apply", patchFile, "--thread", "a b", "--json", "--workspace", ws])
    expect(r.status).toBe(2)
    const out = json(r.stdout)
    expect(out).toEqual(usageError("request_invalid", "forkjoin apply"))
    expect(out.error.message).toMatch(/the id "a b" is refused \(it contains " "\)/)
    expect(snapshotTree(ws)).toEqual({})
  })

  it("a near miss carries the suggestion as data, not inside the message", () => {
    const r = runCli(["aply", "--json"])
    expect(r.status).toBe(2)
    const out = json(r.stdout)
    expect(out.error).toMatchObject({ code: "usage_invalid", suggestions: ["apply"] })
    // The top level has no --json flag: effect/cli says so too, in the same message.
    expect(out.error.message).toBe(`Unknown subcommand "aply" for "forkjoin"; Unrecognized flag: --json in command forkjoin. Run 'forkjoin --help' for usage.`)
  })

  it("--json only counts as a flag: a value after --, --json=false or --no-json keep the text error", () => {
    for (const args of [["apply", "--bogus", "--", "--json"], ["apply", "--bogus", "--json=false"], ["apply", "--bogus", "--json", "no"], ["apply", "--bogus", "--no-json"]]) {
      const r = runCli([...args.slice(0, 1), "--workspace", ws, ...args.slice(1)])
      expect(r.status, args.join(" ")).toBe(2)
      expect(r.stdout, args.join(" ")).toBe("")
      expect(r.stderr).toMatch(/^error: Unrecognized flag: --bogus/)
    }
  })

  it("without --json a usage error stays text on stderr", () => {
    const r = runCli(["rollback", "--workspace", ws])
    expect(r.status).toBe(2)
    expect(r.stdout).toBe("")
    expect(r.stderr).toMatch(/^error: Missing required argument: [A-Z_]+\nRun 'forkjoin rollback --help' for usage\.\n$/)
  })
})

describe("forkjoin <unknown> --help: an unknown-command error, not the top-level help", () => {
  it.each([
    [["frobnicate", "--help"], `error: Unknown subcommand "frobnicate" for "forkjoin"\nRun 'forkjoin --help' for usage.\n`],
    [["frobnicate", "-h"], `error: Unknown subcommand "frobnicate" for "forkjoin"\nRun 'forkjoin --help' for usage.\n`],
    [["frobnicate"], `error: Unknown subcommand "frobnicate" for "forkjoin"\nRun 'forkjoin --help' for usage.\n`],
    [["--help", "aply"], `error: Unknown subcommand "aply" for "forkjoin"\n\n  Did you mean this?\n    apply\nRun 'forkjoin --help' for usage.\n`],
    [["history", "timelin", "--help"], `error: Unknown subcommand "timelin" for "forkjoin history"\n\n  Did you mean this?\n    timeline\nRun 'forkjoin history --help' for usage.\n`],
    [["token", "frobnicate", "-h"], `error: Unknown subcommand "frobnicate" for "forkjoin token"\nRun 'forkjoin token --help' for usage.\n`]
  ])("%j", (args, stderr) => {
    const r = runCli(args)
    expect(r.status).toBe(2)
    expect(r.stdout).toBe("")
    expect(r.stderr).toBe(stderr)
  })

  it("with --json it is the JSON usage error", () => {
    const r = runCli(["frobnicate", "--help", "--json"])
    expect(r.status).toBe(2)
    expect(json(r.stdout).error).toMatchObject({ code: "usage_invalid", command: "forkjoin", message: expect.stringMatching(/^Unknown subcommand "frobnicate"/) })
  })

  it("help for a real command, or with a command's argument, is still help (exit 0)", () => {
    for (const args of [["--help"], ["history", "--help"], ["history", "timeline", "--help"], ["apply", "frobnicate.patch", "--help"], ["--completions", "bash", "--help"]]) {
      const r = runCli(args)
      expect(r.status, args.join(" ")).toBe(0)
      expect(r.stdout, args.join(" ")).toContain("USAGE")
      expect(r.stderr).toBe("")
    }
  })
})
