/**
 * Runners as real processes on a real PostgreSQL server (a fresh database per run): two runners
 * share the entity ids; after one is killed with SIGKILL, the other takes its shards and answers
 * for every id. Without a server the suite is skipped with a message (fails in CI).
 */
import { describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { freshDatabase, withPostgres } from "../../../test/support/postgres.ts"
import { runnersForFile, tempDir } from "./support/runners.ts"
import { takeover } from "./support/takeover.ts"

const { script, started } = runnersForFile()

withPostgres((url) => {
  describe("runners on PostgreSQL storage", () => {
    it.live("entity ids land on both runners, and after a SIGKILL the survivor answers for all of them", () =>
      Effect.flatMap(freshDatabase(url), (cluster) => takeover(script(), cluster, tempDir(), started)), 180_000)
  })
})
