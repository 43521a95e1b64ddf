/**
 * `forkjoin merge-file` through the built CLI, against what `git merge-file` does: the result
 * goes into OURS (or to stdout with -p, or to -o FILE), exit 0 clean or the number of conflicts
 * (at most 127) with labelled diff3 markers; a missing, directory, unreadable or non-regular
 * input exits 2 naming it with nothing written; a binary file both sides changed exits 255;
 * a write that fails half-way leaves OURS as it was; `--json` is one line of the schema.
 */
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { MergeFileFailure, MergeFileReport } from "../src/MergeFileReport.ts"
import { buildCli, json, makeSandbox, removeSandboxes, runCli, snapshotTree } from "./helpers.ts"
import { numbered, openToAll, runMerge, text, writeSides } from "./mergeHelpers.ts"

beforeAll(() => {
  buildCli()
  // Warm the launcher's code cache, so a size-limited run below never has to write one.
  runCli(["--version"])
})
afterAll(removeSandboxes)

const decodeReport = Schema.decodeUnknownSync(MergeFileReport)
const decodeFailure = Schema.decodeUnknownSync(MergeFileFailure)

const BASE = text("a", "b", "c", "d", "e")
const OURS = text("A", "b", "c", "d", "e")
const THEIRS = text("a", "b", "c", "d", "E")
const MERGED = text("A", "b", "c", "d", "E")

/** Three sides that conflict on line 2 only. */
const CONFLICTING = { base: text("a", "b", "c"), ours: text("a", "X", "c"), theirs: text("a", "Y", "c") }

const read = (file: string): string => fs.readFileSync(file, "utf8")

describe("merge-file writes the result where git merge-file would", () => {
  it("merges a clean change into OURS, leaving BASE, THEIRS and nothing else behind", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, { base: BASE, ours: OURS, theirs: THEIRS })
    const r = runMerge(["merge-file", at.ours, at.base, at.theirs])
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toBe("")
    expect(r.stderr).toBe("")
    expect(read(at.ours)).toBe(MERGED)
    expect(read(at.base)).toBe(BASE)
    expect(read(at.theirs)).toBe(THEIRS)
    expect(fs.readdirSync(dir).sort()).toEqual(["base.txt", "ours.txt", "outside", "theirs.txt", "ws"])
  })

  it("matches git merge-file byte for byte on a clean merge", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, { base: BASE, ours: OURS, theirs: THEIRS })
    const git = execFileSync("git", ["merge-file", "-p", at.ours, at.base, at.theirs], { encoding: "utf8" })
    const r = runMerge(["merge-file", "-p", at.ours, at.base, at.theirs])
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toBe(git)
  })

  it("-p prints the result and touches no file", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, { base: BASE, ours: OURS, theirs: THEIRS })
    const before = snapshotTree(dir)
    const r = runMerge(["merge-file", "-p", at.ours, at.base, at.theirs])
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toBe(MERGED)
    expect(snapshotTree(dir)).toEqual(before)
  })

  it("-o writes the result to a new file and leaves OURS as it was", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, { base: BASE, ours: OURS, theirs: THEIRS })
    const out = path.join(dir, "out.txt")
    const r = runMerge(["merge-file", "-o", out, at.ours, at.base, at.theirs])
    expect(r.status, r.stderr).toBe(0)
    expect(read(out)).toBe(MERGED)
    expect(read(at.ours)).toBe(OURS)
  })

  it("-o replaces an existing file, keeping its mode", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, { base: BASE, ours: OURS, theirs: THEIRS })
    const out = path.join(dir, "out.txt")
    fs.writeFileSync(out, "old\n")
    fs.chmodSync(out, 0o640)
    const r = runMerge(["merge-file", "--output", out, at.ours, at.base, at.theirs])
    expect(r.status, r.stderr).toBe(0)
    expect(read(out)).toBe(MERGED)
    expect(fs.statSync(out).mode & 0o7777).toBe(0o640)
  })

  it("keeps OURS's mode when it replaces OURS", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, { base: BASE, ours: OURS, theirs: THEIRS })
    fs.chmodSync(at.ours, 0o751)
    const r = runMerge(["merge-file", at.ours, at.base, at.theirs])
    expect(r.status, r.stderr).toBe(0)
    expect(fs.statSync(at.ours).mode & 0o7777).toBe(0o751)
  })

  it("writes through a symbolic link at OURS: the link stays, its target gets the result", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, { base: BASE, ours: OURS, theirs: THEIRS })
    const link = path.join(dir, "link.txt")
    fs.symlinkSync("ours.txt", link)
    const r = runMerge(["merge-file", link, at.base, at.theirs])
    expect(r.status, r.stderr).toBe(0)
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true)
    expect(fs.readlinkSync(link)).toBe("ours.txt")
    expect(read(at.ours)).toBe(MERGED)
  })

  it("takes the changed side byte for byte when the other side equals BASE, binary or not", () => {
    const { dir } = makeSandbox()
    const binary = Uint8Array.from([0, 1, 2, 255, 10, 0])
    const at = writeSides(dir, { base: "plain\n", ours: "plain\n", theirs: binary })
    const r = runMerge(["merge-file", at.ours, at.base, at.theirs])
    expect(r.status, r.stderr).toBe(0)
    expect(new Uint8Array(fs.readFileSync(at.ours))).toEqual(binary)
  })
})

