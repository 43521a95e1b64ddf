/**
 * The `MergeStore` contract: every layer must pass this suite. Each test gets a fresh store
 * from `makeLayer` and its own environment ids. Also exports the run/conflict builders the
 * SQLite-specific tests use.
 */
import { MergeStore } from "@forkjoin/history/MergeStore"
import type { StoreError } from "@forkjoin/history/HistoryStore"
import { ConflictRecord, type ConflictResolution } from "@forkjoin/schema/Conflict"
import { EnvironmentId, MergeRunId, TaskId, TransactionId } from "@forkjoin/schema/Ids"
import { type ChildOutcome, MergeRun } from "@forkjoin/schema/MergeRun"
import { UtcTimestamp } from "@forkjoin/schema/UtcTimestamp"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as fc from "fast-check"
import { randomUUID } from "node:crypto"

// -------------------------------------------------------------------------------------
// builders (decoded through the schemas, so the fixtures themselves are checked)
// -------------------------------------------------------------------------------------

/** A timestamp `seconds` after a fixed instant. */
export const at = (seconds: number): UtcTimestamp => UtcTimestamp.make(new Date(Date.UTC(2026, 10, 29, 12) + seconds * 1000).toISOString())

/** A fresh environment id, so tests sharing a database never see each other's runs. */
export const freshEnvironment = (): EnvironmentId => EnvironmentId.make(`env-${randomUUID()}`)

/** A fresh merge run id. */
export const freshRunId = (): MergeRunId => MergeRunId.make(`run-${randomUUID()}`)

/** What a test run describes. */
export interface RunSpec {
  readonly environmentId: EnvironmentId
  readonly runId?: MergeRunId
  readonly children?: ReadonlyArray<string>
  readonly status?: MergeRun["status"]
  readonly createdAt?: UtcTimestamp
}

/** A valid merge run whose children are all `pending`. */
export const mergeRun = (spec: RunSpec): MergeRun => {
  const runId = spec.runId ?? freshRunId()
  const children = spec.children ?? ["a", "b", "c"]
  const createdAt = spec.createdAt ?? at(0)
  return Schema.decodeUnknownSync(MergeRun)({
    schemaVersion: 1,
    runId,
    environmentId: spec.environmentId,
    threadId: `${runId}-thread`,
    callerThreadId: "caller",
    runDirectory: `/tmp/runs/${runId}`,
    atomic: false,
    verify: { command: ["npm", "test"], timeoutMs: 60_000 },
    status: spec.status ?? "running",
    mergePlan: {
      strategy: "transactional_parent_merge",
      requiresParentMerge: true,
      readOnlyResultIds: [],
      mutatingResultIds: children,
      changesetResultIds: children,
      missingChangesetResultIds: [],
      writeScopes: Object.fromEntries(children.map((c) => [c, ["src"]])),
      overlaps: [{ path: "src/shared.ts", resultIds: children }]
    },
    outcomes: children.map((childId) => ({ childId, status: "pending" })),
    createdAt,
    updatedAt: createdAt
  })
}

/** A child outcome. */
export const outcome = (childId: string, fields: Omit<Partial<ChildOutcome>, "childId"> = {}): ChildOutcome => ({
  childId: TaskId.make(childId),
  status: "applied",
  ...fields
})

const snapshot = (digit: string) => ({
  hash: `sha256:${digit.repeat(64)}`,
  bytes: 12,
  encoding: "utf8",
  lineEnding: "lf",
  finalNewline: true,
  mode: 0o644
})

/** A valid open text conflict of `childId` at `path` in `runId`. */
export const conflict = (
  runId: MergeRunId,
  childId: string,
  path: string,
  fields: { readonly createdAt?: UtcTimestamp; readonly text?: string } = {}
): ConflictRecord =>
  Schema.decodeUnknownSync(ConflictRecord)({
    schemaVersion: 1,
    conflictId: `${runId}/${childId}:${path}`,
    runId,
    childId,
    path,
    reason: "overlapping_edits",
    base: snapshot("a"),
    ours: snapshot("b"),
    theirs: snapshot("c"),
    hunks: [{ baseStart: 3, base: ["x\n"], ours: ["y\n"], theirs: ["z\r\n"] }],
    text: fields.text ?? "<<<<<<< ours\ny\n||||||| base\nx\n=======\nz\r\n>>>>>>> theirs\n",
    status: "open",
    createdAt: fields.createdAt ?? at(1)
  })

