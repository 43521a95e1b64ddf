/**
 * Issue 9 item 2 through the CLI: a workspace whose `history.db` was emptied, deleted or
 * swapped for another workspace's refuses `apply` with `history_missing` (exit 1, nothing
 * written) and says how to restore or reset; `forkjoin repair --reset-history` starts a new
 * history deliberately, after which `apply` records #1 and `status` shows the reset. The same
 * holds for an explicit `--db`. Also: the help of `repair` and `status` names the new flags.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildCli, makeSandbox, patch, removeSandboxes, runCli, workspaceTree, writeTree } from "./helpers.ts"

beforeAll(buildCli)
afterAll(removeSandboxes)

const add = (ws: string, name: string, extra: ReadonlyArray<string> = []) =>
  runCli(["apply", "-", "--workspace", ws, "--json", ...extra], { stdin: patch(`*** Add File: ${name}`, `+${name}`) })

/** A workspace with two applied records (in `db` when given). */
const withHistory = (extra: ReadonlyArray<string> = []) => {
  const { dir, ws } = makeSandbox()
  writeTree(ws, { "a.txt": "a\n" })
  for (const name of ["one.txt", "two.txt"]) expect(add(ws, name, extra).status).toBe(0)
  return { dir, ws, db: path.join(ws, ".forkjoin", "history.db") }
}

/** `apply` is refused with history_missing; the workspace is byte-for-byte unchanged. */
const expectRefused = (ws: string, extra: ReadonlyArray<string> = []) => {
  const before = workspaceTree(ws)
  const run = add(ws, "three.txt", extra)
  expect(run.status, run.stderr).toBe(1)
  const error = JSON.parse(run.stdout).error
  expect(error.code).toBe("history_missing")
  expect(error.message).toContain("forkjoin repair --workspace")
  expect(error.message).toContain("--reset-history")
  expect(workspaceTree(ws)).toEqual(before)
  // The human form says the same on stderr.
  const text = runCli(["apply", "-", "--workspace", ws, ...extra], { stdin: patch("*** Add File: three.txt", "+3") })
  expect(text.status).toBe(1)
  expect(text.stderr).toMatch(/error\[history_missing\]/)
  return error as { code: string; message: string }
}

describe("a missing, emptied or different history.db is refused", () => {
  it("truncated to 0 bytes: history_missing, nothing written; reset starts a new history at #1, shown by status", () => {
    const { ws, db } = withHistory()
    fs.truncateSync(db, 0)
    expect(expectRefused(ws).message).toMatch(/missing or empty/)

    const reset = runCli(["repair", "--workspace", ws, "--reset-history", "--json"])
    expect(reset.status, reset.stderr).toBe(0)
    const body = JSON.parse(reset.stdout)
    expect(body.ok).toBe(true)
    expect(body.reset).toMatchObject({ reason: "missing", previousLastOrdinal: 2 })

    const after = add(ws, "three.txt")
    expect(after.status, after.stderr).toBe(0)
    expect(JSON.parse(after.stdout).record.commitOrdinal).toBe(1)

    const status = JSON.parse(runCli(["status", "--workspace", ws, "--json"]).stdout)
    expect(status.historyResets).toHaveLength(1)
    expect(status.historyResets[0]).toMatchObject({ reason: "missing", previousLastOrdinal: 2, historyId: body.reset.historyId })
    expect(runCli(["status", "--workspace", ws]).stdout).toMatch(/history reset/)
  })

  it("deleted: history_missing, nothing written", () => {
    const { ws, db } = withHistory()
    fs.rmSync(db)
    expect(expectRefused(ws).message).toMatch(/missing or empty/)
  })

  it("another workspace's database swapped in: history_missing, nothing written", () => {
    const { ws, db } = withHistory()
    const other = withHistory()
    fs.copyFileSync(other.db, db)
    expect(expectRefused(ws).message).toMatch(/another history/)
  })

  it("an explicit --db elsewhere follows the same rule for its own identity", () => {
    const { dir } = makeSandbox()
    const db = path.join(dir, "elsewhere.db")
    const { ws } = withHistory(["--db", db])
    fs.truncateSync(db, 0)
    const error = expectRefused(ws, ["--db", db])
    expect(error.message).toContain(`--db '${db}'`)
    expect(runCli(["repair", "--workspace", ws, "--db", db, "--reset-history"]).status).toBe(0)
    expect(JSON.parse(add(ws, "three.txt", ["--db", db]).stdout).record.commitOrdinal).toBe(1)
  })

  it("--reset-history on a healthy history resets nothing", () => {
    const { ws } = withHistory()
    const run = runCli(["repair", "--workspace", ws, "--reset-history"])
    expect(run.status).toBe(0)
    expect(run.stdout).toMatch(/nothing to reset/i)
    expect(JSON.parse(add(ws, "three.txt").stdout).record.commitOrdinal).toBe(3)
  })

  it("the help of repair and status names --ack, --reset-history and what status lists", () => {
    const repair = runCli(["repair", "--help"])
    expect(repair.stdout).toContain("--ack")
    expect(repair.stdout).toContain("--reset-history")
    expect(runCli(["status", "--help"]).stdout).toMatch(/uncertain/)
  })
})
