/**
 * The PostgreSQL server tests may use: `FORKJOIN_TEST_PG_URL` (`.ci/run` starts a private one on
 * a loopback port and sets it). Absent: outside CI the suite is skipped with a message saying how
 * to provide one; in CI it fails, like an absent shared fixture.
 */
import { withSharedFixture } from "./fixtures.ts"

/** The variable naming the test server's URL (`postgres://user@127.0.0.1:PORT/db`). */
export const postgresUrlVariable = "FORKJOIN_TEST_PG_URL"

/** The test server's URL, or undefined when none is configured. */
export const postgresUrl = (env: NodeJS.ProcessEnv = process.env): string | undefined => {
  const url = env[postgresUrlVariable]
  return url === undefined || url === "" ? undefined : url
}

/** Declares `body`'s tests with the server's URL when one is configured; otherwise skip (fail in CI). */
export const withPostgres = (body: (url: string) => void): void => {
  const url = postgresUrl()
  withSharedFixture({ dir: `${postgresUrlVariable} (a PostgreSQL server URL)`, present: url !== undefined }, postgresUrlVariable, () => body(url!))
}
