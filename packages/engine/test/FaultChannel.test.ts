/**
 * The fault channel opens only a sealed fault: the HMAC of `FORKJOIN_FAULT` under a private
 * key file of this user. A plain variable, a forged or reused MAC, a missing, linked or
 * readable key file open nothing.
 */
import { Faults } from "@forkjoin/engine/Fault"
import * as FaultChannel from "@forkjoin/engine/FaultChannel"
import { it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect } from "vitest"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fj-fault-channel-"))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

const stages = (env: NodeJS.ProcessEnv) => [...FaultChannel.open(env).afterStage]

describe("FaultChannel.open", () => {
  it("opens a sealed fault", () => {
    expect(stages(FaultChannel.seal("stage:3,stage:5", FaultChannel.makeKey(dir)))).toEqual([3, 5])
  })

  it("opens nothing from FORKJOIN_FAULT alone, nor with a MAC made for another fault or key", () => {
    const key = FaultChannel.makeKey(dir)
    expect(stages({ FORKJOIN_FAULT: "stage:3" })).toEqual([])
    expect(stages({ ...FaultChannel.seal("stage:4", key), FORKJOIN_FAULT: "stage:3" })).toEqual([])
    const sealed = FaultChannel.seal("stage:3", key)
    expect(stages({ ...sealed, FORKJOIN_FAULT_KEY_FILE: FaultChannel.makeKey(dir) })).toEqual([])
    expect(stages({ ...sealed, FORKJOIN_FAULT_MAC: "zz" })).toEqual([])
  })

  it("opens nothing when the key file is missing, a link, or readable by others", () => {
    const key = FaultChannel.makeKey(dir)
    const sealed = FaultChannel.seal("stage:3", key)
    const link = path.join(dir, "link")
    fs.symlinkSync(key, link)
    expect(stages({ ...sealed, FORKJOIN_FAULT_KEY_FILE: link })).toEqual([])
    fs.chmodSync(key, 0o640)
    expect(stages(sealed)).toEqual([])
    fs.rmSync(key)
    expect(stages(sealed)).toEqual([])
  })

  it.effect("provide installs the opened faults as Fault.Faults; none by default", () =>
    Effect.gen(function*() {
      expect((yield* Faults).afterStage.size).toBe(0)
      const plan = yield* Faults.pipe(FaultChannel.provide(FaultChannel.seal("merge:after-child:2", FaultChannel.makeKey(dir))))
      expect([...plan.afterChild]).toEqual([2])
    }))
})
