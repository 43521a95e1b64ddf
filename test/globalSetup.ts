/**
 * Builds the CLI bundle once before any test file runs, so the CLI tests spawn what the sources
 * say without each file rebuilding it (`buildCli` skips when this ran). Running one file alone
 * goes through here too.
 */
import { execFileSync } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** The variable `buildCli` checks: set when this run already built the bundle. */
export const BUILT = "FORKJOIN_TEST_CLI_BUILT"

export default function setup(): void {
  // A vitest run started by a test (it inherits the variable) reuses the outer run's bundle.
  if (process.env[BUILT] === "1") return
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
  execFileSync(process.execPath, [path.join(root, "scripts/build.mjs")], { stdio: "inherit" })
  // Test workers start after this and inherit the environment.
  process.env[BUILT] = "1"
}
