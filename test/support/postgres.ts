/**
 * The PostgreSQL server tests may use: `FORKJOIN_TEST_PG_URL` (`.ci/postgres start` starts a
 * private one on a loopback port and prints it; `.ci/run` does so for `npm test`). Absent:
 * outside CI the suite is skipped with a message saying how to start one; in CI it fails.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { withRequirement } from "./fixtures.ts"

/** The variable naming the test server's URL (`postgres://user:password@127.0.0.1:PORT/db`). */
export const postgresUrlVariable = "FORKJOIN_TEST_PG_URL"

/** The test server's URL, or undefined when none is configured. */
export const postgresUrl = (env: NodeJS.ProcessEnv = process.env): string | undefined => {
  const url = env[postgresUrlVariable]
  return url === undefined || url === "" ? undefined : url
}

/** What to do when no server is configured: start one, or name one. */
export const noPostgresMessage = `no PostgreSQL server for these tests: run \`eval "$(.ci/postgres start)"\` in the checkout (stop it with \`.ci/postgres stop\`), or set ${postgresUrlVariable} to a server's URL`

/** Declares `body`'s tests with the server's URL when one is configured; otherwise skip (fail in CI). */
export const withPostgres = (body: (url: string) => void): void => {
  const url = postgresUrl()
  withRequirement(url !== undefined, noPostgresMessage, () => body(url!))
}

/** A new, empty database on the server of `url` (one per test file's cluster); its URL. */
export const freshDatabase = (url: string): Effect.Effect<string, unknown> =>
  Effect.gen(function*() {
    const name = `fj_test_${process.pid}_${Date.now()}`
    const sql = yield* PgClient.PgClient
    yield* sql.unsafe(`CREATE DATABASE ${name}`)
    const next = new URL(url)
    next.pathname = `/${name}`
    return next.toString()
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) })))
