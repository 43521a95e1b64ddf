/**
 * The installed CLI injects no fault from the environment alone: `FORKJOIN_FAULT` set by hand
 * (or with a forged seal) leaves an apply to finish, while the same fault sealed with a key
 * this test wrote (the channel the merge probe and the crash tests use) kills it.
 */
import * as FaultChannel from "@forkjoin/engine/FaultChannel"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, buildCli, makeSandbox, patch, removeSandboxes, ROOT, writeTree } from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const UPDATE = patch("*** Update File: a.txt", "@@", "-one", "+two")

/** `forkjoin apply` of UPDATE on a fresh workspace, with exactly `env` added (no sealing by the helpers). */
const applyWith = (env: Record<string, string>) => {
  const { dir, ws } = makeSandbox()
  writeTree(ws, { "a.txt": "one\n" })
  const { FORKJOIN_FAULT: _f, FORKJOIN_FAULT_KEY_FILE: _k, FORKJOIN_FAULT_MAC: _m, ...inherited } = process.env
  const r = spawnSync(process.execPath, [BIN, "apply", "--workspace", ws, "--json"], {
    input: UPDATE,
    cwd: ROOT,
    encoding: "utf8",
    env: { ...inherited, NO_COLOR: "1", FORCE_COLOR: "0", ...env }
  })
  return { r, dir, text: fs.readFileSync(path.join(ws, "a.txt"), "utf8") }
}

describe("the fault channel of the installed CLI", () => {
  it("FORKJOIN_FAULT alone injects nothing: the apply finishes", () => {
    const { r, text } = applyWith({ FORKJOIN_FAULT: "stage:8" })
    expect(r.signal).toBeNull()
    expect(r.status, r.stderr).toBe(0)
    expect(text).toBe("two\n")
  })

  it("a seal made for another fault, or with a key file others can read, injects nothing", () => {
    const { dir } = makeSandbox()
    const key = FaultChannel.makeKey(dir)
    const other = applyWith({ ...FaultChannel.seal("stage:3", key), FORKJOIN_FAULT: "stage:8" })
    expect(other.r.status, other.r.stderr).toBe(0)
    expect(other.text).toBe("two\n")
    const sealed = FaultChannel.seal("stage:8", key)
    fs.chmodSync(key, 0o644)
    const readable = applyWith(sealed)
    expect(readable.r.status, readable.r.stderr).toBe(0)
    expect(readable.text).toBe("two\n")
  })

  it("the same fault sealed with a private key kills the apply after its stage", () => {
    const { dir } = makeSandbox()
    const { r, text } = applyWith(FaultChannel.seal("stage:8", FaultChannel.makeKey(dir)))
    expect(r.signal).toBe("SIGKILL")
    // Killed after the renames, before the record: the files already hold the change.
    expect(text).toBe("two\n")
  })
})
