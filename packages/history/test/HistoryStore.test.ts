/**
 * Runs the history store's contracts (one per service) against every layer: in-memory SQLite
 * and a SQLite file; and checks that `HistoryStore` is those services in one.
 */
import {
  HistoryContent,
  HistoryIdentityStore,
  HistoryJournal,
  HistoryRecords,
  HistoryStore
} from "@forkjoin/history/HistoryStore"
import { layerMemory, layerSqlite } from "@forkjoin/history/HistoryStoreSqlite"
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { contract as contentContract } from "./HistoryContent.contract.ts"
import { contract as identityContract } from "./HistoryIdentityStore.contract.ts"
import { contract as journalContract } from "./HistoryJournal.contract.ts"
import { contract as recordsContract } from "./HistoryRecords.contract.ts"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-history-contract-"))
let n = 0
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

// A fresh file per test, in a directory that does not exist yet (the layer creates it).
const layers = { "memory": () => layerMemory, "sqlite file": () => layerSqlite(path.join(dir, `db-${++n}`, "history.db")) }

for (const [name, makeLayer] of Object.entries(layers)) {
  contentContract(name, makeLayer)
  journalContract(name, makeLayer)
  recordsContract(name, makeLayer)
  identityContract(name, makeLayer)

  describe(`HistoryStore (${name})`, () => {
    it.effect("is the four services in one: each method is the focused service's own", () =>
      Effect.gen(function*() {
        const store = yield* HistoryStore
        const services = [yield* HistoryContent, yield* HistoryJournal, yield* HistoryRecords, yield* HistoryIdentityStore]
        const methods = services.flatMap((service) => Object.entries(service))
        assert.strictEqual(methods.length, 19)
        assert.deepStrictEqual(Object.keys(store).sort(), methods.map(([method]) => method).sort())
        for (const [method, f] of methods) assert.strictEqual(store[method as keyof typeof store], f, method)
      }).pipe(Effect.provide(makeLayer())))
  })
}