/** `git merge-file --diff3 -p` of the three files: its stdout and exit code. */
const gitMergeFile = (...args: ReadonlyArray<string>) => {
  const r = spawnSync("git", ["merge-file", "--diff3", "-p", ...args], { encoding: "utf8" })
  return { status: r.status, stdout: r.stdout }
}

describe("conflicts: markers labelled with the file names or -L, exit the number of conflicts", () => {
  it("writes a conflict with the file names as labels and exits 1, byte for byte as git merge-file --diff3", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, CONFLICTING)
    const git = gitMergeFile(at.ours, at.base, at.theirs)
    const r = runMerge(["merge-file", at.ours, at.base, at.theirs])
    expect(r.status).toBe(1)
    expect(git.status).toBe(1)
    expect(read(at.ours)).toBe(text("a", `<<<<<<< ${at.ours}`, "X", `||||||| ${at.base}`, "b", "=======", "Y", `>>>>>>> ${at.theirs}`, "c"))
    expect(read(at.ours)).toBe(git.stdout)
    expect(r.stdout).toBe("")
    expect(r.stderr).toBe(`1 conflict written to ${at.ours} between <<<<<<< and >>>>>>> markers: edit each region to what it should say and remove the markers.\n`)
    expect(read(at.base)).toBe(CONFLICTING.base)
    expect(read(at.theirs)).toBe(CONFLICTING.theirs)
  })

  it("exits with the number of conflicts", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, {
      base: numbered(30),
      ours: numbered(30, { first: 1, stride: 10, tag: "ours" }),
      theirs: numbered(30, { first: 1, stride: 10, tag: "theirs" })
    })
    const r = runMerge(["merge-file", "-p", at.ours, at.base, at.theirs])
    expect(r.status).toBe(3)
    expect(r.stdout.match(/^<<<<<<< /gm)).toHaveLength(3)
    expect(gitMergeFile(at.ours, at.base, at.theirs).status).toBe(3)
  })

  it("caps the exit code at 127 while --json counts every conflict", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, {
      base: numbered(400),
      ours: numbered(400, { first: 0, stride: 3, tag: "ours" }),
      theirs: numbered(400, { first: 0, stride: 3, tag: "theirs" })
    })
    const out = path.join(dir, "out.txt")
    const r = runMerge(["merge-file", "--json", "-o", out, at.ours, at.base, at.theirs])
    expect(r.status).toBe(127)
    expect(json(r.stdout)).toEqual({ ok: true, path: out, clean: false, conflicts: 134, method: "line" })
    expect(read(out).match(/^<<<<<<< /gm)).toHaveLength(134)
  })

  it("-L names the sides in order: ours, base, theirs", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, CONFLICTING)
    const r = runMerge(["merge-file", "-p", "-L", "mine", "-L", "original", "-L", "upstream", at.ours, at.base, at.theirs])
    expect(r.status).toBe(1)
    expect(r.stdout).toBe(text("a", "<<<<<<< mine", "X", "||||||| original", "b", "=======", "Y", ">>>>>>> upstream", "c"))
    expect(r.stdout).toBe(gitMergeFile("-L", "mine", "-L", "original", "-L", "upstream", at.ours, at.base, at.theirs).stdout)
  })

  it("a side without an -L keeps its file name, and a label cannot forge a marker line", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, CONFLICTING)
    const r = runMerge(["merge-file", "-p", "--label", "mine\n=======\nforged", at.ours, at.base, at.theirs])
    expect(r.status).toBe(1)
    expect(r.stdout).toBe(text("a", "<<<<<<< mine ======= forged", "X", `||||||| ${at.base}`, "b", "=======", "Y", `>>>>>>> ${at.theirs}`, "c"))
  })

  it("refuses a fourth -L as a usage error, writing nothing", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, CONFLICTING)
    const before = snapshotTree(dir)
    const r = runMerge(["merge-file", "-L", "1", "-L", "2", "-L", "3", "-L", "4", at.ours, at.base, at.theirs])
    expect(r.status).toBe(2)
    expect(r.stderr).toMatch(/--label/)
    expect(snapshotTree(dir)).toEqual(before)
  })
})

