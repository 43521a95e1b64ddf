/**
 * The token table in databases written by earlier builds (the history package's fixtures; see
 * `packages/history/test/ExistingDatabases.test.ts` for how each was made): a token issued by
 * cbf7055's `forkjoin token create` reads back after the one migrator adopts the file, and the
 * first build's database (no token table) gets it, its records untouched.
 */
import { Sha256Hash, ThreadId } from "@forkjoin/schema/Ids"
import { afterAll, assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { TokenStore } from "../src/TokenStore.ts"
import * as TokenStoreSqlite from "../src/TokenStoreSqlite.ts"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "forkjoin-token-migration-"))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

const copyOf = (name: string): string => {
  const file = path.join(dir, name)
  fs.copyFileSync(fileURLToPath(new URL(`../../history/test/fixtures/${name}`, import.meta.url)), file)
  return file
}

const query = (file: string, sql: string): unknown => {
  const db = new Database(file, { readonly: true })
  try {
    return db.prepare(sql).all()
  } finally {
    db.close()
  }
}

const COMPONENTS = "SELECT component, version FROM schema_components ORDER BY component"

describe("TokenStoreSqlite on databases of earlier builds", () => {
  it.effect("a token issued by cbf7055 reads back, and revoking it works", () =>
    Effect.gen(function*() {
      const file = copyOf("history-cbf7055.db")
      const hash = Sha256Hash.make("sha256:9372edecd32241c95baa35884aef6d4fc0ed1cce4627c82ca9a7f043aae62789")
      const { found, revoked } = yield* Effect.gen(function*() {
        const tokens = yield* TokenStore
        return { found: yield* tokens.findByHash(hash), revoked: yield* tokens.revoke("4774ce569f648a85", 1_800_000_000_000) }
      }).pipe(Effect.provide(TokenStoreSqlite.layerSqlite(file)))
      assert.deepStrictEqual(Option.getOrThrow(found), {
        tokenId: "4774ce569f648a85",
        tokenHash: hash,
        threadId: ThreadId.make("cli"),
        createdAt: 1796222471783,
        expiresAt: 1827758471783
      })
      assert.strictEqual(revoked.revokedAt, 1_800_000_000_000)
      assert.deepStrictEqual(query(file, COMPONENTS), [
        { component: "gateway", version: 1 },
        { component: "history", version: 5 },
        { component: "merge", version: 2 }
      ])
    }))

  it.effect("the first build's database gets the token table; its records stay", () =>
    Effect.gen(function*() {
      const file = copyOf("history-d4ed8fb.db")
      const records = query(file, "SELECT record_id, commit_ordinal FROM records ORDER BY commit_ordinal")
      const row = {
        tokenId: "t1",
        tokenHash: Sha256Hash.make(`sha256:${"1".repeat(64)}`),
        threadId: ThreadId.make("cli"),
        createdAt: 1,
        expiresAt: 2
      }
      const found = yield* Effect.gen(function*() {
        const tokens = yield* TokenStore
        yield* tokens.insert(row)
        return yield* tokens.findByHash(row.tokenHash)
      }).pipe(Effect.provide(TokenStoreSqlite.layerSqlite(file)))
      assert.deepStrictEqual(Option.getOrThrow(found), row)
      assert.deepStrictEqual(query(file, COMPONENTS), [{ component: "gateway", version: 1 }, { component: "history", version: 5 }])
      assert.deepStrictEqual(query(file, "SELECT record_id, commit_ordinal FROM records ORDER BY commit_ordinal"), records)
    }))
})
