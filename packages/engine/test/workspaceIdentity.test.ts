/**
 * The workspace's environment id lives in `.forkjoin/identity.json` and survives a move: a
 * moved folder keeps its id (and so its records), reported once; a copy whose original is still
 * in place gets an id of its own and leaves the original's alone; a version-1 file keeps the
 * id the path gave it; a damaged file is refused before anything is written.
 */
import { layerSqlite } from "@forkjoin/history/HistoryStoreSqlite"
import { ThreadId, TurnId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { Engine, environmentIdOf, Grants } from "../src/Engine.ts"
import { pathDerivedEnvironmentId, workspaceIdentity } from "../src/internal/identity.ts"
import { failureOf, makeWorkspace, patchOf, removeSandboxes } from "./helpers.ts"

afterAll(removeSandboxes)

const ctx = { threadId: ThreadId.make("t1"), turnId: TurnId.make("turn1"), grant: Grants.writeCreateDirs }
const stateOf = (ws: string) => path.join(ws, ".forkjoin")
const identityFile = (ws: string) => path.join(stateOf(ws), "identity.json")
const readIdentity = (ws: string) => JSON.parse(fs.readFileSync(identityFile(ws), "utf8"))

/** Adds `name` through an engine on `ws`; the environment id the engine used. */
const add = async (ws: string, name: string) => {
  const exit = await Effect.runPromiseExit(
    Effect.scoped(
      Effect.flatMap(Engine, (e) => Effect.as(e.applyPatch({ ...ctx, patch: patchOf(`*** Add File: ${name}`, `+${name}`) }), e.environmentId)).pipe(
        Effect.provide(Engine.layer({ root: ws }).pipe(Layer.provide(layerSqlite(path.join(stateOf(ws), "history.db")))))
      )
    )
  )
  if (Exit.isFailure(exit)) throw new Error(`expected success, got ${String(exit.cause)}`)
  return exit.value
}

describe("workspace identity", () => {
  it("a new workspace starts with its path-derived id, written with its path (schema version 2)", async () => {
    const ws = makeWorkspace()
    const id = await add(ws, "one.txt")
    expect(id).toBe(pathDerivedEnvironmentId(fs.realpathSync(ws)))
    expect(readIdentity(ws)).toMatchObject({ schemaVersion: 2, environmentId: id, root: fs.realpathSync(ws) })
  })

  it("a moved workspace keeps its id; the move is reported once, then the file records the new path", async () => {
    const ws = makeWorkspace()
    const id = await add(ws, "one.txt")
    const moved = `${ws}-moved`
    fs.renameSync(ws, moved)
    const real = fs.realpathSync(moved)
    const first = workspaceIdentity(stateOf(real), real)
    expect(first).toEqual({ environmentId: id, moved: { from: path.join(fs.realpathSync(path.dirname(ws)), path.basename(ws)), to: real }, copiedFrom: undefined })
    expect(readIdentity(real).root).toBe(real)
    expect(workspaceIdentity(stateOf(real), real)).toEqual({ environmentId: id, moved: undefined, copiedFrom: undefined })
    expect(await add(real, "two.txt")).toBe(id)
    expect(environmentIdOf(real)).toBe(id)
    fs.rmSync(real, { recursive: true, force: true })
  })

  it("a copy beside its original gets an id of its own; the original keeps its id and file", async () => {
    const ws = makeWorkspace()
    const id = await add(ws, "one.txt")
    const copy = `${ws}-copy`
    fs.cpSync(ws, copy, { recursive: true })
    const original = fs.readFileSync(identityFile(ws), "utf8")
    const real = fs.realpathSync(copy)
    const opened = workspaceIdentity(stateOf(real), real)
    expect(opened).toMatchObject({ copiedFrom: fs.realpathSync(ws), moved: undefined })
    if (opened instanceof Error) throw opened
    expect(opened.environmentId).not.toBe(id)
    expect(await add(real, "two.txt")).toBe(opened.environmentId)
    expect(fs.readFileSync(identityFile(ws), "utf8")).toBe(original)
    expect(await add(ws, "three.txt")).toBe(id)
    fs.rmSync(real, { recursive: true, force: true })
  })

  it("a workspace written by the previous version (no environmentId) keeps the id its path gave it", async () => {
    const ws = makeWorkspace()
    const id = await add(ws, "one.txt")
    const { histories } = readIdentity(ws)
    fs.writeFileSync(identityFile(ws), JSON.stringify({ schemaVersion: 1, histories }))
    expect(await add(ws, "two.txt")).toBe(id)
    expect(readIdentity(ws)).toMatchObject({ schemaVersion: 2, environmentId: id, root: fs.realpathSync(ws) })
    expect(readIdentity(ws).histories).toMatchObject([{ historyId: histories[0].historyId, lastOrdinal: 2 }])
  })

  it("a damaged identity file is refused before anything is written", async () => {
    const ws = makeWorkspace()
    await add(ws, "one.txt")
    fs.writeFileSync(identityFile(ws), JSON.stringify({ schemaVersion: 2, environmentId: "", root: "/x", histories: [] }))
    const exit = await Effect.runPromiseExit(
      Effect.scoped(
        Effect.flatMap(Engine, (e) => e.applyPatch({ ...ctx, patch: patchOf("*** Add File: two.txt", "+two") })).pipe(
          Effect.provide(Engine.layer({ root: ws }).pipe(Layer.provide(layerSqlite(path.join(stateOf(ws), "history.db")))))
        )
      )
    )
    expect(failureOf(exit).code).toBe("history_unavailable")
    expect(fs.existsSync(path.join(ws, "two.txt"))).toBe(false)
  })
})
