/**
 * Sessions (SPEC §5): the action protocol and its observations, direct sessions through the
 * engine with model-managed batches as one transaction, changeset children staged in the
 * overlay, analysis-only refusals, and timeouts under `TestClock` that export nothing.
 */
import type { TaskId, ThreadId } from "@forkjoin/schema"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { TestClock } from "effect/testing"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { Driver, layerScripted, scripted } from "../src/Driver.ts"
import * as Session from "../src/Session.ts"
import * as WriteScope from "../src/WriteScope.ts"
import { fingerprint, makeWorkspace, patchOf, removeSandboxes, run, valueOf } from "./helpers.ts"

afterAll(removeSandboxes)

const threadId = "t-1" as ThreadId
const taskId = "edit-a" as TaskId

const session = (ws: string, options: Session.SessionOptions, script: ReadonlyArray<unknown>) =>
  run(ws, Session.run(options).pipe(Effect.provide(layerScripted(script)))).then(valueOf)

const codes = (r: Session.SessionResult) => r.steps.map((s) => s.observation.ok ? "ok" : s.observation.code)

const edit = (file: string, from: string, to: string) => ({ apply_patch: { patch: patchOf(`*** Update File: ${file}`, "@@", `-${from}`, `+${to}`) } })

describe("Session protocol", () => {
  it("refuses unknown, malformed and reserved actions without ending the session", async () => {
    const ws = makeWorkspace({ "a.txt": "a\n" })
    const r = await session(ws, { mode: "analysis_only", threadId }, [
      { fnord: {} },
      { read_file: { path: "a.txt", extra: 1 } },
      { read_file: {}, list_dir: {} },
      "read_file",
      { run_subagents: { tasks: [] } },
      { rollback_transaction: {} },
      { resolve_conflict: {} },
      { read_file: { path: "a.txt" } },
      { finish: {} }
    ])
    expect(codes(r)).toEqual([
      "unknown_action", "invalid_action", "invalid_action", "invalid_action", "not_available", "not_available", "not_available", "ok", "ok"
    ])
    expect(r.steps[0]!.observation.message).toContain("fnord")
    expect(r.steps[4]!.observation.message).toContain("only a parent forks children")
    expect(r.steps[7]!.observation.data).toEqual({ path: "a.txt", bytes: 2, text: "a\n" })
    expect(r.status).toBe("finished")
  })

  it("ends driver_stopped when the script runs out, and step_limit when it loops", async () => {
    const ws = makeWorkspace({ "a.txt": "a\n" })
    expect((await session(ws, { mode: "analysis_only", threadId }, [{ list_dir: { path: "." } }])).status).toBe("driver_stopped")
    const looping = await run(ws, Session.run({ mode: "analysis_only", threadId, maxSteps: 5 }).pipe(
      Effect.provideService(Driver, scripted(() => ({ list_dir: { path: "" } })))
    )).then(valueOf)
    expect(looping.status).toBe("step_limit")
    expect(looping.steps).toHaveLength(5)
  })
})

describe("direct sessions", () => {
  it("applies each apply_patch as its own transaction", async () => {
    const ws = makeWorkspace({ "a.txt": "a\n", "b.txt": "b\n" })
    const r = await session(ws, { mode: "direct", threadId }, [edit("a.txt", "a", "A"), edit("b.txt", "b", "B"), { finish: {} }])
    expect(codes(r)).toEqual(["ok", "ok", "ok"])
    expect(r.transactions).toHaveLength(2)
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("A\n")
  })

  it("commits a batch of patches as ONE transaction; reads inside see staged content; finish is refused while open", async () => {
    const ws = makeWorkspace({ "a.txt": "a\n", "b.txt": "b\n" })
    const before = fingerprint(ws)
    let midBatch: Map<string, string> | undefined
    const script: ReadonlyArray<unknown> = [
      { begin_batch: {} },
      edit("a.txt", "a", "A1"),
      edit("a.txt", "A1", "A2"),
      { apply_patch: { patch: patchOf("*** Add File: n/new.txt", "+new") } },
      { apply_patch: { patch: patchOf("*** Delete File: b.txt") } },
      { read_file: { path: "a.txt" } },
      { list_dir: { path: "." } },
      { finish: {} },
      { commit_batch: {} },
      { finish: {} }
    ]
    const r = await run(ws, Session.run({ mode: "direct", threadId }).pipe(
      Effect.provideService(Driver, scripted((steps) => {
        // Staging must not touch the workspace: check just before the commit.
        if (steps.length === 8) midBatch = fingerprint(ws)
        return script[steps.length]
      }))
    )).then(valueOf)
    expect(codes(r)).toEqual(["ok", "ok", "ok", "ok", "ok", "ok", "ok", "open_batch", "ok", "ok"])
    expect(midBatch).toEqual(before)
    expect(r.steps[5]!.observation.data).toMatchObject({ text: "A2\n" })
    expect((r.steps[6]!.observation.data as any).entries.map((e: any) => e.name)).toEqual(["a.txt", "n"])
    expect(r.transactions).toHaveLength(1)
    expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("A2\n")
    expect(fs.readFileSync(path.join(ws, "n/new.txt"), "utf8")).toBe("new\n")
    expect(fs.existsSync(path.join(ws, "b.txt"))).toBe(false)
  })

  it("abort_batch drops the staged patches; a refused patch inside a batch keeps the batch", async () => {
    const ws = makeWorkspace({ "a.txt": "a\n" })
    const before = fingerprint(ws)
    const r = await session(ws, { mode: "direct", threadId }, [
      { begin_batch: {} },
      edit("a.txt", "a", "A"),
      edit("a.txt", "zzz", "y"),
      { begin_batch: {} },
      { abort_batch: {} },
      { commit_batch: {} },
      { finish: {} }
    ])
    expect(codes(r)).toEqual(["ok", "ok", "context_not_found", "batch_already_open", "ok", "no_open_batch", "ok"])
    expect(r.transactions).toEqual([])
    expect(fingerprint(ws)).toEqual(before)
  })
})

