/**
 * The atomic join: all children planned in order against the files as the earlier ones leave
 * them, then one transaction for all, or nothing.
 */
import { Engine, Grants } from "@forkjoin/engine/Engine"
import { HistoryRecords } from "@forkjoin/history/HistoryStore"
import { planOfFiles } from "@forkjoin/merge/ChildPlan"
import { type FileState, NetChange, type PlannedFile } from "@forkjoin/patch"
import { sameBytes } from "@forkjoin/patch/Bytes"
import type { ChangeMerge, MergeRun, RelativePath, TaskId } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { storeFailure } from "../OrchestratorError.ts"
import { planFor } from "./inputs.ts"
import { admitChangeset } from "./landing.ts"
import { asPaths, type JoinChild, type Joined, JOIN_TURN, runThread, transactionOf } from "./model.ts"
import { scopeViolation } from "./refusals.ts"
import { landed, landingRefusal, recoveredOutcome, settle } from "./settle.ts"

/**
 * The atomic join: every child planned in order against the files as the earlier children
 * leave them, then one transaction `subagent_merge:<run-id>` for all of them, or nothing.
 * A child that cannot be applied keeps its own status; the others are reported not applied.
 */
export const proceedAtomic = (run: MergeRun, children: ReadonlyArray<JoinChild>) =>
  Effect.gen(function*() {
    const engine = yield* Engine
    const history = yield* HistoryRecords
    const transactionId = transactionOf(run.runId)
    const pending = run.outcomes.filter((o) => o.status === "pending")
    const already = yield* history.recordsByTransaction(engine.environmentId, transactionId).pipe(Effect.mapError(storeFailure("Reading a transaction")))
    const byId = new Map(children.map((c) => [c.id, c]))
    if (already.length > 0) {
      const recovered: Array<Joined> = []
      for (const o of pending) {
        const child = byId.get(o.childId)
        const admitted = child === undefined ? undefined : Result.getOrUndefined(yield* admitChangeset(child))
        recovered.push({ outcome: recoveredOutcome(o.childId, admitted, already, transactionId), conflicts: [] })
      }
      return recovered
    }
    const overrides = new Map<string, FileState>()
    const changed = new Set<RelativePath>()
    const steps: Array<NetChange.Step<Uint8Array, TaskId>> = []
    // How the last child to write each path merged it (none: it wrote its own content).
    const mergeOf = new Map<string, ChangeMerge | undefined>()
    const planned: Array<{ readonly childId: TaskId; readonly joined: Joined; readonly ready: boolean }> = []
    for (const o of pending) {
      const child = byId.get(o.childId)
      const refused = scopeViolation(o.childId, o.refusals ?? [])
      if (refused !== undefined) {
        planned.push({ childId: o.childId, joined: { outcome: refused, conflicts: [] }, ready: false })
        continue
      }
      if (child === undefined) {
        planned.push({ childId: o.childId, joined: { outcome: { childId: o.childId, status: "missing_changeset", reason: "the child exported no changeset" }, conflicts: [] }, ready: false })
        continue
      }
      const checked = yield* admitChangeset(child)
      if (Result.isFailure(checked)) {
        planned.push({ childId: o.childId, joined: { outcome: { childId: o.childId, status: checked.failure.status, reason: checked.failure.reason }, conflicts: [] }, ready: false })
        continue
      }
      const plan = yield* planFor(checked.success, child, changed, overrides)
      const warned = plan.warnings === undefined ? {} : { warnings: plan.warnings }
      if (plan._tag === "Ready") {
        for (const f of plan.plan.files) {
          steps.push({ ...f, tag: child.id })
          mergeOf.set(f.path, f.merge)
          if (f.moveFrom !== undefined) overrides.set(f.moveFrom, { _tag: "Missing" })
          overrides.set(f.path, f.after === undefined ? { _tag: "Missing" } : { _tag: "File", bytes: f.after })
          changed.add(f.path)
          if (f.moveFrom !== undefined) changed.add(f.moveFrom)
        }
        planned.push({ childId: o.childId, joined: { outcome: { childId: o.childId, ...warned, ...landed(plan), transactionId }, conflicts: [] }, ready: true })
      } else if (plan._tag === "Noop") {
        planned.push({ childId: o.childId, joined: { outcome: { childId: o.childId, ...warned, status: "noop" }, conflicts: [] }, ready: true })
      } else {
        planned.push({ childId: o.childId, joined: yield* settle(run, child, plan, transactionId), ready: false })
      }
    }
    const notApplied = (why: string) =>
      planned.map((p): Joined =>
        p.ready
          ? { outcome: { childId: p.childId, status: "apply_failed_rolled_back", reason: `atomic join: nothing was applied because ${why}` }, conflicts: [] }
          : p.joined
      )
    const blocking = planned.find((p) => !p.ready)
    if (blocking !== undefined) return notApplied(`child ${blocking.childId} was ${blocking.joined.outcome.status}`)
    const files = NetChange.pathChanges(NetChange.fold(steps, "path"), sameBytes, { moves: false, replace: false })
      .map((c): PlannedFile => {
        const merge = mergeOf.get(c.path)
        return { kind: c.kind, path: c.path, before: c.before, after: c.after, ...(merge === undefined ? {} : { merge }) }
      })
    if (files.length === 0) return planned.map((p) => p.joined)
    const plan = planOfFiles(files)
    // Each path was admitted inside its child's scope, as its real path: under the lock it must
    // still land there (an exact landing, so one child's link cannot reach into another's scope).
    const writeScope = [...new Set(pending.flatMap((o) => byId.get(o.childId)?.writeScope ?? []))]
    const applied = yield* engine.applyPlan({
      threadId: runThread(run.runId),
      turnId: JOIN_TURN,
      transactionId,
      grant: Grants.full,
      links: { mergeRunId: run.runId },
      writeScope,
      plan
    }).pipe(Effect.result)
    if (Result.isSuccess(applied)) return planned.map((p) => p.joined)
    const e = applied.failure
    const refused = landingRefusal(e)
    if (refused !== undefined) {
      // The child whose path led astray is refused; the others were not applied because of it.
      const at = e.paths[0]
      const culprit = steps.find((s) => s.path === at || s.moveFrom === at)?.tag
      return planned.map((p): Joined =>
        p.childId === culprit || (culprit === undefined && p.ready)
          ? { outcome: { childId: p.childId, status: refused, reason: `${e.message} Nothing of the atomic join was applied.` }, conflicts: [] }
          : p.ready
          ? { outcome: { childId: p.childId, status: "apply_failed_rolled_back", reason: `atomic join: nothing was applied because child ${culprit} was ${refused} (${e.message})` }, conflicts: [] }
          : p.joined
      )
    }
    if (e.code === "stale_file") {
      return planned.map((p): Joined => ({ outcome: { childId: p.childId, status: "baseline_drift", driftPaths: asPaths(e.paths), reason: e.message }, conflicts: [] }))
    }
    return notApplied(`the transaction failed (${e.code}: ${e.message})`)
  })