describe("bad input: exit 2 naming the path, nothing written", () => {
  const roles = ["OURS", "BASE", "THEIRS"] as const
  /** The three sides in a fresh sandbox with `role`'s path replaced by what `spoil` makes there. */
  const spoiled = (role: typeof roles[number], spoil: (file: string) => void) => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, { base: BASE, ours: OURS, theirs: THEIRS })
    const files = { OURS: at.ours, BASE: at.base, THEIRS: at.theirs }
    const bad = path.join(dir, `bad-${role.toLowerCase()}`)
    spoil(bad)
    const args = roles.map((r) => (r === role ? bad : files[r]))
    return { dir, bad, args }
  }
  const cases: ReadonlyArray<readonly [string, string, (file: string) => void, RegExp]> = [
    ["missing", "input_missing", () => {}, /does not exist/],
    ["a directory", "input_is_directory", (file) => fs.mkdirSync(file), /is a directory/],
    ["a symbolic link to nothing", "input_missing", (file) => fs.symlinkSync("nowhere", file), /does not exist/],
    ["a symbolic link loop", "input_unreadable", (file) => fs.symlinkSync(path.basename(file), file), /cannot be read \(ELOOP/],
    ["a named pipe (never waited on)", "input_unreadable", (file) => execFileSync("mkfifo", [file]), /not a regular file/]
  ]
  for (const role of roles) {
    it.each(cases)(`${role} %s`, (_name, code, spoil, says) => {
      const { dir, bad, args } = spoiled(role, spoil)
      // The bad entry itself is compared by kind: reading a named pipe would wait forever.
      const kind = (): number | "none" => fs.lstatSync(bad, { throwIfNoEntry: false })?.mode ?? "none"
      const before = [snapshotTree(dir, [path.basename(bad)]), kind()]
      const r = runMerge(["merge-file", ...args])
      expect(r.status).toBe(2)
      expect(r.stdout).toBe("")
      expect(r.stderr).toContain(`error[${code}]: ${role} ${bad} `)
      expect(r.stderr).toMatch(says)
      expect(r.stderr).toContain(`  path: ${bad}\n`)
      expect([snapshotTree(dir, [path.basename(bad)]), kind()]).toEqual(before)
    })
  }

  it.each(roles)("%s unreadable (mode 000) as a user without permission", (role) => {
    const { dir, bad, args } = spoiled(role, (file) => {
      fs.writeFileSync(file, BASE)
      fs.chmodSync(file, 0o000)
    })
    openToAll(dir)
    // nobody may write the folder and OURS, so only a refusal keeps them as they are.
    for (const f of fs.readdirSync(dir)) if (!f.startsWith("bad-")) fs.chmodSync(path.join(dir, f), 0o777)
    fs.chmodSync(dir, 0o777)
    const before = snapshotTree(dir)
    const r = runMerge(["merge-file", "--json", ...args], { unprivileged: true })
    expect(r.status).toBe(2)
    const out = decodeFailure(json(r.stdout))
    expect(out.error.code).toBe("input_unreadable")
    expect(out.error.paths).toEqual([bad])
    expect(out.error.message).toContain(`${role} ${bad} cannot be read (EACCES`)
    expect(out.error.message).toMatch(/check the permissions/)
    expect(snapshotTree(dir)).toEqual(before)
  })

  it("an -o that is a directory, a link to nothing or in a missing folder is output_invalid", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, { base: BASE, ours: OURS, theirs: THEIRS })
    fs.mkdirSync(path.join(dir, "adir"))
    fs.symlinkSync("nowhere", path.join(dir, "dangling"))
    const before = snapshotTree(dir)
    for (const [out, says] of [["adir", /is a directory/], ["dangling", /symbolic link that does not lead to a file/], ["no/such/out.txt", /does not exist; create it first/]] as const) {
      const r = runMerge(["merge-file", "-o", path.join(dir, out), at.ours, at.base, at.theirs])
      expect(r.status, out).toBe(2)
      expect(r.stderr).toContain(`error[output_invalid]: -o ${path.join(dir, out)}`)
      expect(r.stderr).toMatch(says)
      expect(snapshotTree(dir)).toEqual(before)
    }
  })

  it("a file name with control characters is quoted in the message, never printed raw", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, { base: BASE, ours: OURS, theirs: THEIRS })
    const evil = path.join(dir, "x\u001b]0;owned\u0007\nerror[fake]: y")
    const r = runMerge(["merge-file", evil, at.base, at.theirs])
    expect(r.status).toBe(2)
    expect(r.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/)
    expect(r.stderr.split("\n").filter((l) => l.startsWith("error["))).toHaveLength(1)
    expect(r.stderr).toContain(JSON.stringify(evil))
  })

  it("-p with -o, and -p with --json, are usage errors", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, { base: BASE, ours: OURS, theirs: THEIRS })
    const before = snapshotTree(dir)
    const both = runMerge(["merge-file", "-p", "-o", path.join(dir, "out"), at.ours, at.base, at.theirs])
    expect(both.status).toBe(2)
    expect(both.stdout).toBe("")
    expect(both.stderr).toMatch(/^error: -p prints the result and -o writes it to a file: give one of them\n/)
    const jsonToo = runMerge(["merge-file", "-p", "--json", at.ours, at.base, at.theirs])
    expect(jsonToo.status).toBe(2)
    expect(json(jsonToo.stdout).error).toMatchObject({ code: "usage_invalid", command: "forkjoin merge-file", message: expect.stringMatching(/use -o FILE with --json/) })
    expect(snapshotTree(dir)).toEqual(before)
  })

  it("--language takes only a language it has a grammar for", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, { base: BASE, ours: OURS, theirs: THEIRS })
    const bad = runMerge(["merge-file", "--language", "cobol", at.ours, at.base, at.theirs])
    expect(bad.status).toBe(2)
    expect(bad.stderr).toMatch(/--language: "cobol"\. Expected: "typescript" \| "tsx" \| "javascript" \| "python" \| "json"/)
    expect(read(at.ours)).toBe(OURS)
    const good = runMerge(["merge-file", "--language", "python", "--json", at.ours, at.base, at.theirs])
    expect(good.status, good.stderr).toBe(0)
    expect(read(at.ours)).toBe(MERGED)
  })
})

