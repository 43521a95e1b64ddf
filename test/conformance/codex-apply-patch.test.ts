/**
 * Upstream Codex apply_patch conformance (SPEC §2): every scenario of
 * `conformance/codex-apply-patch/` through the pure core and through the real CLI.
 * Profile `codex` must reproduce `expected/` byte for byte, except 015, where forkjoin is
 * atomic and the workspace must stay exactly `input/`. 023/024 run in line-ending-preserving mode.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import * as Result from "effect/Result"
import { compilePatch, type FileState } from "@forkjoin/patch"
import { withSharedFixture } from "../support/fixtures.ts"
import { copyTree, filesOnly, projectRoot, readTree, sharedDir } from "../support/tree.ts"

const fixtures = sharedDir("FORKJOIN_CONFORMANCE_DIR", "conformance/codex-apply-patch")

interface Scenario {
  readonly name: string
  readonly expect_success: boolean
  readonly requires_mode: string
}

const scenarios: ReadonlyArray<Scenario> = fixtures.present
  ? JSON.parse(fs.readFileSync(path.join(fixtures.dir, "MANIFEST.json"), "utf8")).scenarios
  : []

/** 015: upstream leaves the partial Add behind; atomic forkjoin must leave `input/` untouched. */
const ATOMIC_DIVERGENCE = new Set(["015_failure_after_partial_success_leaves_changes"])

const expectedTree = (s: Scenario) =>
  filesOnly(readTree(path.join(fixtures.dir, s.name, ATOMIC_DIVERGENCE.has(s.name) ? "input" : "expected")))

/** Applies a plan to an in-memory tree: what the engine does to disk. */
const applyInMemory = (tree: Map<string, Uint8Array>, text: string, preserve: boolean) => {
  const read = (p: string): FileState => {
    const b = tree.get(p)
    if (b !== undefined) return { _tag: "File", bytes: b }
    if (tree.has(`${p}/`)) return { _tag: "Directory" }
    return { _tag: "Missing" }
  }
  const plan = compilePatch(text, read, { profile: "codex", allowOverwrite: true, preserveLineEndings: preserve })
  if (Result.isFailure(plan)) return { ok: false as const, error: plan.failure, tree }
  const next = new Map(tree)
  for (const f of plan.success.files) {
    if (f.moveFrom !== undefined) next.delete(f.moveFrom)
    if (f.after === undefined) next.delete(f.path)
    else next.set(f.path, f.after)
  }
  return { ok: true as const, tree: next }
}

describe("codex apply_patch conformance", () => withSharedFixture(fixtures, "FORKJOIN_CONFORMANCE_DIR", () => {
  it("finds the 25 upstream scenarios", () => {
    expect(scenarios.length).toBe(25)
  })

  describe.each(scenarios.map((s) => [s.name, s] as const))("%s", (_name, s) => {
    const dir = path.join(fixtures.dir, s.name)
    const patch = fs.readFileSync(path.join(dir, "patch.txt"), "utf8")
    const preserve = s.requires_mode === "preserve_line_endings"

    it("pure core reproduces expected/ (profile codex)", () => {
      const r = applyInMemory(readTree(path.join(dir, "input")), patch, preserve)
      expect(r.ok).toBe(s.expect_success)
      expect(filesOnly(r.tree)).toEqual(expectedTree(s))
    })

    it("forkjoin apply reproduces expected/ on disk (profile codex)", () => {
      const ws = fs.mkdtempSync(path.join(os.tmpdir(), "fj-conf-"))
      try {
        copyTree(path.join(dir, "input"), ws)
        const args = [path.join(projectRoot, "packages/cli/bin/forkjoin.mjs"), "apply", "-", "--workspace", ws, "--profile", "codex", "--json"]
        if (preserve) args.push("--preserve-line-endings")
        const run = spawnSync(process.execPath, args, { input: patch, encoding: "utf8" })
        expect(run.status, run.stderr).toBe(s.expect_success ? 0 : 1)
        const out = JSON.parse(run.stdout)
        expect(out.ok).toBe(s.expect_success)
        const actual = filesOnly(readTree(ws))
        actual.delete(".forkjoin/history.db")
        expect(new Map([...actual].filter(([p]) => !p.startsWith(".forkjoin/")))).toEqual(expectedTree(s))
      } finally {
        fs.rmSync(ws, { recursive: true, force: true })
      }
    })
  })
}))