describe("changeset and analysis sessions", () => {
  it("stages in the overlay, refuses batch control without poisoning staging, and exports on finish", async () => {
    const ws = makeWorkspace({ "src/a/x.ts": "x\n", "other.txt": "o\n" })
    const before = fingerprint(ws)
    const r = await session(ws, { mode: "changeset_export", threadId, taskId, writeScope: WriteScope.makeUnsafe(["src/a"]) }, [
      { begin_batch: {} },
      edit("src/a/x.ts", "x", "X"),
      { commit_batch: {} },
      edit("other.txt", "o", "O"),
      { apply_patch: { patch: patchOf("*** Update File: src/a/x.ts", "*** Move to: elsewhere.ts", "@@", "-X", "+Y") } },
      { apply_patch: { patch: patchOf("*** Delete File: other.txt") } },
      { abort_batch: {} },
      { read_file: { path: "src/a/x.ts" } },
      { finish: {} }
    ])
    expect(codes(r)).toEqual([
      "changeset_batch_control_rejected", "ok", "changeset_batch_control_rejected", "write_scope_violation",
      "write_scope_violation", "write_scope_violation", "changeset_batch_control_rejected", "ok", "ok"
    ])
    expect(r.steps[4]!.observation.data).toMatchObject({ violatingPaths: ["elsewhere.ts"] })
    expect(r.steps[7]!.observation.data).toMatchObject({ text: "X\n" })
    expect(r.status).toBe("finished")
    expect(r.changeset!.entries.map((e) => [e.kind, e.path])).toEqual([["update", "src/a/x.ts"]])
    expect(fingerprint(ws)).toEqual(before)
  })

  it("analysis_only refuses every mutation", async () => {
    const ws = makeWorkspace({ "a.txt": "a\n" })
    const before = fingerprint(ws)
    const r = await session(ws, { mode: "analysis_only", threadId }, [edit("a.txt", "a", "A"), { begin_batch: {} }, { commit_batch: {} }, { abort_batch: {} }, { finish: {} }])
    expect(codes(r)).toEqual(["analysis_only", "analysis_only", "analysis_only", "analysis_only", "ok"])
    expect(r.changeset).toBeUndefined()
    expect(fingerprint(ws)).toEqual(before)
  })

  it("exports nothing when the driver stops before finish", async () => {
    const ws = makeWorkspace({ "src/a/x.ts": "x\n" })
    const r = await session(ws, { mode: "changeset_export", threadId, taskId, writeScope: WriteScope.makeUnsafe(["src/a"]) }, [edit("src/a/x.ts", "x", "X")])
    expect(r.status).toBe("driver_stopped")
    expect(r.changeset).toBeUndefined()
  })

  it("times out on the Clock (TestClock) and exports nothing", async () => {
    const ws = makeWorkspace({ "src/a/x.ts": "x\n" })
    const script = [edit("src/a/x.ts", "x", "X"), { finish: {} }]
    const r = await run(ws, Effect.gen(function*() {
      // The first action's step is done (real I/O) before virtual time moves.
      const firstDone = yield* Deferred.make<void>()
      const slow = Driver.of({
        // The second action only comes after 10 virtual seconds, past the 5 s timeout.
        next: (steps) =>
          steps.length === 1
            ? Effect.andThen(Deferred.succeed(firstDone, undefined), Effect.as(Effect.sleep("10 seconds"), script[1]))
            : Effect.succeed(script[steps.length])
      })
      const fiber = yield* Effect.forkChild(Session.run({
        mode: "changeset_export", threadId, taskId, writeScope: WriteScope.makeUnsafe(["src/a"]), timeoutMs: 5000
      }).pipe(Effect.provideService(Driver, slow)))
      yield* Deferred.await(firstDone)
      yield* TestClock.adjust("6 seconds")
      return yield* Fiber.join(fiber)
    }).pipe(Effect.provide(TestClock.layer()))).then(valueOf)
    expect(r.status).toBe("timed_out")
    expect(r.changeset).toBeUndefined()
    expect(codes(r)).toEqual(["ok"])
  })
})
