/**
 * Runners as real processes on one SQLite file: two runners share the entity ids; after one is
 * killed with SIGKILL, the other takes its shards and answers for every id. Figures (start-up,
 * round trip, takeover) are printed, not asserted.
 */
import * as Sharding from "@forkjoin/cluster/Sharding"
import * as Whereami from "@forkjoin/cluster/Whereami"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ClusterUrl from "@forkjoin/cluster/ClusterUrl"
import * as Result from "effect/Result"
import * as path from "node:path"
import { buildRunner, freePort, type RunnerProcess, startRunner, tempDir } from "./support/runners.ts"

let script = ""
const started: Array<RunnerProcess> = []
beforeAll(async () => {
  script = await buildRunner(tempDir())
}, 60_000)
afterAll(async () => {
  await Promise.all(started.map((r) => r.kill9()))
})

const IDS = Array.from({ length: 48 }, (_, i) => `child-${i}`)

/** Asks every id where it lives, once each; returns the runner of each. */
const round = Effect.gen(function*() {
  const client = yield* Whereami.Whereami.client
  return yield* Effect.forEach(IDS, (id) => Effect.map(client(id).Whereami(), (l) => l.runner), { concurrency: 8 })
})

describe("runners on SQLite storage", () => {
  it.live("entity ids land on both runners, and after a SIGKILL the survivor answers for all of them", () => {
    const dir = tempDir()
    const cluster = `sqlite:${path.join(dir, "cluster.db")}`
    const url = Result.getOrThrow(ClusterUrl.parse(cluster))
    return Effect.gen(function*() {
      const [pa, pb] = [yield* Effect.promise(freePort), yield* Effect.promise(freePort)]
      const t0 = Date.now()
      const [a, b] = yield* Effect.promise(() => Promise.all([startRunner(script, { cluster, port: pa }, dir), startRunner(script, { cluster, port: pb }, dir)]))
      started.push(a, b)
      assert.isTrue("ready" in a.said && "ready" in b.said, `${JSON.stringify([a.said, b.said])} ${a.stderr()} ${b.stderr()}`)
      const startUp = Date.now() - t0
      const addrA = `127.0.0.1:${pa}`
      const addrB = `127.0.0.1:${pb}`
      // Rounds until both runners hold shards (the second may join after the first took all).
      let rounds = 0
      let seen = new Set<string>()
      const t1 = Date.now()
      while (!(seen.has(addrA) && seen.has(addrB))) {
        rounds++
        seen = new Set(yield* round)
      }
      const firstRound = Date.now() - t1
      const t2 = Date.now()
      yield* round
      const roundTrip = (Date.now() - t2) / IDS.length
      assert.deepStrictEqual([...seen].sort(), [addrA, addrB].sort())

      yield* Effect.promise(() => b.kill9())
      const t3 = Date.now()
      const after = yield* round
      const takeover = Date.now() - t3
      assert.deepStrictEqual(new Set(after), new Set([addrA]))
      console.log(JSON.stringify({ storage: "sqlite", startUpMs: startUp, roundsUntilBoth: rounds, firstRoundMs: firstRound, roundTripMs: roundTrip, takeoverMs: takeover }))
    }).pipe(Effect.provide(Sharding.layer(url, dir, Option.none())))
  }, 180_000)
})