describe("binary files and failing writes", () => {
  it("a binary file both sides changed exits 255 and writes nothing", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, { base: "text\n", ours: Uint8Array.from([0, 1, 2]), theirs: "other text\n" })
    const before = snapshotTree(dir)
    const r = runMerge(["merge-file", "--json", at.ours, at.base, at.theirs])
    expect(r.status).toBe(255)
    const out = decodeFailure(json(r.stdout))
    expect(out.error.code).toBe("binary_file")
    expect(out.error.paths).toEqual([at.ours, at.base, at.theirs])
    expect(out.error.message).toMatch(/binary.*nothing was written/)
    expect(snapshotTree(dir)).toEqual(before)
  })

  it("a write that fails half-way (file size limit) leaves OURS whole and no temp file", () => {
    const { dir } = makeSandbox()
    // About 190 KiB of result against a 64 KiB limit: the write fails with EFBIG part-way.
    const base = numbered(20_000)
    const at = writeSides(dir, { base, ours: numbered(20_000, { first: 0, stride: 1000, tag: "ours" }), theirs: numbered(20_000, { first: 500, stride: 1000, tag: "theirs" }) })
    const before = snapshotTree(dir)
    const r = runMerge(["merge-file", "--json", at.ours, at.base, at.theirs], { fileSizeBlocks: 128 })
    expect(r.status).toBe(255)
    const out = decodeFailure(json(r.stdout))
    expect(out.error.code).toBe("write_failed")
    expect(out.error.paths).toEqual([at.ours])
    expect(out.error.message).toMatch(/could not be written \(EFBIG.*so it is unchanged/)
    expect(snapshotTree(dir)).toEqual(before)
  })
})

describe("--json: one line of the report schema", () => {
  it("a clean merge into OURS", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, { base: BASE, ours: OURS, theirs: THEIRS })
    const r = runMerge(["merge-file", "--json", at.ours, at.base, at.theirs])
    expect(r.status, r.stderr).toBe(0)
    expect(r.stderr).toBe("")
    const report = decodeReport(json(r.stdout))
    expect(report).toEqual({ ok: true, path: at.ours, clean: true, conflicts: 0, method: "line" })
  })

  it("a conflicted merge to -o", () => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, CONFLICTING)
    const out = path.join(dir, "out.txt")
    const r = runMerge(["merge-file", "--json", "-o", out, at.ours, at.base, at.theirs])
    expect(r.status).toBe(1)
    expect(r.stderr).toBe("")
    expect(decodeReport(json(r.stdout))).toEqual({ ok: true, path: out, clean: false, conflicts: 1, method: "line" })
  })

  it("a failure: code, paths and message", () => {
    const { dir } = makeSandbox()
    const missing = path.join(dir, "missing.txt")
    const r = runMerge(["merge-file", "--json", missing, missing, missing])
    expect(r.status).toBe(2)
    expect(r.stderr).toBe("")
    expect(decodeFailure(json(r.stdout))).toEqual({
      ok: false,
      error: { code: "input_missing", paths: [missing], message: `OURS ${missing} does not exist: check the path (a symbolic link must point to an existing file)` }
    })
  })
})
