/**
 * The CLI's one error mapping (`internal/errors.ts`) and the engine layer of
 * `internal/workspace.ts`, in process: what a busy or corrupt history database becomes
 * (`history_unavailable`, stage kept, the store error kept as cause), what each failure prints
 * and its exit code.
 */
import { assert, describe, it } from "@effect/vitest"
import { StoreError } from "@forkjoin/history/HistoryStore"
import { IngestError } from "@forkjoin/history/ProviderAggregates"
import { ViewError } from "@forkjoin/history/ViewError"
import { EngineError } from "@forkjoin/schema/EngineError"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import * as Apply from "../src/Apply.ts"
import {
  failureOutput,
  fromHistoryOpen,
  HistoryCommandError,
  RunFailed,
  toHistoryCommandError,
  UsageError
} from "../src/internal/errors.ts"
import * as Repair from "../src/Repair.ts"

const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-cli-errors-")))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

const busy = new StoreError({ operation: "Sqlite.setup", reason: "Busy", detail: "SQLITE_BUSY: database is locked" })
const corrupt = new StoreError({ operation: "Sqlite.setup", reason: "Corrupt", detail: "SQLITE_NOTADB: file is not a database" })
const io = new StoreError({ operation: "Sqlite.open", reason: "Io", detail: "cannot open x: EACCES" })

/** A workspace whose history database is a file of garbage bytes. */
const corruptWorkspace = (name: string): string => {
  const ws = path.join(dir, name)
  fs.mkdirSync(path.join(ws, ".forkjoin"), { recursive: true })
  fs.writeFileSync(path.join(ws, "a.txt"), "one\n")
  fs.writeFileSync(path.join(ws, ".forkjoin", "history.db"), Buffer.alloc(4096, 0x5a))
  return ws
}

describe("fromHistoryOpen", () => {
  it("a busy database is history_unavailable at stage 9, says to wait, keeps the StoreError", () => {
    const e = fromHistoryOpen(busy, "/ws/.forkjoin/history.db")
    assert.strictEqual(e.code, "history_unavailable")
    assert.strictEqual(e.stage, 9)
    assert.deepStrictEqual(e.paths, [])
    assert.strictEqual(e.cause, busy)
    assert.include(e.message, "/ws/.forkjoin/history.db")
    assert.include(e.message, "locked by another process")
    assert.include(e.message, "retry")
  })

  it("a corrupt database is history_unavailable; another store failure stays commit_failed; both keep the cause", () => {
    const c = fromHistoryOpen(corrupt, "h.db")
    assert.strictEqual(c.code, "history_unavailable")
    assert.strictEqual(c.stage, 9)
    assert.include(c.message, "--db")
    assert.strictEqual(c.cause, corrupt)
    const other = fromHistoryOpen(io, "h.db")
    assert.strictEqual(other.code, "commit_failed")
    assert.strictEqual(other.stage, 9)
    assert.strictEqual(other.cause, io)
  })
})

describe("toHistoryCommandError", () => {
  it("maps busy and corrupt databases to history_unavailable, other store failures to store_failed", () => {
    const b = toHistoryCommandError("read")(busy)
    assert.strictEqual(b.code, "history_unavailable")
    assert.strictEqual(b.cause, busy)
    assert.isTrue(b.message.startsWith("the history database could not be read: "))
    assert.strictEqual(toHistoryCommandError("used")(corrupt).code, "history_unavailable")
    const other = toHistoryCommandError("used")(io)
    assert.strictEqual(other.code, "store_failed")
    assert.strictEqual(other.message, `the history database could not be used: ${io.message}`)
    assert.strictEqual(other.cause, io)
  })

  it("maps view and ingestion refusals by reason, keeping the detail as message and the error as cause", () => {
    const view = new ViewError({ operation: "Views.file", reason: "PathRefused", detail: "../x leaves the workspace" })
    const v = toHistoryCommandError("read")(view)
    assert.deepStrictEqual([v.code, v.message], ["path_refused", "../x leaves the workspace"])
    assert.strictEqual(v.cause, view)
    const ingest = new IngestError({ operation: "ingest", reason: "Conflict", detail: "id taken" })
    const i = toHistoryCommandError("used")(ingest)
    assert.deepStrictEqual([i.code, i.message], ["event_id_conflict", "id taken"])
    const same = new HistoryCommandError({ code: "no_history", message: "none" })
    assert.strictEqual(toHistoryCommandError("read")(same), same)
  })
})

