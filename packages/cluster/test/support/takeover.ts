/**
 * The runner scenario both storages run: two runner processes, entity ids asked until both
 * runners answer, one runner SIGKILLed, every id asked again until the survivor answers for all.
 * Figures are printed (counted, not asserted).
 */
import * as ClusterUrl from "@forkjoin/cluster/ClusterUrl"
import * as Sharding from "@forkjoin/cluster/Sharding"
import * as Whereami from "@forkjoin/cluster/Whereami"
import { assert } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import { freePort } from "../../../../test/support/ports.ts"
import { type RunnerProcess, startRunner } from "./runners.ts"

const IDS = Array.from({ length: 48 }, (_, i) => `child-${i}`)

/** Asks every id where it lives, once each; returns the runner of each. */
const round = Effect.gen(function*() {
  const client = yield* Whereami.Whereami.client
  return yield* Effect.forEach(IDS, (id) => Effect.map(client(id).Whereami(), (l) => l.runner), { concurrency: 8 })
})

/** Runs the scenario on `cluster`; `started` collects the processes for the suite to kill. */
export const takeover = (script: string, cluster: string, dir: string, started: Array<RunnerProcess>) => {
  const url = Result.getOrThrow(ClusterUrl.parse(cluster))
  return Effect.gen(function*() {
    const [pa, pb] = [yield* Effect.promise(freePort), yield* Effect.promise(freePort)]
    const t0 = Date.now()
    const [a, b] = yield* Effect.promise(() => Promise.all([startRunner(script, { cluster, port: pa }, dir), startRunner(script, { cluster, port: pb }, dir)]))
    started.push(a, b)
    assert.isTrue("ready" in a.said && "ready" in b.said, `${JSON.stringify([a.said, b.said])} ${a.stderr()} ${b.stderr()}`)
    const startUpMs = Date.now() - t0
    const addrA = `127.0.0.1:${pa}`
    const addrB = `127.0.0.1:${pb}`
    // Rounds until both runners hold shards (the second may join after the first took all).
    let roundsUntilBoth = 0
    let seen = new Set<string>()
    const t1 = Date.now()
    while (!(seen.has(addrA) && seen.has(addrB))) {
      roundsUntilBoth++
      seen = new Set(yield* round)
    }
    const untilBothMs = Date.now() - t1
    const t2 = Date.now()
    yield* round
    const roundTripMs = (Date.now() - t2) / IDS.length
    assert.deepStrictEqual([...seen].sort(), [addrA, addrB].sort())

    yield* Effect.promise(() => b.kill9())
    const t3 = Date.now()
    const after = yield* round
    const takeoverMs = Date.now() - t3
    assert.deepStrictEqual(new Set(after), new Set([addrA]))
    console.log(JSON.stringify({ storage: url._tag, startUpMs, roundsUntilBoth, untilBothMs, roundTripMs, takeoverMs }))
  }).pipe(Effect.provide(Sharding.layer(url, dir, Option.none())))
}
