/**
 * The checked read on its own, each swap an attacker can make between the check (`lstat`)
 * and the read made deterministic: a final link, another file, a named pipe, a folder on the
 * path replaced by a link out.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { isInside } from "@forkjoin/patch/RelativePath"
import { readCheckedFile } from "@forkjoin/patch/SafeRead"
import * as Result from "effect/Result"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const made: Array<string> = []
afterAll(() => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true })
})

const setup = () => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "fj-saferead-")))
  made.push(dir)
  const ws = path.join(dir, "ws")
  const outside = path.join(dir, "outside")
  fs.mkdirSync(path.join(ws, "d"), { recursive: true })
  fs.mkdirSync(outside)
  fs.writeFileSync(path.join(ws, "f.txt"), "inside\n")
  fs.writeFileSync(path.join(ws, "d", "f.txt"), "inside\n")
  fs.writeFileSync(path.join(outside, "f.txt"), "SECRET\n")
  return { ws, outside, allow: (landed: string) => isInside(ws, landed) }
}

const tagOf = (r: Result.Result<Uint8Array, { readonly _tag: string }>): string =>
  Result.isSuccess(r) ? `read ${Buffer.from(r.success).toString().trim()}` : r.failure._tag

describe("readCheckedFile", () => {
  it("reads the file the check saw", () => {
    const { allow, ws } = setup()
    const abs = path.join(ws, "f.txt")
    assert.strictEqual(tagOf(readCheckedFile(abs, fs.lstatSync(abs), allow)), "read inside")
  })

  it("refuses a final link swapped in after the check, without following it", () => {
    const { allow, outside, ws } = setup()
    const abs = path.join(ws, "f.txt")
    const checked = fs.lstatSync(abs)
    fs.rmSync(abs)
    fs.symlinkSync(path.join(outside, "f.txt"), abs)
    assert.strictEqual(tagOf(readCheckedFile(abs, checked, allow)), "Replaced")
  })

  it("refuses another regular file renamed over the checked one", () => {
    const { allow, ws } = setup()
    const abs = path.join(ws, "f.txt")
    const checked = fs.lstatSync(abs)
    fs.writeFileSync(path.join(ws, "other"), "other\n")
    fs.renameSync(path.join(ws, "other"), abs)
    assert.strictEqual(tagOf(readCheckedFile(abs, checked, allow)), "Replaced")
  })

  it("refuses a named pipe swapped in without blocking on it", () => {
    const { allow, ws } = setup()
    const abs = path.join(ws, "f.txt")
    const checked = fs.lstatSync(abs)
    fs.rmSync(abs)
    execFileSync("mkfifo", [abs])
    assert.strictEqual(tagOf(readCheckedFile(abs, checked, allow)), "Replaced")
  })

  it("refuses a file reached through a folder swapped for a link out, even when the check went through it too", () => {
    const { allow, outside, ws } = setup()
    const d = path.join(ws, "d")
    fs.rmSync(d, { recursive: true })
    fs.symlinkSync(outside, d)
    const abs = path.join(d, "f.txt")
    // The check itself followed the folder link: only where the descriptor lies can tell.
    assert.strictEqual(tagOf(readCheckedFile(abs, fs.lstatSync(abs), allow)), "Refused")
  })
})
