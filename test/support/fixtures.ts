/**
 * Suites over the shared fixtures (`../shared/...`, or a folder named by an environment
 * variable): a fresh clone has no `../shared`, so outside CI their absence skips the suite with
 * a message saying how to provide them; in CI (`CI` set) it fails.
 */
import { it } from "vitest"

/** True when `CI` is set to anything but empty, `false` or `0` (as CI services set it). */
export const inCi = (env: NodeJS.ProcessEnv = process.env): boolean => {
  const ci = env["CI"]
  return ci !== undefined && ci !== "" && ci !== "false" && ci !== "0"
}

/** What a fixture-reading suite does: run, or (fixtures absent) fail in CI and skip elsewhere. */
export const fixturePolicy = (present: boolean, ci: boolean): "run" | "fail" | "skip" => (present ? "run" : ci ? "fail" : "skip")

/**
 * Declares `body`'s tests when what they need is `present`. Absent: in CI one failing test,
 * elsewhere one skipped test (and a line on stderr), each saying `message` (what is missing and
 * how to provide it).
 */
export const withRequirement = (present: boolean, message: string, body: () => void): void => {
  switch (fixturePolicy(present, inCi())) {
    case "run":
      return body()
    case "fail":
      it("finds what these tests need", () => {
        throw new Error(`${message} (required in CI)`)
      })
      return
    case "skip":
      process.stderr.write(`skipped: ${message}\n`)
      it.skip(message, () => {})
  }
}

/**
 * Declares `body`'s tests when `fixture` is present; otherwise as `withRequirement`, saying where
 * the fixtures were looked for and that `envVar` names another folder.
 */
export const withSharedFixture = (fixture: { readonly dir: string; readonly present: boolean }, envVar: string, body: () => void): void =>
  withRequirement(
    fixture.present,
    `shared fixtures are absent at ${fixture.dir}: set ${envVar} to their folder (or put shared/ beside the checkout) to run these tests`,
    body
  )
