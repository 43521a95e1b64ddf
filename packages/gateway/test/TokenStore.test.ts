import { sqliteOptions } from "@forkjoin/history/HistoryStoreSqlite"
import { Sqlite } from "@forkjoin/history/Sqlite"
import * as Layer from "effect/Layer"
import * as TokenStoreSqlite from "../src/TokenStoreSqlite.ts"
import { TokenStore } from "../src/TokenStore.ts"
import { contract } from "./TokenStore.contract.ts"

contract("memory", TokenStore.layerMemory)
contract("sqlite", TokenStoreSqlite.layerNoDeps.pipe(Layer.provide(Sqlite.layerMemory(sqliteOptions()))))
