/**
 * The library facade's `server` option: `openWorkspace(dir, { server })` applies and reads views
 * through a running gateway; an engine refusal rejects with the same typed `EngineError` as a
 * local apply; a bad token rejects with the gateway's answer (`RemoteError`). Also the client
 * under both, `@forkjoin/engine/Remote` (`forkjoin apply --server`).
 */
import { openWorkspace } from "@forkjoin/engine/Facade"
import { EngineError } from "@forkjoin/schema/EngineError"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { applyRemote as applyRemoteEffect, RemoteError } from "@forkjoin/engine/Remote"
import * as Effect from "effect/Effect"
import { makeWorkspace, patchOf, type Started, start, tokenFor } from "./support.ts"

// The client returns Effects; run here at the Promise edge, as the facade runs them.
const applyRemote = (...args: Parameters<typeof applyRemoteEffect>) => Effect.runPromise(applyRemoteEffect(...args))

let gw: Started
let w: ReturnType<typeof makeWorkspace>
let token: string

beforeAll(async () => {
  w = makeWorkspace({ "a.txt": "one\n" })
  gw = await start({ root: w.ws })
  token = (await tokenFor(w.db, "lib")).token
})

afterAll(async () => {
  await gw?.stop()
  fs.rmSync(w.dir, { recursive: true, force: true })
})

describe("openWorkspace(dir, { server })", () => {
  it("applies through the server and reads its views; refusals are EngineErrors", async () => {
    const ws = await openWorkspace(w.ws, { server: { url: gw.url, token } })
    const record = await ws.applyPatch(patchOf("*** Update File: a.txt", "@@", "-one", "+two"), { threadId: "lib", turnId: "t1" })
    expect(record).toMatchObject({ threadId: "lib", turnId: "t1", outcome: "applied" })
    expect(fs.readFileSync(path.join(w.ws, "a.txt"), "utf8")).toBe("two\n")
    const page = await ws.history.timeline({ caller: "lib" })
    expect(page.items.map((r) => r.recordId)).toEqual([record.recordId])
    const refused = await ws.applyPatch(patchOf("*** Update File: a.txt", "@@", "-one", "+three"), { threadId: "lib", turnId: "t2" }).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(EngineError)
    expect(refused).toMatchObject({ code: "context_not_found", stage: expect.any(Number) })
    const outside = await ws.applyPatch(patchOf("*** Add File: x.txt", "+x"), { threadId: "elsewhere", turnId: "t3" }).catch((e: unknown) => e)
    expect(outside).toBeInstanceOf(RemoteError)
    expect(outside).toMatchObject({ code: "NotFound", status: 404 })
    await ws.close()
    const bad = await openWorkspace(w.ws, { server: { url: gw.url, token: "nope" } })
    expect(await bad.history.timeline({ caller: "lib" }).catch((e: unknown) => e)).toMatchObject({ code: "Unauthorized", status: 401 })
  })
})

describe("Remote.applyRemote", () => {
  it("resolves to the record, rejects with EngineError or RemoteError", async () => {
    const record = await applyRemote({ url: gw.url, token }, { patch: patchOf("*** Add File: c.txt", "+c"), turn: "c1" })
    expect(record.threadId).toBe("lib")
    const refused = await applyRemote({ url: gw.url, token }, { patch: patchOf("*** Add File: c.txt", "+c"), turn: "c2" }).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(EngineError)
    const unauthorized = await applyRemote({ url: gw.url, token: "x" }, { patch: "", turn: "c3" }).catch((e: unknown) => e)
    expect(unauthorized).toBeInstanceOf(RemoteError)
    expect(unauthorized).toMatchObject({ status: 401, code: "Unauthorized" })
    const unreachable = await applyRemote({ url: "http://127.0.0.1:1", token }, { patch: "", turn: "c4" }).catch((e: unknown) => e)
    expect(unreachable).toMatchObject({ status: 0, code: "unreachable" })
  })
})
