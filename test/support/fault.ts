/**
 * The tests' side of the fault channel (`@forkjoin/engine/FaultChannel`): a child process gets a
 * fault only sealed with a key this test process wrote. `sealed(env)` turns a plain
 * `FORKJOIN_FAULT` in the environment a test gives its child into the sealed variables, with a
 * key of the test file's own.
 */
import * as FaultChannel from "@forkjoin/engine/FaultChannel"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"

let keyFile: string | undefined

/** The test file's fault key, created on first use and removed (with its folder) after its tests. */
const key = (): string => {
  if (keyFile !== undefined) return keyFile
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fj-test-fault-"))
  keyFile = FaultChannel.makeKey(dir)
  return keyFile
}

afterAll(() => {
  if (keyFile !== undefined) fs.rmSync(path.dirname(keyFile), { recursive: true, force: true })
  keyFile = undefined
})

/** `env` with its `FORKJOIN_FAULT` (if any) sealed, so the child really injects it. */
export const sealed = <E extends Readonly<Record<string, string | undefined>>>(env: E): E => {
  const fault = env["FORKJOIN_FAULT"]
  return fault === undefined ? env : { ...env, ...FaultChannel.seal(fault, key()) }
}
