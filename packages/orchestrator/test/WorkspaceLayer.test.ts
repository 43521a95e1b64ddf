/**
 * The orchestrator's workspace layer: the engine, the history and merge stores over one
 * connection to the workspace's default database (one store sees what the other wrote), and,
 * through `checked`, the state folder created first and a `.forkjoin` link refused before any
 * database opens.
 */
import { Engine } from "@forkjoin/engine/Engine"
import * as Workspace from "@forkjoin/engine/Workspace"
import { MergeStore } from "@forkjoin/history/MergeStore"
import { Sqlite } from "@forkjoin/history/Sqlite"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as WorkspaceLayer from "../src/WorkspaceLayer.ts"

const sandboxes: Array<string> = []
afterAll(() => {
  for (const dir of sandboxes.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

const folder = () => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "fj-wslayer-")))
  sandboxes.push(dir)
  return dir
}

describe("WorkspaceLayer", () => {
  it("checked creates the state folder and opens the engine and both stores over the default database", async () => {
    const root = folder()
    const { engineRoot, runs } = await Effect.runPromise(
      Effect.gen(function*() {
        const engine = yield* Engine
        yield* Sqlite
        const runs = yield* Effect.flatMap(Effect.service(MergeStore), (m) => m.listRuns({ environmentId: engine.environmentId }))
        return { engineRoot: engine.root, runs }
      }).pipe(Effect.provide(WorkspaceLayer.checked(root)))
    )
    expect(engineRoot).toBe(root)
    expect(runs).toEqual([])
    expect(fs.existsSync(Workspace.defaultDatabaseOf(root))).toBe(true)
    expect(fs.existsSync(path.join(root, ".forkjoin", ".gitignore"))).toBe(true)
  })

  it("checked refuses a .forkjoin link before any database opens where it points", async () => {
    const root = folder()
    const target = folder()
    fs.symlinkSync(target, path.join(root, ".forkjoin"))
    const exit = await Effect.runPromiseExit(Effect.provide(Effect.void, WorkspaceLayer.checked(root)))
    expect(Exit.isFailure(exit)).toBe(true)
    if (Exit.isFailure(exit)) {
      const fail = exit.cause.reasons.find((r) => r._tag === "Fail")
      expect(fail?._tag === "Fail" ? fail.error : undefined).toMatchObject({ code: "path_denied_by_policy", stage: 3 })
    }
    expect(fs.readdirSync(target)).toEqual([])
  })
})