describe("failureOutput", () => {
  const rejected = new EngineError({ code: "context_not_found", stage: 5, paths: ["a.txt"], message: "Failed", cause: io })

  it("an engine rejection: exit 1, the --json body (stage and stageName, no cause) on stdout, or error[code] (stage name) on stderr", () => {
    assert.deepStrictEqual(failureOutput(rejected, { command: "apply", json: true }), {
      exitCode: 1,
      stdout: "{\"ok\":false,\"error\":{\"code\":\"context_not_found\",\"stage\":5,\"stageName\":\"plan\",\"paths\":[\"a.txt\"],\"message\":\"Failed\"}}\n",
      stderr: ""
    })
    assert.deepStrictEqual(failureOutput(rejected, { command: "apply", json: false }), {
      exitCode: 1,
      stdout: "",
      stderr: "error[context_not_found] (stage plan): Failed\n  path: a.txt\n"
    })
  })

  it("a usage error: exit 2 and a help hint on stderr; with --json the usage_invalid line", () => {
    assert.deepStrictEqual(failureOutput(new UsageError({ message: "no patch" }), { command: "history ingest", json: false }), {
      exitCode: 2,
      stdout: "",
      stderr: "error: no patch\nRun 'forkjoin history ingest --help' for usage.\n"
    })
    assert.deepStrictEqual(failureOutput(new UsageError({ message: "no patch" }), { command: "history ingest", json: true }), {
      exitCode: 2,
      stdout: "{\"ok\":false,\"error\":{\"code\":\"usage_invalid\",\"stage\":1,\"stageName\":\"normalize\",\"paths\":[],\"message\":\"no patch. Run 'forkjoin history ingest --help' for usage.\",\"command\":\"forkjoin history ingest\"}}\n",
      stderr: ""
    })
  })

  it("a history refusal and a failed run: exit 1 with their own shapes", () => {
    const refused = new HistoryCommandError({ code: "history_unavailable", message: "damaged" })
    assert.deepStrictEqual(failureOutput(refused, { command: "history timeline", json: true }), {
      exitCode: 1,
      stdout: "{\"ok\":false,\"error\":{\"code\":\"history_unavailable\",\"message\":\"damaged\"}}\n",
      stderr: ""
    })
    assert.strictEqual(failureOutput(refused, { command: "history timeline", json: false }).stderr, "error[history_unavailable]: damaged\n")
    assert.deepStrictEqual(failureOutput(new RunFailed({ message: "disk full" }), { command: "run", json: true }), {
      exitCode: 1,
      stdout: "",
      stderr: "error: disk full\n"
    })
  })
})

describe("opening a corrupt history database", () => {
  it.effect("apply fails with history_unavailable at stage 9, the Corrupt StoreError as cause, the file untouched", () =>
    Effect.gen(function*() {
      const ws = corruptWorkspace("apply")
      const error = yield* Effect.flip(Apply.apply({
        patchText: "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch\n",
        workspace: ws,
        profile: "native",
        preserveLineEndings: false
      }))
      assert.instanceOf(error, EngineError)
      if (!(error instanceof EngineError)) return
      assert.strictEqual(error.code, "history_unavailable")
      assert.strictEqual(error.stage, 9)
      const cause = error.cause
      assert.isTrue(cause instanceof StoreError && cause.reason === "Corrupt")
      assert.strictEqual(fs.readFileSync(path.join(ws, "a.txt"), "utf8"), "one\n")
    }))

  it.effect("repair fails the same way", () =>
    Effect.gen(function*() {
      const ws = corruptWorkspace("repair")
      const error = yield* Effect.flip(Repair.repair({ workspace: ws }))
      assert.instanceOf(error, EngineError)
      if (!(error instanceof EngineError)) return
      assert.strictEqual(error.code, "history_unavailable")
      assert.strictEqual(error.stage, 9)
      assert.instanceOf(error.cause, StoreError)
    }))
})
