/**
 * What the patch core says when it refuses (issue 9 items 8 and 9): a second delete of one
 * path names the earlier delete (or move) in the same patch, a refused overwrite names the
 * CLI flag that grants it, and system errors are described once with advice that fits their code.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { describeSystemError, remedyOf } from "../src/SystemError.ts"
import { err, patchOf, plan } from "./helpers.ts"

describe("planner messages", () => {
  it("a path deleted twice in one patch: the second delete says it was already deleted earlier in this patch", () => {
    const e = err(plan({ "a.txt": "a\n" }, patchOf("*** Delete File: a.txt", "*** Delete File: a.txt")))
    expect([e.code, e.paths]).toEqual(["target_missing", ["a.txt"]])
    expect(e.message).toMatch(/already deleted earlier in this patch/)
    expect(e.message).not.toMatch(/does not exist/)
  })

  it("deleting a path the patch moved away says it was moved earlier in this patch, and where to", () => {
    const e = err(plan({ "a.txt": "a\n" }, patchOf("*** Update File: a.txt", "*** Move to: b.txt", "@@", "-a", "+b", "*** Delete File: a.txt")))
    expect(e.code).toBe("target_missing")
    expect(e.message).toMatch(/moved to b\.txt earlier in this patch/)
  })

  it("deleting a path that never existed still says it does not exist", () => {
    const e = err(plan({}, patchOf("*** Delete File: nope.txt")))
    expect(e.message).toMatch(/nope\.txt: it does not exist/)
  })

  it("target_exists and unsafe_move name forkjoin apply --allow-overwrite", () => {
    const add = err(plan({ "a.txt": "a\n" }, patchOf("*** Add File: a.txt", "+x")))
    expect(add.code).toBe("target_exists")
    expect(add.message).toMatch(/--allow-overwrite/)
    const move = err(plan({ "a.txt": "a\n", "b.txt": "b\n" }, patchOf("*** Update File: a.txt", "*** Move to: b.txt", "@@", "-a", "+c")))
    expect(move.code).toBe("unsafe_move")
    expect(move.message).toMatch(/--allow-overwrite/)
  })
})

describe("system error descriptions", () => {
  const thrown = (run: () => unknown): unknown => {
    try {
      run()
    } catch (error) {
      return error
    }
    throw new Error("expected a throw")
  }

  it("a Node system error is described with its code once, then its detail", () => {
    const missing = path.join(os.tmpdir(), `fj-missing-${process.pid}`, "x")
    const text = describeSystemError(thrown(() => fs.readFileSync(missing)))
    expect(text).toMatch(/^ENOENT: no such file or directory/)
    expect(text.match(/ENOENT/g)).toHaveLength(1)
    expect(describeSystemError(Object.assign(new Error("boom"), { code: "EIO" }))).toBe("EIO: boom")
    expect(describeSystemError({ code: "EPERM" })).toBe("EPERM")
    expect(describeSystemError(new Error("plain"))).toBe("plain")
    expect(describeSystemError("text")).toBe("text")
  })

  it("the advice fits the code: a long name is not a permission problem", () => {
    const long = thrown(() => fs.lstatSync(path.join(os.tmpdir(), "n".repeat(300))))
    expect(remedyOf(long)).toMatch(/too long.*shorter/)
    expect(remedyOf(long)).not.toMatch(/permission/)
    expect(remedyOf({ code: "EACCES" })).toMatch(/permission/)
    expect(remedyOf({ code: "EPERM" })).toMatch(/permission|immutable/)
    expect(remedyOf({ code: "ENOSPC" })).toMatch(/space/)
    expect(remedyOf({ code: "EROFS" })).toMatch(/read-only/)
    expect(remedyOf({ code: "ELOOP" })).toMatch(/symbolic links/)
    expect(remedyOf({ code: "EWHATEVER" })).toBeUndefined()
    expect(remedyOf(new Error("no code"))).toBeUndefined()
  })
})
