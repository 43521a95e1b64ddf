/**
 * Runners as real processes on one SQLite file: two runners share the entity ids; after one is
 * killed with SIGKILL, the other takes its shards and answers for every id.
 */
import { describe, it } from "@effect/vitest"
import * as path from "node:path"
import { runnersForFile, tempDir } from "./support/runners.ts"
import { takeover } from "./support/takeover.ts"

const { script, started } = runnersForFile()

describe("runners on SQLite storage", () => {
  it.live("entity ids land on both runners, and after a SIGKILL the survivor answers for all of them", () => {
    const dir = tempDir()
    return takeover(script(), `sqlite:${path.join(dir, "cluster.db")}`, dir, started)
  }, 180_000)
})