/**
 * `value` as whatever type the call site needs, through JSON (as a record read from a file
 * would arrive): how a test hands the store a record that its types would not allow.
 */
export const untyped = <A>(value: unknown): A => JSON.parse(JSON.stringify(value))

/** A `discard` resolution at `seconds`. */
export const discard = (seconds: number): ConflictResolution => ({ kind: "discard", resolvedAt: at(seconds) })

// -------------------------------------------------------------------------------------
// suite
// -------------------------------------------------------------------------------------

/** Runs the contract suite against fresh stores built by `makeLayer`. */
export const contract = (name: string, makeLayer: () => Layer.Layer<MergeStore, unknown>): void => {
  describe(`MergeStore contract (${name})`, () => {
    const test = (title: string, body: () => Effect.Effect<void, unknown, MergeStore | Scope.Scope>) =>
      it.effect(title, () => body().pipe(Effect.provide(makeLayer())))

    const failureOf = <A>(effect: Effect.Effect<A, StoreError>) =>
      Effect.flip(effect).pipe(Effect.map((e) => ({ tag: e._tag, reason: e.reason, message: e.message })))

    test("createRun then getRun round-trips the record; an unknown run is none", () =>
      Effect.gen(function*() {
        const store = yield* MergeStore
        const run = mergeRun({ environmentId: freshEnvironment() })
        yield* store.createRun(run)
        assert.deepStrictEqual(yield* store.getRun(run.runId), Option.some(run))
        assert.isTrue(Option.isNone(yield* store.getRun(freshRunId())))
      }))

    test("createRun refuses an existing run id with Constraint and keeps the first run", () =>
      Effect.gen(function*() {
        const store = yield* MergeStore
        const run = mergeRun({ environmentId: freshEnvironment() })
        yield* store.createRun(run)
        const failure = yield* failureOf(store.createRun({ ...run, atomic: true }))
        assert.strictEqual(failure.tag, "StoreError")
        assert.strictEqual(failure.reason, "Constraint")
        assert.include(failure.message, "already exists")
        assert.deepStrictEqual(yield* store.getRun(run.runId), Option.some(run))
      }))

    test("createRun refuses a run that lists a child twice (recordOutcome could not tell them apart)", () =>
      Effect.gen(function*() {
        const store = yield* MergeStore
        const run = mergeRun({ environmentId: freshEnvironment(), children: ["a", "b", "a"] })
        const failure = yield* failureOf(store.createRun(run))
        assert.strictEqual(failure.reason, "Constraint")
        assert.include(failure.message, "child a twice")
        assert.isTrue(Option.isNone(yield* store.getRun(run.runId)))
      }))

    test("a record the schema refuses fails with Schema and is not stored", () =>
      Effect.gen(function*() {
        const store = yield* MergeStore
        const run = mergeRun({ environmentId: freshEnvironment() })
        const bad: MergeRun = untyped({ ...run, createdAt: "yesterday" })
        assert.strictEqual((yield* failureOf(store.createRun(bad))).reason, "Schema")
        assert.isTrue(Option.isNone(yield* store.getRun(run.runId)))
        yield* store.createRun(run)
        const badOutcome: ChildOutcome = untyped({ childId: "a", status: "exploded" })
        assert.strictEqual((yield* failureOf(store.recordOutcome(run.runId, badOutcome, [], at(5)))).reason, "Schema")
        const badConflict: ConflictRecord = untyped({ ...conflict(run.runId, "a", "src/x.ts"), hunks: [{ baseStart: 0 }] })
        assert.strictEqual(
          (yield* failureOf(store.recordOutcome(run.runId, outcome("a"), [badConflict], at(5)))).reason,
          "Schema"
        )
        assert.strictEqual(
          (yield* failureOf(store.setRunStatus(run.runId, untyped("exploded"), at(5)))).reason,
          "Schema"
        )
        assert.deepStrictEqual(yield* store.getRun(run.runId), Option.some(run))
        assert.isTrue(Option.isNone(yield* store.getConflict(badConflict.conflictId)))
      }))

    test("recordOutcome replaces that child's outcome only, keeps task order, bumps updatedAt, stores the conflicts", () =>
      Effect.gen(function*() {
        const store = yield* MergeStore
        const run = mergeRun({ environmentId: freshEnvironment(), children: ["a", "b", "c"] })
        yield* store.createRun(run)
        const held = [conflict(run.runId, "b", "src/x.ts"), conflict(run.runId, "b", "src/y.ts", { createdAt: at(2) })]
        const bOutcome = outcome("b", { status: "conflicted_unresolved", conflictPaths: held.map((c) => c.path) })
        const updated = yield* store.recordOutcome(run.runId, bOutcome, held, at(10))
        const expected: MergeRun = { ...run, outcomes: [run.outcomes[0]!, bOutcome, run.outcomes[2]!], updatedAt: at(10) }
        assert.deepStrictEqual(updated, expected)
        assert.deepStrictEqual(yield* store.getRun(run.runId), Option.some(expected))
        for (const c of held) assert.deepStrictEqual(yield* store.getConflict(c.conflictId), Option.some(c))

        // A later outcome of the same child replaces the earlier one (e.g. after resolution).
        const settled = outcome("b", { status: "resolved", transactionId: TransactionId.make(`subagent_merge:${run.runId}/b`) })
        const again = yield* store.recordOutcome(run.runId, settled, [], at(20))
        assert.deepStrictEqual(again.outcomes.map((o) => o.status), ["pending", "resolved", "pending"])
        assert.deepStrictEqual(again.outcomes[1], settled)
        assert.strictEqual(again.updatedAt, at(20))
        assert.strictEqual(again.createdAt, run.createdAt)
      }))

    test("recordOutcome of an unknown run or child is NotFound and writes nothing", () =>
      Effect.gen(function*() {
        const store = yield* MergeStore
        const run = mergeRun({ environmentId: freshEnvironment(), children: ["a"] })
        yield* store.createRun(run)
        const unknownRun = yield* failureOf(store.recordOutcome(freshRunId(), outcome("a"), [], at(5)))
        assert.strictEqual(unknownRun.reason, "NotFound")
        const held = conflict(run.runId, "zz", "src/x.ts")
        const unknownChild = yield* failureOf(store.recordOutcome(run.runId, outcome("zz"), [held], at(5)))
        assert.strictEqual(unknownChild.reason, "NotFound")
        assert.include(unknownChild.message, "no child zz")
        assert.deepStrictEqual(yield* store.getRun(run.runId), Option.some(run))
        assert.isTrue(Option.isNone(yield* store.getConflict(held.conflictId)))
      }))

    test("recordOutcome refuses a conflict of another run or another child with Constraint", () =>
      Effect.gen(function*() {
        const store = yield* MergeStore
        const run = mergeRun({ environmentId: freshEnvironment(), children: ["a", "b"] })
        yield* store.createRun(run)
        const ofB = conflict(run.runId, "b", "src/x.ts")
        const ofOtherRun = conflict(freshRunId(), "a", "src/x.ts")
        for (const wrong of [ofB, ofOtherRun]) {
          const failure = yield* failureOf(store.recordOutcome(run.runId, outcome("a", { status: "conflicted_unresolved" }), [wrong], at(5)))
          assert.strictEqual(failure.reason, "Constraint")
          assert.isTrue(Option.isNone(yield* store.getConflict(wrong.conflictId)))
        }
        assert.deepStrictEqual(yield* store.getRun(run.runId), Option.some(run))
      }))

    test("recordOutcome is one transaction: a conflict clash leaves the outcome and every other conflict unwritten", () =>
      Effect.gen(function*() {
        const store = yield* MergeStore
        const run = mergeRun({ environmentId: freshEnvironment(), children: ["a", "b"] })
        yield* store.createRun(run)
        const first = conflict(run.runId, "a", "src/x.ts")
        const firstOutcome = outcome("a", { status: "conflicted_unresolved", conflictPaths: [first.path] })
        const afterFirst = yield* store.recordOutcome(run.runId, firstOutcome, [first], at(5))

        const fresh = conflict(run.runId, "a", "src/new.ts")
        const clashing = conflict(run.runId, "a", "src/x.ts", { text: "different text" })
        const failure = yield* failureOf(
          store.recordOutcome(run.runId, outcome("a", { status: "discarded" }), [fresh, clashing], at(9))
        )
        assert.strictEqual(failure.reason, "Constraint")
        assert.include(failure.message, "different content")
        assert.deepStrictEqual(yield* store.getRun(run.runId), Option.some(afterFirst))
        assert.deepStrictEqual(yield* store.getConflict(first.conflictId), Option.some(first))
        assert.isTrue(Option.isNone(yield* store.getConflict(fresh.conflictId)))
      }))

    test("recordOutcome again with identical conflicts is a no-op for them (a retried call)", () =>
      Effect.gen(function*() {
        const store = yield* MergeStore
        const env = freshEnvironment()
        const run = mergeRun({ environmentId: env, children: ["a"] })
        yield* store.createRun(run)
        const held = [conflict(run.runId, "a", "src/x.ts"), conflict(run.runId, "a", "src/y.ts")]
        const o = outcome("a", { status: "conflicted_unresolved", conflictPaths: held.map((c) => c.path) })
        yield* store.recordOutcome(run.runId, o, held, at(5))
        // Identical content, even listed twice in one call, inserts nothing new.
        const retried = yield* store.recordOutcome(run.runId, o, [...held, held[0]!], at(6))
        assert.strictEqual(retried.updatedAt, at(6))
        assert.deepStrictEqual(yield* store.listConflicts({ environmentId: env }), held)
      }))

    test("setRunStatus sets status and updatedAt; an unknown run is NotFound", () =>
      Effect.gen(function*() {
        const store = yield* MergeStore
        const env = freshEnvironment()
        const run = mergeRun({ environmentId: env })
        yield* store.createRun(run)
        const blocked = yield* store.setRunStatus(run.runId, "blocked", at(30))
        assert.deepStrictEqual(blocked, { ...run, status: "blocked", updatedAt: at(30) })
        assert.deepStrictEqual(yield* store.getRun(run.runId), Option.some(blocked))
        assert.deepStrictEqual(yield* store.listRuns({ environmentId: env, status: "running" }), [])
        assert.deepStrictEqual(yield* store.listRuns({ environmentId: env, status: "blocked" }), [blocked])
        assert.strictEqual((yield* failureOf(store.setRunStatus(freshRunId(), "applied", at(30)))).reason, "NotFound")
      }))

    test("listRuns: one environment, newest first (ties by run id, descending), optionally by status", () =>
      Effect.gen(function*() {
        const store = yield* MergeStore
        const env = freshEnvironment()
        const other = freshEnvironment()
        const oldest = mergeRun({ environmentId: env, createdAt: at(1), status: "applied" })
        const tieLow = mergeRun({ environmentId: env, runId: MergeRunId.make("run-tie-1"), createdAt: at(5) })
        const tieHigh = mergeRun({ environmentId: env, runId: MergeRunId.make("run-tie-2"), createdAt: at(5), status: "failed" })
        const newest = mergeRun({ environmentId: env, createdAt: at(9) })
        const elsewhere = mergeRun({ environmentId: other, createdAt: at(3) })
        for (const r of [tieLow, elsewhere, newest, oldest, tieHigh]) yield* store.createRun(r)
        assert.deepStrictEqual(yield* store.listRuns({ environmentId: env }), [newest, tieHigh, tieLow, oldest])
        assert.deepStrictEqual(yield* store.listRuns({ environmentId: env, status: "running" }), [newest, tieLow])
        assert.deepStrictEqual(yield* store.listRuns({ environmentId: env, status: "partial" }), [])
        assert.deepStrictEqual(yield* store.listRuns({ environmentId: other }), [elsewhere])
        assert.deepStrictEqual(yield* store.listRuns({ environmentId: freshEnvironment() }), [])
      }))

    test("listConflicts: by createdAt then id (code point order), filtered by environment, run and status", () =>
      Effect.gen(function*() {
        const store = yield* MergeStore
        const env = freshEnvironment()
        const run1 = mergeRun({ environmentId: env, runId: MergeRunId.make(`r1-${randomUUID()}`), children: ["a", "b"] })
        const run2 = mergeRun({ environmentId: env, children: ["a"] })
        const elsewhere = mergeRun({ environmentId: freshEnvironment(), children: ["a"] })
        for (const r of [run1, run2, elsewhere]) yield* store.createRun(r)
        // U+FF5E sorts before U+1F600 by code point (and in SQLite), after it by UTF-16 unit.
        const late = conflict(run1.runId, "a", "src/late.ts", { createdAt: at(9) })
        const fullwidth = conflict(run1.runId, "a", "src/\uFF5E.ts", { createdAt: at(2) })
        const emoji = conflict(run1.runId, "a", "src/\u{1F600}.ts", { createdAt: at(2) })
        const ofB = conflict(run1.runId, "b", "src/b.ts", { createdAt: at(1) })
        const ofRun2 = conflict(run2.runId, "a", "src/c.ts", { createdAt: at(3) })
        const foreign = conflict(elsewhere.runId, "a", "src/d.ts", { createdAt: at(0) })
        yield* store.recordOutcome(run1.runId, outcome("a", { status: "conflicted_unresolved" }), [late, emoji, fullwidth], at(10))
        yield* store.recordOutcome(run1.runId, outcome("b", { status: "conflicted_unresolved" }), [ofB], at(10))
        yield* store.recordOutcome(run2.runId, outcome("a", { status: "conflicted_unresolved" }), [ofRun2], at(10))
        yield* store.recordOutcome(elsewhere.runId, outcome("a", { status: "conflicted_unresolved" }), [foreign], at(10))

        assert.deepStrictEqual(yield* store.listConflicts({ environmentId: env }), [ofB, fullwidth, emoji, ofRun2, late])
        assert.deepStrictEqual(yield* store.listConflicts({ environmentId: env, runId: run1.runId }), [ofB, fullwidth, emoji, late])
        assert.deepStrictEqual(yield* store.listConflicts({ environmentId: env, runId: run2.runId }), [ofRun2])
        // A run of another environment is not listed under this one.
        assert.deepStrictEqual(yield* store.listConflicts({ environmentId: env, runId: elsewhere.runId }), [])

        const resolved = yield* store.resolveConflict(fullwidth.conflictId, discard(20))
        assert.deepStrictEqual(yield* store.listConflicts({ environmentId: env, status: "resolved" }), [resolved])
        assert.deepStrictEqual(yield* store.listConflicts({ environmentId: env, status: "open" }), [ofB, emoji, ofRun2, late])
        assert.deepStrictEqual(
          yield* store.listConflicts({ environmentId: env, runId: run1.runId, status: "open" }),
          [ofB, emoji, late]
        )
        assert.deepStrictEqual(yield* store.listConflicts({ environmentId: env, runId: run2.runId, status: "resolved" }), [])
      }))

    test("reopenConflict: only a conflict resolved by that transaction opens again", () =>
      Effect.gen(function*() {
        const store = yield* MergeStore
        const run = mergeRun({ environmentId: freshEnvironment(), children: ["a"] })
        yield* store.createRun(run)
        const held = conflict(run.runId, "a", "src/x.ts")
        yield* store.recordOutcome(run.runId, outcome("a", { status: "conflicted_unresolved" }), [held], at(5))
        const mine = TransactionId.make(`conflict_resolution:${held.conflictId}`)
        assert.isFalse(yield* store.reopenConflict(held.conflictId, mine))
        yield* store.resolveConflict(held.conflictId, { kind: "apply", transactionId: mine, resolvedAt: at(6) })
        assert.isFalse(yield* store.reopenConflict(held.conflictId, TransactionId.make(`conflict_resolution:${held.conflictId}x`)))
        assert.isTrue(yield* store.reopenConflict(held.conflictId, mine))
        assert.deepStrictEqual(yield* store.getConflict(held.conflictId), Option.some(held))
        yield* store.resolveConflict(held.conflictId, discard(7))
        assert.isFalse(yield* store.reopenConflict(held.conflictId, mine))
        assert.isFalse(yield* store.reopenConflict(conflict(run.runId, "a", "src/none.ts").conflictId, mine))
      }))

    test("resolveConflict: open becomes resolved once; again is Constraint; unknown is NotFound", () =>
      Effect.gen(function*() {
        const store = yield* MergeStore
        const run = mergeRun({ environmentId: freshEnvironment(), children: ["a"] })
        yield* store.createRun(run)
        const held = conflict(run.runId, "a", "src/x.ts")
        yield* store.recordOutcome(run.runId, outcome("a", { status: "conflicted_unresolved" }), [held], at(5))
        const resolution: ConflictResolution = {
          kind: "content",
          transactionId: TransactionId.make(`conflict_resolution:${held.conflictId}`),
          resolvedAt: at(7)
        }
        const resolved = yield* store.resolveConflict(held.conflictId, resolution)
        assert.deepStrictEqual(resolved, { ...held, status: "resolved", resolution })
        assert.deepStrictEqual(yield* store.getConflict(held.conflictId), Option.some(resolved))

        const twice = yield* failureOf(store.resolveConflict(held.conflictId, discard(8)))
        assert.strictEqual(twice.reason, "Constraint")
        assert.include(twice.message, "already resolved")
        assert.deepStrictEqual(yield* store.getConflict(held.conflictId), Option.some(resolved))

        const missing = yield* failureOf(store.resolveConflict(conflict(run.runId, "a", "src/none.ts").conflictId, discard(8)))
        assert.strictEqual(missing.reason, "NotFound")
        assert.isTrue(Option.isNone(yield* store.getConflict(conflict(run.runId, "a", "src/none.ts").conflictId)))

        // Re-recording the now resolved conflict as open differs from what is stored.
        const clash = yield* failureOf(store.recordOutcome(run.runId, outcome("a"), [held], at(9)))
        assert.strictEqual(clash.reason, "Constraint")
      }))

    it.effect("any sequence of outcomes leaves each child's last one, in task order (model check)", () =>
      Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(
            fc.array(
              fc.record({
                child: fc.constantFrom("a", "b", "c", "d"),
                status: fc.constantFrom<ChildOutcome["status"]>("applied", "noop", "baseline_drift", "discarded"),
                seconds: fc.integer({ min: 1, max: 10_000 })
              }),
              { maxLength: 12 }
            ),
            (steps) =>
              Effect.runPromise(
                Effect.gen(function*() {
                  const store = yield* MergeStore
                  const run = mergeRun({ environmentId: freshEnvironment(), children: ["a", "b", "c", "d"] })
                  yield* store.createRun(run)
                  const model = new Map(run.outcomes.map((o) => [o.childId as string, o]))
                  let updatedAt = run.updatedAt
                  for (const step of steps) {
                    const o = outcome(step.child, { status: step.status, reason: `step at ${step.seconds}` })
                    yield* store.recordOutcome(run.runId, o, [], at(step.seconds))
                    model.set(step.child, o)
                    updatedAt = at(step.seconds)
                  }
                  const stored = yield* store.getRun(run.runId)
                  assert.deepStrictEqual(stored, Option.some({ ...run, outcomes: [...model.values()], updatedAt }))
                }).pipe(Effect.provide(makeLayer()))
              )
          ),
          { numRuns: 25, seed: 20261129 }
        )
      ))
  })
}
