/**
 * A tiny entry for running the probe in a child process (bundled by `test/support/bundle.ts`):
 * `node probeMain.mjs WORKSPACE FORKJOIN_ARGV...` runs `Probe.run` and prints the results as
 * one JSON line. The child's environment (e.g. a sealed `FORKJOIN_FAULT=join:skip-baseline`)
 * is the test's to choose.
 */
import * as FaultChannel from "@forkjoin/engine/FaultChannel"
import { Probe } from "@forkjoin/probes"
import * as Effect from "effect/Effect"

const [workspace, ...forkjoin] = process.argv.slice(2)
if (workspace === undefined || forkjoin.length === 0) {
  process.stderr.write("usage: probeMain WORKSPACE FORKJOIN_ARGV...\n")
  process.exit(2)
}
const results = await Effect.runPromise(Probe.run({ workspace, forkjoin }).pipe(FaultChannel.provide(process.env)))
process.stdout.write(JSON.stringify(results) + "\n")
