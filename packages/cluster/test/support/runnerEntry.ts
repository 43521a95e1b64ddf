/**
 * A runner process for the tests, bundled by `runners.ts`: argv[2] is the `RunnerOptions` as
 * JSON. It writes one line on fd 3 (stdout carries effect's logs): `{"ready":…}` once the runner
 * has joined, or `{"error":…}` (then exits 2) when it must not start, e.g. its storage is
 * unreachable.
 */
import * as Runner from "@forkjoin/cluster/Runner"
import { Sharding } from "effect/cluster/Sharding"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"

const options = JSON.parse(process.argv[2]!) as Runner.RunnerOptions
const started = Date.now()
const line = (value: unknown) => Effect.sync(() => fs.writeSync(3, `${JSON.stringify(value)}\n`))

const ready = Layer.effectDiscard(Effect.gen(function*() {
  yield* Sharding
  yield* line({ ready: { pid: process.pid, startMs: Date.now() - started } })
}))

Effect.runFork(
  Layer.launch(Layer.provide(ready, Runner.layer(options, process.cwd()))).pipe(
    Effect.catch((error) =>
      Effect.andThen(line({ error: { tag: error._tag, code: "code" in error ? error.code : undefined, message: error.message } }), Effect.sync(() => process.exit(2)))
    )
  )
)
