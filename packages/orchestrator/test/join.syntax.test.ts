/**
 * The join's syntax-aware merges, in process through `Run.runPlan` with `Run.layer` (as the CLI
 * builds it): two children adding imports at one place in a TypeScript file merge by syntax
 * tree and say so in the outcome and the record; a grammar that cannot be loaded gives the line
 * merge and one warning; the time budget of a file is read from the effect `Clock`, never the
 * wall clock.
 */
import { Engine } from "@forkjoin/engine/Engine"
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { Grammars } from "@forkjoin/merge/Grammars"
import * as OrchestratorRun from "@forkjoin/orchestrator/Run"
import * as RunPlan from "@forkjoin/runtime/RunPlan"
import { ThreadId, TransactionId } from "@forkjoin/schema/Ids"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"

const roots: Array<string> = []
afterEach(() => {
  for (const r of roots.splice(0)) fs.rmSync(r, { recursive: true, force: true })
})

const workspace = (files: Readonly<Record<string, string>>): string => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "fj-syntax-")))
  roots.push(root)
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true })
    fs.writeFileSync(path.join(root, rel), text)
  }
  return root
}

const patch = (...body: ReadonlyArray<string>) => ({ apply_patch: { patch: ["*** Begin Patch", ...body, "*** End Patch"].join("\n") } })

// Each child adds one import right after the first: the line merge conflicts, the tree merge does not.
const addImport = (id: string, file: string, name: string) => ({
  id,
  mode: "transactional_write",
  writeScope: ["src"],
  actions: [patch(`*** Update File: ${file}`, "@@", " import { a } from \"./a\"", `+import { ${name} } from "./${name}"`), { finish: {} }]
})

const APP = "import { a } from \"./a\"\n\nexport const x = a\n"

// One child adding the same import to two files.
const both = (id: string, name: string) => ({
  ...addImport(id, "src/app.ts", name),
  actions: [addImport(id, "src/app.ts", name).actions[0], addImport(id, "src/other.ts", name).actions[0], { finish: {} }]
})

const join = (root: string, tasks: ReadonlyArray<unknown>, atomic = false) =>
  Effect.gen(function*() {
    const plan = RunPlan.decode({ schemaVersion: 1, tasks, ...(atomic ? { atomic } : {}) })
    if (Result.isFailure(plan)) throw new Error(plan.failure.message)
    const outcome = yield* OrchestratorRun.runPlan(plan.success, {
      planDirectory: root,
      callerThreadId: ThreadId.make("syntax-test"),
      admission: { _tag: "Exempt", reason: "test workspace" }
    })
    const second = outcome.run.outcomes.find((o) => o.childId === "second")!
    const engine = yield* Engine
    const history = yield* HistoryStore
    const transaction = atomic ? `subagent_merge:${outcome.runId}` : `subagent_merge:${outcome.runId}/second`
    const records = yield* history.recordsByTransaction(engine.environmentId, TransactionId.make(transaction))
    return { outcome, second, changes: records.flatMap((r) => r.changes) }
  })

const layer = (root: string) => OrchestratorRun.layer(root, path.join(root, ".forkjoin", "history.db"))

