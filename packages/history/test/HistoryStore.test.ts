/** Runs the HistoryStore contract against every layer: in-memory SQLite and a SQLite file. */
import { layerMemory, layerSqlite } from "@forkjoin/history/HistoryStoreSqlite"
import { afterAll } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { contract } from "./HistoryStore.contract.ts"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-history-contract-"))
let n = 0
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

contract("memory", () => layerMemory)
// A fresh file per test, in a directory that does not exist yet (the layer creates it).
contract("sqlite file", () => layerSqlite(path.join(dir, `db-${++n}`, "history.db")))
