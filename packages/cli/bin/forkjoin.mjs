#!/usr/bin/env node
// forkjoin launcher: runs the esbuild bundle. When the bundle is missing (a checkout where
// `prepare` did not run), it builds it once with scripts/build.mjs, then runs it.
import { existsSync } from "node:fs"

const bundle = new URL("../dist/forkjoin.mjs", import.meta.url)
if (!existsSync(bundle)) {
  // Loaded only here: every normal start skips the child_process module.
  const { execFileSync } = await import("node:child_process")
  const { fileURLToPath } = await import("node:url")
  try {
    // Build output goes to stderr so stdout stays clean for `--json` consumers.
    execFileSync(process.execPath, [fileURLToPath(new URL("../../../scripts/build.mjs", import.meta.url))], {
      stdio: ["ignore", 2, 2]
    })
  } catch {
    process.stderr.write("forkjoin: the CLI bundle is missing and building it failed; run 'npm run build' in the forkjoin checkout.\n")
    process.exit(2)
  }
}
await import(bundle.href)
