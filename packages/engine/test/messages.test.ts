/**
 * What the engine says when a system call or a path refuses it (issue 9 item 9): a name that
 * is too long is not a permission problem, a system error's code is not doubled, a failed
 * delete is a failed delete, refused reads do not talk about writing, and a guard on a
 * symbolic link says what is there.
 */
import type { FileState } from "@forkjoin/patch"
import { sha256 } from "@forkjoin/patch/Bytes"
import { ThreadId, TurnId } from "@forkjoin/schema/Ids"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { checkGuards, guardsOf } from "../src/internal/guards.ts"
import { failureOf, makeWorkspace, patchOf, removeSandboxes, treeHash, withEngine } from "./helpers.ts"

afterAll(removeSandboxes)

const ids = { threadId: ThreadId.make("t"), turnId: TurnId.make("u") }
const LONG = "n".repeat(300)

/** How many times `needle` occurs in `text`. */
const count = (text: string, needle: string): number => text.split(needle).length - 1

describe("system errors while resolving and writing", () => {
  it("a file name longer than the filesystem allows: path_invalid that says so, not 'check its permissions'", async () => {
    const ws = makeWorkspace({ "a.txt": "a\n" })
    const before = treeHash(ws)
    const { exit, records } = await withEngine(ws, (e) => e.applyPatch({ ...ids, patch: patchOf(`*** Add File: ${LONG}.txt`, "+x") }))
    const error = failureOf(exit)
    expect([error.code, error.stage]).toEqual(["path_invalid", 3])
    expect(error.message).toMatch(/ENAMETOOLONG/)
    expect(error.message).toMatch(/too long.*shorter/)
    expect(error.message).not.toMatch(/permission/)
    expect(records).toEqual([])
    expect(treeHash(ws)).toBe(before)
  })

  it("a directory name too long fails staging with its code once and the advice for it", async () => {
    const ws = makeWorkspace({ "a.txt": "a\n" })
    const before = treeHash(ws)
    const { exit } = await withEngine(ws, (e) => e.applyPatch({ ...ids, patch: patchOf(`*** Add File: d/${LONG}/a.txt`, "+x") }))
    const error = failureOf(exit)
    expect([error.code, error.stage]).toEqual(["commit_failed", 7])
    expect(count(error.message, "ENAMETOOLONG")).toBe(1)
    expect(error.message).toMatch(/too long.*shorter/)
    expect(treeHash(ws)).toBe(before)
  })

  it("a delete refused by the system: 'Deleting' (not 'Writing'), EPERM once, the file still there", async () => {
    const ws = makeWorkspace({ "d/a.txt": "1\n" })
    const dir = path.join(ws, "d")
    // An immutable directory refuses the unlink, even for root.
    execFileSync("chattr", ["+i", dir])
    try {
      const { exit, records } = await withEngine(ws, (e) => e.applyPatch({ ...ids, patch: patchOf("*** Delete File: d/a.txt") }))
      const error = failureOf(exit)
      expect([error.code, error.stage, error.paths]).toEqual(["commit_failed", 8, ["d/a.txt"]])
      expect(error.message).toMatch(/^Deleting 'd\/a\.txt' failed \(EPERM: operation not permitted/)
      expect(count(error.message, "EPERM")).toBe(1)
      expect(error.message).not.toMatch(/Writing/)
      expect(records).toEqual([])
    } finally {
      execFileSync("chattr", ["-i", dir])
    }
    expect(fs.readFileSync(path.join(dir, "a.txt"), "utf8")).toBe("1\n")
  })

  it("a write refused by the system while staging: EPERM once, with the advice for it", async () => {
    const ws = makeWorkspace({ "d/a.txt": "1\n" })
    const dir = path.join(ws, "d")
    execFileSync("chattr", ["+i", dir])
    try {
      const { exit } = await withEngine(ws, (e) => e.applyPatch({ ...ids, patch: patchOf("*** Update File: d/a.txt", "@@", "-1", "+2") }))
      const error = failureOf(exit)
      expect([error.code, error.stage]).toEqual(["commit_failed", 7])
      expect(count(error.message, "EPERM")).toBe(1)
      expect(error.message).toMatch(/permission|immutable/)
    } finally {
      execFileSync("chattr", ["-i", dir])
    }
  })
})

describe("refused reads do not talk about writing", () => {
  it("engine.read of a link leading outside, a dangling link, a denied path and a non-normalized path", async () => {
    const ws = makeWorkspace({ "a.txt": "a\n" })
    const outside = makeWorkspace({ "secret.txt": "s\n" })
    fs.symlinkSync(path.join(outside, "secret.txt"), path.join(ws, "out.txt"))
    fs.symlinkSync(path.join(ws, "nowhere.txt"), path.join(ws, "dangling.txt"))
    fs.mkdirSync(path.join(ws, ".git"))
    for (const [p, code] of [["out.txt", "path_outside_roots"], ["dangling.txt", "path_outside_roots"], [".git/config", "path_denied_by_policy"], ["x/../../a.txt", "path_invalid"]] as const) {
      const { exit } = await withEngine(ws, (e) => e.read([p]))
      const error = failureOf(exit)
      expect([error.code, error.paths], p).toEqual([code, [p]])
      expect(error.message, p).not.toMatch(/\bwrit|\bedit/i)
    }
  })
})

describe("a version guard on something that is not a regular file", () => {
  it("says it is a symbolic link or a directory, not that it is absent", () => {
    const files = new Map<string, FileState>([
      ["link", { _tag: "Other", description: "a symbolic link" }],
      ["dir", { _tag: "Directory" }]
    ])
    const link = checkGuards(guardsOf({ link: sha256("x") }), files)
    expect(link?.code).toBe("version_guard_failed")
    expect(link?.message).toMatch(/'link' is a symbolic link/)
    expect(link?.message).not.toMatch(/absent/)
    expect(checkGuards(guardsOf({ dir: sha256("x") }), files)?.message).toMatch(/'dir' is a directory/)
  })
})

