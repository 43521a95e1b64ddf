/**
 * The test PostgreSQL server (`.ci/postgres`, `FORKJOIN_TEST_PG_URL`) through `@effect/sql-pg`:
 * its URL reaches a working database, and the server lets nobody in without the password, over
 * any address but 127.0.0.1 or through a unix socket.
 */
import { assert, it } from "@effect/vitest"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Redacted } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { SqlClient } from "effect/sql/SqlClient"
import { withPostgres } from "./support/postgres.ts"

/** The reason a connection with `url` is refused (the test fails if it is accepted). */
const refusal = (url: string) =>
  PgClient.makeClient({ url: Redacted.make(url), connectTimeout: "10 seconds" }).pipe(
    Effect.flip,
    Effect.map((error) => error.reason._tag),
    Effect.scoped,
    Effect.provide(Reactivity.layer)
  )

withPostgres((url) => {
  const parsed = new URL(url)

  it.effect("runs a query on the server the URL names, as its user in its database", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const rows = yield* sql<{ user: string; db: string; sum: number }>`SELECT current_user AS user, current_database() AS db, 1 + 1 AS sum`
      assert.deepStrictEqual(rows.map((r) => ({ ...r })), [{ user: decodeURIComponent(parsed.username), db: parsed.pathname.slice(1), sum: 2 }])
      yield* sql`CREATE TEMPORARY TABLE probe (n integer)`
      yield* sql`INSERT INTO probe ${sql.insert([{ n: 1 }, { n: 2 }])}`
      const [count] = yield* sql<{ total: string }>`SELECT sum(n)::text AS total FROM probe`
      assert.strictEqual(count?.total, "3")
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) }))))

  it.effect("listens on 127.0.0.1 only, with no unix socket, and takes only password logins over loopback", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const [listen] = yield* sql<{ listen_addresses: string }>`SHOW listen_addresses`
      const [sockets] = yield* sql<{ unix_socket_directories: string }>`SHOW unix_socket_directories`
      assert.strictEqual(listen?.listen_addresses, "127.0.0.1")
      assert.strictEqual(sockets?.unix_socket_directories, "")
      const rules = yield* sql<{ type: string; address: string; netmask: string; auth_method: string }>`
        SELECT type, address, netmask, auth_method FROM pg_hba_file_rules ORDER BY line_number`
      assert.deepStrictEqual(rules.map((r) => ({ ...r })), [{ type: "host", address: "127.0.0.1", netmask: "255.255.255.255", auth_method: "scram-sha-256" }])
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) }))))

  it.effect("refuses a login without the password or with a wrong one", () =>
    Effect.gen(function*() {
      const without = new URL(url)
      without.password = ""
      const wrong = new URL(url)
      wrong.password = "not-the-password"
      assert.deepStrictEqual([yield* refusal(without.href), yield* refusal(wrong.href)], ["AuthenticationError", "AuthenticationError"])
    }))
})
