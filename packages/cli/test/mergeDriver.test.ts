/**
 * `forkjoin merge-driver` as git runs it: a real `git merge` and `git cherry-pick` in a temp
 * repository whose `.gitattributes` sends `*.txt` to the built CLI (git's trace shows the
 * driver ran), and the driver called directly: it never leaves %A half-written (a write that
 * fails part-way, a folder it may not write), keeps %A for a binary conflict and refuses an
 * unusable input with %A untouched.
 */
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, buildCli, makeSandbox, removeSandboxes, runCli, snapshotTree } from "./helpers.ts"
import { numbered, openToAll, runMerge, text, writeSides } from "./mergeHelpers.ts"

beforeAll(() => {
  buildCli()
  // Warm the launcher's code cache, so a size-limited run below never has to write one.
  runCli(["--version"])
})
afterAll(removeSandboxes)

/** git with no user or system configuration, its trace on stderr. */
const git = (repo: string, ...args: ReadonlyArray<string>) => {
  const r = spawnSync("git", args, {
    cwd: repo,
    encoding: "utf8",
    env: { PATH: process.env["PATH"] ?? "", HOME: repo, GIT_CONFIG_NOSYSTEM: "1", GIT_TRACE: "1", LC_ALL: "C" }
  })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** `git ...` that must succeed. */
const gitOk = (repo: string, ...args: ReadonlyArray<string>): string => {
  const r = git(repo, ...args)
  expect(r.status, `git ${args.join(" ")}: ${r.stderr}`).toBe(0)
  return r.stdout
}

/**
 * A repository whose `f.txt` starts as `base` on main, becomes `ours` on main and `theirs` on
 * branch `side`, with forkjoin registered as the merge driver of `*.txt` (as the README says).
 */
const repoWith = (sides: { readonly base: string; readonly ours: string; readonly theirs: string }, file = "f.txt"): string => {
  const repo = path.join(makeSandbox().dir, "repo")
  fs.mkdirSync(repo)
  gitOk(repo, "init", "-q", "-b", "main")
  gitOk(repo, "config", "user.name", "Test")
  gitOk(repo, "config", "user.email", "test@example.test")
  gitOk(repo, "config", "merge.forkjoin.name", "forkjoin merge")
  gitOk(repo, "config", "merge.forkjoin.driver", `"${process.execPath}" "${BIN}" merge-driver %O %A %B %P`)
  fs.writeFileSync(path.join(repo, ".gitattributes"), "*.txt merge=forkjoin\n*.ts merge=forkjoin\n")
  fs.writeFileSync(path.join(repo, file), sides.base)
  gitOk(repo, "add", ".")
  gitOk(repo, "commit", "-q", "-m", "base")
  gitOk(repo, "checkout", "-q", "-b", "side")
  fs.writeFileSync(path.join(repo, file), sides.theirs)
  gitOk(repo, "commit", "-q", "-am", "theirs")
  gitOk(repo, "checkout", "-q", "main")
  fs.writeFileSync(path.join(repo, file), sides.ours)
  gitOk(repo, "commit", "-q", "-am", "ours")
  return repo
}

/** True when git's trace shows it ran forkjoin's driver on one of its temp files. */
const ranDriver = (trace: string, file = "f.txt"): boolean =>
  new RegExp(`run_command: .*forkjoin\\.mjs" merge-driver \\.merge_file_\\w+ \\.merge_file_\\w+ \\.merge_file_\\w+ \\S*${file.replace(".", "\\.")}`).test(trace)

describe("git runs forkjoin as its merge driver", () => {
  it("git merge: a clean merge through the driver, committed", () => {
    const repo = repoWith({ base: text("a", "b", "c", "d", "e"), ours: text("A", "b", "c", "d", "e"), theirs: text("a", "b", "c", "d", "E") })
    const r = git(repo, "merge", "-q", "--no-edit", "side")
    expect(r.status, r.stderr).toBe(0)
    expect(ranDriver(r.stderr)).toBe(true)
    expect(fs.readFileSync(path.join(repo, "f.txt"), "utf8")).toBe(text("A", "b", "c", "d", "E"))
    expect(gitOk(repo, "status", "--porcelain")).toBe("")
    expect(gitOk(repo, "show", "HEAD:f.txt")).toBe(text("A", "b", "c", "d", "E"))
  })

  it("git merge: a conflict leaves the driver's markers in the file and the path unmerged", () => {
    const repo = repoWith({ base: text("a", "b", "c"), ours: text("a", "X", "c"), theirs: text("a", "Y", "c") })
    const r = git(repo, "merge", "-q", "--no-edit", "side")
    expect(r.status).toBe(1)
    expect(ranDriver(r.stderr)).toBe(true)
    expect(r.stderr).toContain("forkjoin merge-driver: f.txt: 1 conflict marked between <<<<<<< and >>>>>>>")
    // git's own merge would say <<<<<<< HEAD and show no base: these are the driver's.
    expect(fs.readFileSync(path.join(repo, "f.txt"), "utf8")).toBe(text("a", "<<<<<<< ours", "X", "||||||| base", "b", "=======", "Y", ">>>>>>> theirs", "c"))
    expect(gitOk(repo, "status", "--porcelain")).toBe("UU f.txt\n")
    expect(fs.readdirSync(repo).filter((f) => f.includes("forkjoin"))).toEqual([])
  })

  it("git merge: imports both branches added at the same place merge by syntax, where git's own merge conflicts", () => {
    const sides = {
      base: text(`import { a } from "./a"`, "", "export const x = 1"),
      ours: text(`import { a } from "./a"`, `import { b } from "./b"`, "", "export const x = 1"),
      theirs: text(`import { a } from "./a"`, `import { c } from "./c"`, "", "export const x = 1")
    }
    const repo = repoWith(sides, "index.ts")
    const r = git(repo, "merge", "-q", "--no-edit", "side")
    expect(r.status, r.stderr).toBe(0)
    expect(ranDriver(r.stderr, "index.ts")).toBe(true)
    expect(gitOk(repo, "show", "HEAD:index.ts")).toBe(text(`import { a } from "./a"`, `import { b } from "./b"`, `import { c } from "./c"`, "", "export const x = 1"))
    // Without the driver the same merge conflicts.
    const at = writeSides(makeSandbox().dir, sides)
    expect(git(repo, "merge-file", "-p", at.ours, at.base, at.theirs).status).toBe(1)
  })

  it("git cherry-pick goes through the driver too", () => {
    const repo = repoWith({ base: text("a", "b", "c", "d", "e"), ours: text("A", "b", "c", "d", "e"), theirs: text("a", "b", "c", "d", "E") })
    const r = git(repo, "cherry-pick", "side")
    expect(r.status, r.stderr).toBe(0)
    expect(ranDriver(r.stderr)).toBe(true)
    expect(gitOk(repo, "show", "HEAD:f.txt")).toBe(text("A", "b", "c", "d", "E"))
  })
})

describe("the driver never leaves %A half-written", () => {
  /** git's three temp files, as it hands them to a driver, in a fresh folder. */
  const driverFiles = (sides: { readonly base: string | Uint8Array; readonly ours: string | Uint8Array; readonly theirs: string | Uint8Array }) => {
    const { dir } = makeSandbox()
    const at = writeSides(dir, sides, { base: ".merge_file_O", ours: ".merge_file_A", theirs: ".merge_file_B" })
    return { dir, at, args: ["merge-driver", at.base, at.ours, at.theirs, "src/f.txt"] }
  }
  // About 190 KiB of clean result.
  const BIG = {
    base: numbered(20_000),
    ours: numbered(20_000, { first: 0, stride: 1000, tag: "ours" }),
    theirs: numbered(20_000, { first: 500, stride: 1000, tag: "theirs" })
  }

  it("a write that fails part-way (file size limit) exits 255 with %A whole and no temp file", () => {
    const { dir, args } = driverFiles(BIG)
    const before = snapshotTree(dir)
    const r = runMerge(args, { fileSizeBlocks: 128 })
    expect(r.status).toBe(255)
    expect(r.stderr).toMatch(/^forkjoin merge-driver: error\[write_failed\]: .*\.merge_file_A could not be written \(EFBIG/)
    expect(snapshotTree(dir)).toEqual(before)
  })

  it("a folder it may not write exits 255 with %A untouched, even where %A itself is writable", () => {
    const { dir, at, args } = driverFiles(BIG)
    openToAll(dir)
    for (const f of [at.base, at.ours, at.theirs]) fs.chmodSync(f, 0o666)
    const before = snapshotTree(dir)
    const r = runMerge(args, { unprivileged: true })
    expect(r.status).toBe(255)
    expect(r.stderr).toMatch(/error\[write_failed\]: .*could not be written \(EACCES/)
    expect(snapshotTree(dir)).toEqual(before)
  })

  it("the clean result replaces %A, which keeps its mode", () => {
    const { at, args } = driverFiles(BIG)
    fs.chmodSync(at.ours, 0o644)
    const r = runMerge(args)
    expect(r.status, r.stderr).toBe(0)
    expect(r.stderr).toBe("")
    const expected = execFileSync("git", ["merge-file", "-p", at.ours, at.base, at.theirs], { encoding: "utf8" })
    expect(fs.readFileSync(at.ours, "utf8")).toBe(expected)
    expect(fs.statSync(at.ours).mode & 0o7777).toBe(0o644)
  })

  it("a binary file both sides changed keeps %A as it is and exits 1 (a conflict to git)", () => {
    const { dir, args } = driverFiles({ base: "text\n", ours: Uint8Array.from([0, 9, 0]), theirs: "other\n" })
    const before = snapshotTree(dir)
    const r = runMerge(args)
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/^forkjoin merge-driver: src\/f\.txt: both sides changed it and a version is binary/)
    expect(snapshotTree(dir)).toEqual(before)
  })

  it("a missing input exits 2 naming it, %A untouched", () => {
    const { dir, at, args } = driverFiles(BIG)
    fs.rmSync(at.base)
    const before = snapshotTree(dir)
    const r = runMerge(args)
    expect(r.status).toBe(2)
    expect(r.stderr).toContain(`error[input_missing]: %O (base) ${at.base} does not exist`)
    expect(snapshotTree(dir)).toEqual(before)
  })
})