describe("the join merges by syntax tree", () => {
  it("two imports added at one place: merged by syntax, said in the outcome and on the record's change", async () => {
    const root = workspace({ "src/app.ts": APP })
    const { second, changes } = await Effect.runPromise(
      join(root, [addImport("first", "src/app.ts", "b"), addImport("second", "src/app.ts", "c")]).pipe(Effect.provide(layer(root)))
    )
    expect(second).toMatchObject({
      status: "auto_merged",
      autoMergedPaths: ["src/app.ts"],
      mergedPaths: [{ path: "src/app.ts", method: "structured", language: "typescript" }]
    })
    expect(second.warnings).toBeUndefined()
    expect(changes.map((c) => [c.path, c.merge])).toEqual([["src/app.ts", { method: "structured", language: "typescript" }]])
    const text = fs.readFileSync(path.join(root, "src/app.ts"), "utf8")
    expect(text).toContain("import { b } from \"./b\"\n")
    expect(text).toContain("import { c } from \"./c\"\n")
  })

  it("an atomic join records the merge on its one transaction's change", async () => {
    const root = workspace({ "src/app.ts": APP })
    const { second, changes } = await Effect.runPromise(
      join(root, [addImport("first", "src/app.ts", "b"), addImport("second", "src/app.ts", "c")], true).pipe(Effect.provide(layer(root)))
    )
    expect(second.mergedPaths).toEqual([{ path: "src/app.ts", method: "structured", language: "typescript" }])
    expect(changes.map((c) => [c.path, c.merge])).toEqual([["src/app.ts", { method: "structured", language: "typescript" }]])
  })

  it("a grammar that cannot be loaded: the line merge, and one warning naming it however many files need it", async () => {
    const root = workspace({ "src/app.ts": APP, "src/other.ts": APP })
    const missing = Grammars.layerFrom((language) => path.join(root, `no-${language}.wasm`))
    const { second } = await Effect.runPromise(
      join(root, [both("first", "b"), both("second", "c")]).pipe(Effect.provide(missing), Effect.provide(layer(root)))
    )
    // The line merge of the import conflicts holds them, as before syntax-aware merges.
    expect(second).toMatchObject({ status: "conflicted_unresolved", conflictPaths: ["src/app.ts", "src/other.ts"] })
    expect(second.warnings).toEqual([{ code: "grammar_unavailable", message: expect.stringMatching(/^the typescript grammar could not be loaded: .*merged by lines/) }])
  })

  it("a join without two-sided edits of a file with a grammar loads none", async () => {
    const root = workspace({ "src/app.ts": APP, "src/lib.ts": APP, "src/notes.txt": "a\nb\nc\nd\ne\n" })
    const loaded = await Effect.runPromise(
      Effect.gen(function*() {
        yield* join(root, [
          // Both add the same import (the second converges) and edit a text file far apart.
          { ...addImport("first", "src/app.ts", "b"), actions: [patch("*** Update File: src/notes.txt", "@@", "-a", "+A"), addImport("", "src/app.ts", "b").actions[0], { finish: {} }] },
          { ...addImport("second", "src/app.ts", "b"), actions: [patch("*** Update File: src/notes.txt", "@@", "-e", "+E"), addImport("", "src/app.ts", "b").actions[0], { finish: {} }] },
          addImport("third", "src/lib.ts", "c")
        ])
        return yield* (yield* Grammars).loaded
      }).pipe(Effect.provide(layer(root)))
    )
    expect(loaded).toEqual([])
    expect(fs.readFileSync(path.join(root, "src/notes.txt"), "utf8")).toBe("A\nb\nc\nd\nE\n")
  })

  it("the time budget of a file is read from the Clock: a spent budget gives the line merge", async () => {
    const root = workspace({ "src/app.ts": APP })
    // Every read of the time moves it on by 3 s: the 2 s budget is spent at the first read after
    // the file's merge starts, however few times the merge asks.
    const real = await Effect.runPromise(Clock.clockWith(Effect.succeed))
    let now = real.currentTimeMillisUnsafe()
    const hurried: Clock.Clock = {
      currentTimeMillisUnsafe: () => (now += 3_000),
      currentTimeMillis: Effect.sync(() => (now += 3_000)),
      currentTimeNanosUnsafe: () => real.currentTimeNanosUnsafe(),
      currentTimeNanos: real.currentTimeNanos,
      monotonicTimeNanosUnsafe: () => real.monotonicTimeNanosUnsafe(),
      monotonicTimeNanos: real.monotonicTimeNanos,
      sleep: (d) => real.sleep(d)
    }
    const { second } = await Effect.runPromise(
      join(root, [addImport("first", "src/app.ts", "b"), addImport("second", "src/app.ts", "c")]).pipe(
        Effect.provide(layer(root)),
        Effect.provideService(Clock.Clock, hurried)
      )
    )
    expect(second).toMatchObject({ status: "conflicted_unresolved", conflictPaths: ["src/app.ts"] })
    expect(second.warnings).toBeUndefined()
  })
})
