/**
 * Scripted children run as real concurrent sessions whose steps are granted one at a time in a
 * chosen order, so the order they finish in is exactly the one chosen. It is how the merge probe
 * and the orchestrator's property test show that the join does not depend on completion order.
 * Each child's changeset and blobs land where `Children.runExportOnly` puts them.
 *
 * Owns the step-by-step scheduling only; not the sessions (`Session`) nor the join.
 *
 * @since 0.1.0
 */
import type { TaskId, ThreadId } from "@forkjoin/schema/Ids"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as path from "node:path"
import * as Artifacts from "./Artifacts.ts"
import { BlobStore } from "./BlobStore.ts"
import { Driver } from "./Driver.ts"
import * as Session from "./Session.ts"
import type { WriteScope } from "./WriteScope.ts"

/**
 * One scripted child: its task id, its mode (a read-only child runs `analysis_only`), the scope
 * a mutating child stages within, and its actions in order.
 *
 * @category models
 * @since 0.1.0
 */
export interface ScheduledChild {
  readonly id: TaskId
  readonly mode: "transactional_write" | "read_only"
  readonly writeScope: WriteScope
  readonly script: ReadonlyArray<unknown>
}

/**
 * What a scheduled run did: each child's session result (in task order) and the order the
 * children finished in (task indexes).
 *
 * @category models
 * @since 0.1.0
 */
export interface ScheduledRun {
  readonly results: ReadonlyArray<Session.SessionResult>
  readonly finished: ReadonlyArray<number>
}

/**
 * Runs `children` concurrently into `runDirectory`, granting their steps in `schedule` order (a
 * child index per step; every child's steps must appear as often as its script is long), so each
 * finishes at its last scheduled step; `threadOf` names each child's thread.
 *
 * @category constructors
 * @since 0.1.0
 */
export const runScheduled = (options: {
  readonly runDirectory: string
  readonly threadOf: (id: TaskId) => ThreadId
  readonly children: ReadonlyArray<ScheduledChild>
  readonly schedule: ReadonlyArray<number>
}) =>
  Effect.gen(function*() {
    const { children, runDirectory, schedule } = options
    const gates = children.map((c) => c.script.map(() => ({ ready: Deferred.makeUnsafe<void>(), go: Deferred.makeUnsafe<void>() })))
    const exported = children.map(() => Deferred.makeUnsafe<void>())
    const results: Array<Session.SessionResult | undefined> = children.map(() => undefined)
    const finished: Array<number> = []

    const child = (spec: ScheduledChild, i: number) =>
      Effect.gen(function*() {
        const namespace = yield* Artifacts.childDirectory(runDirectory, spec.id)
        // Every step waits for the controller: it says it is ready, then waits for its turn.
        const driver = Driver.of({
          next: (steps) =>
            Effect.gen(function*() {
              const gate = gates[i]![steps.length]
              if (gate === undefined) return undefined
              yield* Deferred.succeed(gate.ready, undefined)
              yield* Deferred.await(gate.go)
              return spec.script[steps.length]
            })
        })
        const threadId = options.threadOf(spec.id)
        const result = yield* Session.run(
          spec.mode === "transactional_write"
            ? { mode: "changeset_export", threadId, taskId: spec.id, writeScope: spec.writeScope }
            : { mode: "analysis_only", threadId }
        ).pipe(Effect.provideService(Driver, driver), Effect.provide(BlobStore.layerDirectory(path.join(namespace, "blobs"))))
        results[i] = result
        if (result.changeset !== undefined) yield* Artifacts.writeJson(namespace, "changeset.json", Session.encodeChangeset(result.changeset))
        yield* Deferred.succeed(exported[i]!, undefined)
      })

    const controller = Effect.gen(function*() {
      const next = children.map(() => 0)
      for (const i of schedule) {
        const k = next[i]!++
        yield* Deferred.await(gates[i]![k]!.ready)
        yield* Deferred.succeed(gates[i]![k]!.go, undefined)
        // Its last step: wait until it has exported, so the finishing order is the schedule's.
        if (k === children[i]!.script.length - 1) {
          yield* Deferred.await(exported[i]!)
          finished.push(i)
        }
      }
    })

    yield* Effect.all([Effect.forEach(children, child, { concurrency: "unbounded", discard: true }), controller], {
      concurrency: "unbounded",
      discard: true
    })
    return { results: results.map((r) => r!), finished } satisfies ScheduledRun
  })
