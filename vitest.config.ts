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

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts", "probes/**/*.test.ts"],
    globalSetup: ["test/globalSetup.ts"],
    // Two files at a time even on a 2-core machine (vitest's default is one fewer than the
    // cores): most CLI, crash and probe tests wait on child processes, not the CPU.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000
  }
})
