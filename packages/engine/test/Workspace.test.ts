/**
 * The workspace module every opener shares: the nearest enclosing workspace (a `.forkjoin`
 * folder, else the git root, else the folder itself; never climbing out of a state folder), a
 * folder inside a workspace meaning that workspace, the default history database, the state
 * folder created before anything opens (a link refused, nothing created where it points), and
 * the engine over the default database.
 */
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { layerSqlite } from "@forkjoin/history/HistoryStoreSqlite"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { Engine, environmentIdOf } from "../src/Engine.ts"
import { openWorkspace } from "../src/Facade.ts"
import * as Workspace from "../src/Workspace.ts"
import { failureOf, makeWorkspace, removeSandboxes } from "./helpers.ts"

afterAll(removeSandboxes)

/** A fresh real folder with `tree` (folders end in `/`). */
const folderWith = (...tree: ReadonlyArray<string>): string => {
  const dir = fs.realpathSync(makeWorkspace())
  for (const entry of tree) fs.mkdirSync(path.join(dir, entry), { recursive: true })
  return dir
}

describe("locateWorkspace", () => {
  it("from a nested folder, the nearest folder with .forkjoin, even inside a git checkout", () => {
    const dir = folderWith(".git/", "ws/.forkjoin/", "ws/src/deep/")
    const ws = path.join(dir, "ws")
    expect(Workspace.locateWorkspace(undefined, path.join(ws, "src", "deep"))).toEqual({ root: ws, enclosing: false })
    expect(Workspace.locateWorkspace(undefined, ws)).toEqual({ root: ws, enclosing: false })
  })

  it("without a .forkjoin above, the git root (a .git file of a worktree counts too)", () => {
    const dir = folderWith(".git/", "src/a/")
    expect(Workspace.locateWorkspace(undefined, path.join(dir, "src", "a")).root).toBe(dir)
    const worktree = folderWith("src/")
    fs.writeFileSync(path.join(worktree, ".git"), "gitdir: elsewhere\n")
    expect(Workspace.locateWorkspace(undefined, path.join(worktree, "src")).root).toBe(worktree)
  })

  it("a folder with neither is its own workspace; a .forkjoin file is no workspace marker", () => {
    const dir = folderWith("plain/")
    fs.writeFileSync(path.join(dir, "plain", ".forkjoin"), "")
    const plain = path.join(dir, "plain")
    // The sandbox lies in the system's temp folder, outside any git checkout or workspace.
    expect(Workspace.locateWorkspace(undefined, plain)).toEqual({ root: plain, enclosing: false })
    expect(Workspace.locateWorkspace(plain)).toEqual({ root: plain, enclosing: false })
  })

  it("a folder given inside a workspace means that workspace (enclosing); the walk stops at a state folder", () => {
    const ws = folderWith(".forkjoin/", "src/lib/", ".forkjoin/probe/scratch/src/")
    expect(Workspace.locateWorkspace(path.join(ws, "src", "lib"))).toEqual({ root: ws, enclosing: true })
    expect(Workspace.locateWorkspace(ws)).toEqual({ root: ws, enclosing: false })
    // A scratch workspace kept in a state folder is its own: never the one whose state it sits in.
    const scratch = path.join(ws, ".forkjoin", "probe", "scratch")
    expect(Workspace.locateWorkspace(path.join(scratch, "src"))).toEqual({ root: path.join(scratch, "src"), enclosing: false })
    expect(Workspace.locateWorkspace(undefined, path.join(scratch, "src")).root).toBe(path.join(scratch, "src"))
  })

  it("a missing folder or a file throws the file system's error", () => {
    const dir = folderWith()
    fs.writeFileSync(path.join(dir, "f"), "")
    expect(() => Workspace.locateWorkspace(path.join(dir, "missing"))).toThrow(expect.objectContaining({ code: "ENOENT" }))
    expect(() => Workspace.locateWorkspace(path.join(dir, "f"))).toThrow(expect.objectContaining({ code: "ENOTDIR" }))
  })
})

describe("the history database and the state folder", () => {
  it("the default database is <root>/.forkjoin/history.db; a given one wins", () => {
    expect(Workspace.defaultDatabaseOf("/w")).toBe(path.join("/w", ".forkjoin", "history.db"))
    expect(Workspace.databaseOf("/w", undefined)).toBe(path.join("/w", ".forkjoin", "history.db"))
    expect(Workspace.databaseOf("/w", "/elsewhere/h.db")).toBe("/elsewhere/h.db")
  })

  it("ensureStateFolder creates .forkjoin with its .gitignore, and opens an existing one", async () => {
    const ws = folderWith()
    const state = await Effect.runPromise(Workspace.ensureStateFolder(ws))
    expect(state).toBe(path.join(ws, ".forkjoin"))
    expect(fs.readFileSync(path.join(state, ".gitignore"), "utf8")).toContain("*")
    expect(await Effect.runPromise(Workspace.ensureStateFolder(ws))).toBe(state)
  })

  it("a .forkjoin link is refused before the layer is built: nothing is created where it points", async () => {
    const ws = folderWith()
    const target = folderWith()
    fs.symlinkSync(target, path.join(ws, ".forkjoin"))
    let built = false
    const layer = Workspace.afterStateCheck(ws, Layer.effectDiscard(Effect.sync(() => (built = true))))
    const exit = await Effect.runPromiseExit(Effect.scoped(Layer.build(layer)))
    expect(failureOf(exit)).toMatchObject({ code: "path_denied_by_policy", stage: 3 })
    expect(built).toBe(false)
    // The library facade refuses it the same way, before its database opens.
    await expect(openWorkspace(ws)).rejects.toMatchObject({ code: "path_denied_by_policy", stage: 3 })
    expect(fs.readdirSync(target)).toEqual([])
  })
})

describe("engine layers", () => {
  it("engineLayer opens the engine on the workspace over the default database", async () => {
    const ws = folderWith()
    const db = Workspace.defaultDatabaseOf(ws)
    const root = await Effect.runPromise(
      Effect.map(Effect.service(Engine), (e) => e.root).pipe(Effect.provide(Workspace.afterStateCheck(ws, Workspace.engineLayer(ws, db))))
    )
    expect(root).toBe(ws)
    expect(fs.existsSync(db)).toBe(true)
  })

  it("engineOver keeps the stores' services beside the engine (one store for both)", async () => {
    const ws = folderWith(".forkjoin/")
    const [engine, records] = await Effect.runPromise(
      Effect.all([Effect.service(Engine), Effect.flatMap(Effect.service(HistoryStore), (h) => h.recordsAfter(environmentIdOf(ws), 0, 10))]).pipe(
        Effect.provide(Workspace.engineOver(ws, layerSqlite(Workspace.defaultDatabaseOf(ws)), { repairOnStart: false }))
      )
    )
    expect(engine.root).toBe(ws)
    expect(records).toEqual([])
  })
})
