/**
 * `forkjoin demo`: the main job on an embedded sample workspace in a temporary folder (never
 * the user's files). A parent forks five scripted children: two with disjoint edits, two
 * editing one file in different places (merged by hunk), and one whose edit overlaps an
 * earlier sibling's (held back as a conflict). The demo then resolves the conflict with merged
 * text, rolls one child back and prints the timeline. Everything printed is computed by the
 * real engine on real files, ids shortened as every text output shows them; `--keep` leaves the
 * folder to inspect.
 *
 * @since 0.1.0
 */
import { HistoryRecords } from "@forkjoin/history/HistoryStore"
import * as OrchestratorConflicts from "@forkjoin/orchestrator/Conflicts"
import * as OrchestratorRollback from "@forkjoin/orchestrator/Rollback"
import * as OrchestratorRun from "@forkjoin/orchestrator/Run"
import * as RunPlan from "@forkjoin/runtime/RunPlan"
import { Engine } from "@forkjoin/engine/Engine"
import { ThreadId, TransactionId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { conflictExcerpt } from "./internal/conflictText.ts"
import { RunFailed } from "./internal/errors.ts"
import { writeStdout } from "./internal/output.ts"
import { orchestratorLayer } from "./internal/orchestratorLayer.ts"
import * as ShortIds from "./internal/shortIds.ts"
import { historyDbOf } from "./internal/workspace.ts"
import * as Run from "./Run.ts"

const MATH = [
  "// Small math helpers used by the sample app.",
  "export const add = (a: number, b: number): number => a + b",
  "",
  "export const sub = (a: number, b: number): number => a - b",
  "",
  "export const mul = (a: number, b: number): number => a * b",
  "",
  "export const div = (a: number, b: number): number => a / b",
  "",
  "export const square = (a: number): number => a * a",
  "",
  "export const cube = (a: number): number => a * a * a",
  "",
  "export const mean = (xs: number[]): number => xs.reduce(add, 0) / xs.length",
  ""
].join("\n")

/** The sample workspace, path → content. */
const SAMPLE: Readonly<Record<string, string>> = {
  "README.md": "# sample\n\nA tiny app to show forkjoin.\n",
  "src/math.ts": MATH,
  "src/main.ts": "import { mean } from \"./math\"\n\nconsole.log(mean([1, 2, 3]))\n"
}

const patch = (...lines: ReadonlyArray<string>) => ["*** Begin Patch", ...lines, "*** End Patch"].join("\n")
const task = (id: string, scope: ReadonlyArray<string>, body: ReadonlyArray<string>) => ({
  id,
  mode: "transactional_write",
  writeScope: scope,
  actions: [{ apply_patch: { patch: patch(...body) } }, { finish: {} }]
})

/** The parent's plan: five children, in the order the join applies them. */
const PLAN = {
  schemaVersion: 1,
  tasks: [
    task("docs", ["README.md", "docs"], [
      "*** Update File: README.md",
      "@@",
      " A tiny app to show forkjoin.",
      "+",
      "+Run it with `node src/main.ts`.",
      "*** Add File: docs/changelog.md",
      "+# Changelog",
      "+",
      "+- math helpers"
    ]),
    task("tests", ["test"], [
      "*** Add File: test/math.test.ts",
      "+import { add } from \"../src/math\"",
      "+",
      "+if (add(2, 2) !== 4) throw new Error(\"add is broken\")"
    ]),
    task("safe-div", ["src/math.ts"], [
      "*** Update File: src/math.ts",
      "@@",
      "-export const div = (a: number, b: number): number => a / b",
      "+export const div = (a: number, b: number): number => {",
      "+  if (b === 0) throw new RangeError(\"division by zero\")",
      "+  return a / b",
      "+}"
    ]),
    task("mean-empty", ["src/math.ts"], [
      "*** Update File: src/math.ts",
      "@@",
      "-export const mean = (xs: number[]): number => xs.reduce(add, 0) / xs.length",
      "+export const mean = (xs: number[]): number => (xs.length === 0 ? 0 : xs.reduce(add, 0) / xs.length)"
    ]),
    task("div-int", ["src/math.ts"], [
      "*** Update File: src/math.ts",
      "@@",
      "-export const div = (a: number, b: number): number => a / b",
      "+export const div = (a: number, b: number): number => Math.trunc(a / b)"
    ])
  ]
}

/** The parent's merged text for the held-back conflict: both intents kept. */
const MERGED_DIV = [
  "export const div = (a: number, b: number): number => {",
  "  if (b === 0) throw new RangeError(\"division by zero\")",
  "  return Math.trunc(a / b)",
  "}"
].join("\n")

/**
 * Options of one demo run.
 *
 * @category models
 * @since 0.1.0
 */
export interface DemoOptions {
  readonly json: boolean
  readonly keep: boolean
}

const planOf = (): RunPlan.RunPlan => {
  const decoded = RunPlan.decode(PLAN)
  if (Result.isFailure(decoded)) throw new Error(`the embedded demo plan is invalid: ${decoded.failure.message}`)
  return decoded.success
}

/**
 * Runs the demo and prints it (text as it goes, or one JSON line at the end).
 *
 * @category constructors
 * @since 0.1.0
 */
export const demo = Effect.fn("Demo.demo")(function*(options: DemoOptions) {
  const started = Date.now()
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-demo-")))
  for (const [p, content] of Object.entries(SAMPLE)) {
    fs.mkdirSync(path.dirname(path.join(dir, p)), { recursive: true })
    fs.writeFileSync(path.join(dir, p), content)
  }
  const say = (text: string) => (options.json ? Effect.void : writeStdout(text + "\n"))
  const caller = ThreadId.make("demo")
  const program = Effect.gen(function*() {
    yield* say(`forkjoin demo: a parent forks 5 children on a sample workspace in ${dir}`)
    yield* say("(a temporary folder: your files are never touched)\n")
    yield* say("children: docs, tests (disjoint edits), safe-div and mean-empty (one file, different places), div-int (overlaps safe-div)")
    const outcome = yield* OrchestratorRun.runPlan(planOf(), {
      planDirectory: dir,
      callerThreadId: caller,
      // Its own temporary workspace: no user file can be touched, whatever the autonomy level.
      admission: { _tag: "Exempt", reason: "demo" },
      ...(options.json ? {} : { progress: (line: string) => say(`  ${line}`) })
    })
    const engine = yield* Engine
    // Loaded again after each step: a new id can lengthen the prefix an older one needs.
    const shortIds = ShortIds.loadForDisplay(engine.environmentId)
    yield* say(Run.renderText({ _tag: "Joined", outcome, ids: yield* shortIds }))
    const conflict = outcome.conflicts.find((c) => c.status === "open")
    let resolved: string | undefined
    if (conflict !== undefined) {
      yield* say(`held back: ${conflict.path} of ${conflict.childId} (${conflict.reason})`)
      yield* say(conflictExcerpt(conflict.text).map((l) => `    ${l}`).join("\n"))
      const live = fs.readFileSync(path.join(engine.root, "src/math.ts"), "utf8")
      const merged = live.replace(/export const div = [\s\S]*?\n}\n/, `${MERGED_DIV}\n`)
      const r = yield* OrchestratorConflicts.resolve(conflict.conflictId, { kind: "content", bytes: new TextEncoder().encode(merged) })
      resolved = r.record?.transactionId
      yield* say(
        `\nresolved with the parent's merged text (forkjoin resolve '${(yield* shortIds).short(conflict.conflictId)}' --content FILE); ` +
          `div-int is now ${r.outcome?.status ?? "waiting"}`
      )
    }
    const docs = TransactionId.make(`subagent_merge:${outcome.runId}/docs`)
    const rollback = yield* OrchestratorRollback.rollbackTransaction(docs, { threadId: caller })
    yield* say(
      `rolled back docs (forkjoin rollback ${(yield* shortIds).short(docs)}): ${rollback.changes.map((c) => `${c.kind} ${c.path}`).join(", ")}`
    )
    const history = yield* HistoryRecords
    const records = yield* history.recordsAfter(engine.environmentId, 0, 1000).pipe(Effect.orDie)
    const ids = yield* shortIds
    yield* say("\ntimeline:")
    for (const r of records) {
      yield* say(`  #${r.commitOrdinal} ${ids.short(r.transactionId)}  ${r.changes.map((c) => `${c.kind} ${c.path}`).join(", ")}`)
    }
    // The run as it stands now (its conflict resolved), with the children's results of the first pass.
    const final = yield* OrchestratorRun.resume(outcome.runId).pipe(Effect.orElseSucceed(() => outcome))
    return { outcome: { ...final, results: outcome.results }, resolved, rollback: rollback.transactionId, timeline: records.map((r) => ({ ordinal: r.commitOrdinal, transactionId: r.transactionId })) }
  }).pipe(Effect.provide(orchestratorLayer(dir, historyDbOf(dir, undefined))))
  const result = yield* program.pipe(
    Effect.mapError((e) => new RunFailed({ message: `the demo failed: ${e.message}`, cause: e })),
    Effect.ensuring(Effect.sync(() => {
      if (!options.keep) fs.rmSync(dir, { recursive: true, force: true })
    }))
  )
  const seconds = ((Date.now() - started) / 1000).toFixed(1)
  if (options.json) {
    const run = JSON.parse(Run.renderJson({ _tag: "Joined", outcome: result.outcome }))
    yield* writeStdout(JSON.stringify({ ...run, ...(options.keep ? { workspace: dir } : {}), resolvedAs: result.resolved, rollback: result.rollback, timeline: result.timeline }) + "\n")
  } else {
    yield* say(`\ndone in ${seconds} s.${options.keep ? ` The workspace is kept at ${dir}` : " Add --keep to inspect the workspace."}`)
  }
})
