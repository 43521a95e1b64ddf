import type { TestSpecification } from "vitest/node"
import { BaseSequencer } from "vitest/node"
import { defineConfig } from "vitest/config"

// vitest 5's reporter calls Map.groupBy (Node >= 21); Node 20 is a supported runtime here.
if (typeof (Map as { groupBy?: unknown }).groupBy !== "function") {
  Object.defineProperty(Map, "groupBy", {
    value: <K, V>(items: Iterable<V>, key: (v: V, i: number) => K): Map<K, Array<V>> => {
      const out = new Map<K, Array<V>>()
      let i = 0
      for (const item of items) {
        const k = key(item, i++)
        const list = out.get(k)
        if (list === undefined) out.set(k, [item])
        else list.push(item)
      }
      return out
    }
  })
}

/**
 * The slowest files (measured in a CI run: 2 cores, 3 workers), longest first. vitest starts the
 * files with the longest recorded durations first, but a fresh clone or CI after `npm ci` (which removes node_modules/.vite) has
 * none and falls back to file size: a two-minute file of 140 lines then started half-way through and
 * ran alone at the end on one of the two workers.
 */
const SLOWEST = [
  "test/crash/crash.test.ts",
  "test/crash/join.crash.test.ts",
  "packages/cli/test/gate.test.ts",
  "packages/cli/test/cli.test.ts",
  "packages/cli/test/join.test.ts",
  "packages/cli/test/cluster.test.ts",
  "test/mergeCorpus.test.ts",
  "packages/cli/test/tty.test.ts",
  "test/concurrency/resolve.race.test.ts",
  "packages/cli/test/history.test.ts",
  "packages/cli/test/workspace.test.ts",
  "packages/cli/test/shortIds.test.ts",
  "packages/cli/test/friction.test.ts",
  "packages/cli/test/join.badinput.test.ts",
  "packages/cli/test/mergeFile.test.ts"
]

/** vitest's order, except that without recorded durations the files in SLOWEST go first, in its order. */
class SlowestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const sorted = await super.sort(files)
    if (sorted.every((spec) => this.ctx.cache.getTestSpecificationResult(spec) !== undefined)) return sorted
    const rank = (spec: TestSpecification): number => {
      const i = SLOWEST.findIndex((file) => spec.moduleId.endsWith(`/${file}`))
      return i === -1 ? SLOWEST.length : i
    }
    return sorted.sort((a, b) => rank(a) - rank(b))
  }
}

/**
 * Packages whose test files share one module graph per worker (`isolate: false`): each file then
 * skips a fresh worker and a fresh import of effect and the sources (about a second of CPU per
 * file). Their sources keep no module state a test depends on, their tests set no environment and
 * mock no module. The rest stay isolated: the CLI's repair announcements and the history's hashing
 * helper thread are module state those tests start from, autonomy and history tests mock modules
 * (node:fs among them), gateway and driver tests failed when sharing (a served page, a stream
 * timeout), and the CLI, crash and probe files spend their time in child processes anyway.
 */
const SHARED = ["engine", "merge", "orchestrator", "patch", "runtime", "schema"].map(
  (pkg) => `packages/${pkg}/test/**/*.test.ts`
)

export default defineConfig({
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: "isolated",
          include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts", "probes/**/*.test.ts"],
          exclude: [...SHARED, "**/node_modules/**"]
        }
      },
      { extends: true, test: { name: "shared", include: SHARED, isolate: false } }
    ],
    globalSetup: ["test/globalSetup.ts"],
    // Three files at a time even on a 2-core machine (vitest's default is one fewer than the
    // cores): most CLI, crash and probe tests wait on child processes, not the CPU (a run with
    // two used 1.4 of the 2 cores).
    maxWorkers: 3,
    sequence: { sequencer: SlowestFirst },
    // Hang guards, not speed bounds: the crash and probe tests run dozens of processes each, and
    // on a 2-core machine shared with other work (load 10+) one of them took over a minute.
    testTimeout: 180_000,
    hookTimeout: 180_000
  }
})
