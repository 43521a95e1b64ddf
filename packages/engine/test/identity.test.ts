/**
 * Issue 9 item 2: the workspace remembers its history (`.forkjoin/identity.json`: the history
 * id of each database it used and the last ordinal it saw). A missing, emptied, different or
 * older database is refused with `history_missing` before anything is written; opening with
 * `resetHistory` adopts the database deliberately, records the reset, and the next record is #1
 * of the new history. An explicit database elsewhere is remembered under its own path.
 */
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { layerMemory, layerSqlite } from "@forkjoin/history/HistoryStoreSqlite"
import { ThreadId, TurnId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { Engine, type EngineConfig, Grants } from "../src/Engine.ts"
import { failureOf, makeWorkspace, patchOf, removeSandboxes, treeHash } from "./helpers.ts"

afterAll(removeSandboxes)

const ctx = { threadId: ThreadId.make("t1"), turnId: TurnId.make("turn1"), grant: Grants.writeCreateDirs }

const dbOf = (ws: string) => path.join(ws, ".forkjoin", "history.db")

/** Builds an engine on `ws` over the database `db` and runs `f` with it; the exit of the whole thing. */
const withDb = <A>(
  ws: string,
  db: string | undefined,
  f: (engine: Engine["Service"]) => Effect.Effect<A, unknown>,
  config: Partial<EngineConfig> = {}
): Promise<Exit.Exit<A, unknown>> =>
  Effect.runPromiseExit(
    Effect.scoped(
      Effect.flatMap(Engine, f).pipe(
        Effect.provide(Engine.layer({ root: ws, ...config }).pipe(Layer.provide(db === undefined ? layerMemory : layerSqlite(db))))
      )
    )
  )

const add = (ws: string, db: string | undefined, name: string, config: Partial<EngineConfig> = {}) =>
  withDb(ws, db, (e) => e.applyPatch({ ...ctx, patch: patchOf(`*** Add File: ${name}`, `+${name}`) }), config)

const ordinalOf = async (exit: Promise<Exit.Exit<{ readonly commitOrdinal: number }, unknown>>): Promise<number> => {
  const done = await exit
  if (Exit.isFailure(done)) throw new Error(`expected success, got ${String(done.cause)}`)
  return done.value.commitOrdinal
}

interface Remembered {
  readonly histories: ReadonlyArray<{ readonly db: string; readonly historyId: string; readonly lastOrdinal: number }>
}

const identityOf = (ws: string): Remembered => JSON.parse(fs.readFileSync(path.join(ws, ".forkjoin", "identity.json"), "utf8"))

/** A workspace with two applied records in its default database. */
const workspaceWithHistory = async () => {
  const ws = makeWorkspace({ "a.txt": "a\n" })
  expect(await ordinalOf(add(ws, dbOf(ws), "one.txt"))).toBe(1)
  expect(await ordinalOf(add(ws, dbOf(ws), "two.txt"))).toBe(2)
  return ws
}

/** The refusal of an apply on `ws` over `db`: `history_missing`, and nothing written. */
const expectRefused = async (ws: string, db: string, message: RegExp) => {
  const before = treeHash(ws)
  const exit = await add(ws, db, "three.txt")
  const error = failureOf(exit)
  expect(error.code).toBe("history_missing")
  expect(error.message).toMatch(message)
  expect(error.message).toMatch(/--reset-history/)
  expect(treeHash(ws)).toBe(before)
  expect(fs.existsSync(path.join(ws, "three.txt"))).toBe(false)
  return error
}

describe("the workspace remembers its history", () => {
  it("identity.json beside the lock names the history and the last ordinal, updated after each commit", async () => {
    const ws = await workspaceWithHistory()
    const remembered = identityOf(ws)
    expect(remembered.histories).toHaveLength(1)
    expect(remembered.histories[0]).toMatchObject({ db: "history.db", lastOrdinal: 2 })
    expect(remembered.histories[0]!.historyId).toMatch(/^hist-[0-9a-f]{32}$/)
    await ordinalOf(add(ws, dbOf(ws), "three.txt"))
    expect(identityOf(ws).histories[0]).toMatchObject({ historyId: remembered.histories[0]!.historyId, lastOrdinal: 3 })
  })

  it("a history.db truncated to 0 bytes is refused with history_missing; nothing is written", async () => {
    const ws = await workspaceWithHistory()
    fs.truncateSync(dbOf(ws), 0)
    await expectRefused(ws, dbOf(ws), /missing or empty/)
    // Still refused the next time: the refusal itself adopted nothing.
    await expectRefused(ws, dbOf(ws), /missing or empty/)
  })

  it("a deleted history.db is refused the same way", async () => {
    const ws = await workspaceWithHistory()
    fs.rmSync(dbOf(ws))
    await expectRefused(ws, dbOf(ws), /missing or empty/)
  })

  it("another workspace's history.db is refused", async () => {
    const ws = await workspaceWithHistory()
    const other = await workspaceWithHistory()
    fs.copyFileSync(dbOf(other), dbOf(ws))
    await expectRefused(ws, dbOf(ws), /another history/)
  })

  it("an older copy of the history (fewer records than the workspace saw) is refused", async () => {
    const ws = makeWorkspace()
    await ordinalOf(add(ws, dbOf(ws), "one.txt"))
    const copy = `${dbOf(ws)}.bak`
    fs.copyFileSync(dbOf(ws), copy)
    await ordinalOf(add(ws, dbOf(ws), "two.txt"))
    fs.copyFileSync(copy, dbOf(ws))
    await expectRefused(ws, dbOf(ws), /older copy/)
  })

  it("resetHistory adopts the database deliberately: the reset is recorded and the next record is #1", async () => {
    const ws = await workspaceWithHistory()
    const previous = identityOf(ws).histories[0]!.historyId
    fs.truncateSync(dbOf(ws), 0)
    const reset = await withDb(ws, dbOf(ws), (e) =>
      Effect.map(e.historyResets, (resets) => ({ opened: e.historyReset, resets })), { resetHistory: true, repairOnStart: false })
    if (Exit.isFailure(reset)) throw new Error(String(reset.cause))
    expect(reset.value.opened).toMatchObject({ previousHistoryId: previous, previousLastOrdinal: 2, reason: "missing" })
    expect(reset.value.resets).toHaveLength(1)
    const adopted = identityOf(ws).histories[0]!
    expect(adopted.historyId).not.toBe(previous)
    expect(adopted.historyId).toBe(reset.value.opened!.historyId)
    expect(await ordinalOf(add(ws, dbOf(ws), "three.txt"))).toBe(1)
    // Still visible later, from any engine on this history.
    const later = await withDb(ws, dbOf(ws), (e) => e.historyResets)
    if (Exit.isFailure(later)) throw new Error(String(later.cause))
    expect(later.value.map((r) => r.reason)).toEqual(["missing"])
  })

  it("resetHistory on the workspace's own healthy database resets nothing", async () => {
    const ws = await workspaceWithHistory()
    const previous = identityOf(ws).histories[0]!
    const opened = await withDb(ws, dbOf(ws), (e) => Effect.succeed(e.historyReset), { resetHistory: true })
    expect(opened).toEqual(Exit.succeed(undefined))
    expect(identityOf(ws).histories[0]).toMatchObject({ historyId: previous.historyId, lastOrdinal: 2 })
    expect(await ordinalOf(add(ws, dbOf(ws), "three.txt"))).toBe(3)
  })

  it("an explicit database elsewhere has its own remembered identity", async () => {
    const ws = makeWorkspace()
    const elsewhere = makeWorkspace()
    const db = path.join(elsewhere, "mine.db")
    await ordinalOf(add(ws, db, "one.txt"))
    const entry = identityOf(ws).histories.find((h) => h.db === fs.realpathSync(db))
    expect(entry).toMatchObject({ lastOrdinal: 1 })
    // The default database is a separate history, remembered separately.
    expect(await ordinalOf(add(ws, dbOf(ws), "two.txt"))).toBe(1)
    expect(identityOf(ws).histories).toHaveLength(2)
    // Swapping the explicit database for another workspace's is refused.
    const other = await workspaceWithHistory()
    fs.copyFileSync(dbOf(other), db)
    await expectRefused(ws, db, /another history/)
    // The default database is untouched by that refusal.
    expect(await ordinalOf(add(ws, dbOf(ws), "three.txt"))).toBe(2)
  })

  it("two processes opening a new workspace at once both adopt the one history (no false history_missing)", async () => {
    const ws = makeWorkspace()
    const db = dbOf(ws)
    // This engine reads the database's identity (none yet); right after, "another process"
    // opens the workspace, establishing the history and writing identity.json.
    const racing = Layer.effect(
      HistoryStore,
      Effect.gen(function*() {
        const real = yield* HistoryStore
        return HistoryStore.of({
          ...real,
          identity: (env) =>
            Effect.tap(real.identity(env), () =>
              Effect.orDie(Effect.scoped(Layer.build(Engine.layer({ root: ws, repairOnStart: false }).pipe(Layer.provide(layerSqlite(db)))))))
        })
      })
    ).pipe(Layer.provide(layerSqlite(db)))
    const exit = await Effect.runPromiseExit(
      Effect.scoped(
        Effect.flatMap(Engine, (e) => e.applyPatch({ ...ctx, patch: patchOf("*** Add File: one.txt", "+one") })).pipe(
          Effect.provide(Engine.layer({ root: ws }).pipe(Layer.provide(racing)))
        )
      )
    )
    if (Exit.isFailure(exit)) throw new Error(`expected success, got ${String(exit.cause)}`)
    expect(exit.value.commitOrdinal).toBe(1)
    expect(identityOf(ws).histories).toHaveLength(1)
    expect(identityOf(ws).histories[0]).toMatchObject({ db: "history.db", lastOrdinal: 1 })
  })

  it("an in-memory store is never remembered", async () => {
    const ws = makeWorkspace()
    await ordinalOf(add(ws, undefined, "one.txt"))
    expect(fs.existsSync(path.join(ws, ".forkjoin", "identity.json"))).toBe(false)
  })

  it("a database from before identities existed is adopted, with its records", async () => {
    const ws = await workspaceWithHistory()
    fs.rmSync(path.join(ws, ".forkjoin", "identity.json"))
    expect(await ordinalOf(add(ws, dbOf(ws), "three.txt"))).toBe(3)
    expect(identityOf(ws).histories[0]).toMatchObject({ lastOrdinal: 3 })
  })
})
