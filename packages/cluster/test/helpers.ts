/** Cluster wire test helpers: temp workspaces over a real engine, the object server on loopback, and raw requests. */
import { Engine } from "@forkjoin/engine/Engine"
import { layerMemory } from "@forkjoin/history/HistoryStoreSqlite"
import { BlobStore } from "@forkjoin/runtime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as http from "node:http"
import { sandboxes } from "../../../test/support/sandbox.ts"
import * as Baseline from "../src/Baseline.ts"
import * as ObjectClient from "../src/ObjectClient.ts"
import * as ObjectsModule from "../src/Objects.ts"
import { Objects } from "../src/Objects.ts"
import * as ObjectServer from "../src/ObjectServer.ts"

/** Fresh temp workspaces holding files; `removeSandboxes` removes every one made. */
export const { makeWorkspace, removeSandboxes } = sandboxes("fj-cluster-")

/** The engine of `ws` over an in-memory history, and an in-memory blob store for uploads. */
export const layers = (ws: string) => Layer.mergeAll(Engine.layer({ root: ws }).pipe(Layer.provide(layerMemory)), BlobStore.layerMemory)

/** The workspace's baseline served on loopback; a client for it with the server's secret. */
export const served = (options: ObjectServer.ServeOptions = {}) =>
  Effect.gen(function*() {
    const baseline = yield* Baseline.snapshot
    const objects = yield* ObjectsModule.make(baseline)
    const running = yield* Effect.provideService(ObjectServer.serve(options), Objects, objects)
    const client = ObjectClient.make({ url: running.url, secret: running.secret })
    return { baseline, objects, running, client }
  })

/** The object server over `objects` (any implementation, a lying one included). */
export const servedOver = (objects: Objects["Service"], options: ObjectServer.ServeOptions = {}): Effect.Effect<ObjectServer.Running, ObjectServer.ObjectServerError, Scope.Scope> =>
  Effect.provideService(ObjectServer.serve(options), Objects, objects)

/** One raw request (tests only: methods and headers the product client never sends). */
export const raw = (method: string, url: string, headers: Record<string, string> = {}, body?: Uint8Array) =>
  Effect.promise(() =>
    new Promise<{ readonly status: number; readonly text: string }>((resolve, reject) => {
      const req = http.request(url, { method, headers: body === undefined ? headers : { ...headers, "content-length": String(body.length) } }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }))
        res.on("error", reject)
      })
      req.on("error", reject)
      req.end(body)
    })
  )

/** The `code` of a JSON error body. */
export const codeIn = (text: string): unknown => (JSON.parse(text) as { code?: unknown }).code
