/**
 * The request-path mapper shared by the views and provider ingestion, against the mapper the
 * views had before it (copied below as the oracle): the same answer for every input, except
 * exactly where the `..` rule was corrected.
 */
import { normalizePath } from "@forkjoin/patch/RelativePath"
import { RelativePath } from "@forkjoin/schema"
import { assert, describe, it } from "@effect/vitest"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import fc from "fast-check"
import * as path from "node:path"
import { type PathRefusal, workspacePathOf } from "../src/internal/requestPath.ts"

/** The views' mapper before the shared one (ProviderAggregates' made the same decisions). */
const oldMapper = (root: string | undefined, raw: unknown): { readonly path: string } | { readonly refused: PathRefusal } => {
  let p = raw
  if (typeof p !== "string" || p.length === 0) return { refused: "empty" }
  if (path.isAbsolute(p) || p.startsWith("/")) {
    if (root === undefined) return { refused: "absolute_without_root" }
    const rel = path.relative(root, path.resolve(p))
    if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) return { refused: "outside_workspace" }
    p = rel.split(path.sep).join("/")
  }
  if ((p as string).split("/").includes("..")) return { refused: "escaping" }
  if (Schema.decodeUnknownExit(RelativePath)(p)._tag === "Failure") return { refused: "not_normalized" }
  return { path: p as string }
}

const ROOT = "/srv/ws"

const segment = fc.constantFrom("a", "b", "c.txt", "..", ".", "", "..foo", "x\\y", " s", "\u0001", "\u0085", "C:")
const relative = fc.array(segment, { minLength: 0, maxLength: 6 }).map((s) => s.join("/"))
const input = fc.oneof(
  relative,
  relative.map((r) => `${ROOT}/${r}`),
  relative.map((r) => `/srv/${r}`),
  relative.map((r) => `/${r}`)
)

/** The workspace-relative form an input reaches the `..` rule with (absolute ones mapped), if any. */
const reachedRelative = (root: string | undefined, raw: string): string | undefined => {
  if (!(path.isAbsolute(raw) || raw.startsWith("/"))) return raw
  if (root === undefined) return undefined
  const rel = path.relative(root, path.resolve(raw))
  return rel === "" || path.isAbsolute(rel) || rel === ".." || rel.startsWith("../") ? undefined : rel
}

const plain = (r: Result.Result<RelativePath, PathRefusal>) =>
  Result.isSuccess(r) ? { path: r.success } : { refused: r.failure }

describe("workspacePathOf", () => {
  it("answers as the old mapper did, except for a non-escaping '..' (now popped)", () => {
    let popped = 0
    fc.assert(
      fc.property(fc.constantFrom(ROOT, undefined), input, (root, raw) => {
        const before = oldMapper(root, raw)
        const now = workspacePathOf(root, raw)
        const rel = reachedRelative(root, raw)
        if (rel !== undefined && rel.split("/").includes("..")) {
          const normalized = normalizePath(rel)
          if (Result.isSuccess(normalized)) {
            // The corrected rule: the old mapper refused every '..'; now it pops.
            popped++
            assert.deepStrictEqual(before, { refused: "escaping" })
            assert.deepStrictEqual(now, Result.succeed(normalized.success))
            return
          }
          if (normalized.failure !== "escaping_path") {
            // A '..' that stays inside but leaves nothing valid (`a/..`, `C:/../x`): still
            // refused, now for what it names rather than for its '..'.
            assert.deepStrictEqual(before, { refused: "escaping" })
            assert.deepStrictEqual(now, Result.fail("not_normalized"))
            return
          }
        }
        if (rel !== undefined && rel !== raw && rel.startsWith("..") && !rel.split("/").includes("..")) {
          // An absolute path to a file named `..x` at the root: the old prefix test took it
          // for a way out; `relativeUnder` knows it is inside.
          // It now gets the rule every other relative path gets.
          assert.deepStrictEqual(before, { refused: "outside_workspace" })
          assert.deepStrictEqual(plain(now), oldMapper(root, rel))
          return
        }
        assert.deepStrictEqual(plain(now), before, JSON.stringify(raw))
      }),
      { numRuns: 3000 }
    )
    assert.isAbove(popped, 0)
  })

  it("pops '..', refuses one that escapes, and keeps refusing paths not in stored form", () => {
    assert.deepStrictEqual(workspacePathOf(ROOT, "a/../b.txt"), Result.succeed("b.txt" as RelativePath))
    assert.deepStrictEqual(workspacePathOf(ROOT, `${ROOT}/a/../b.txt`), Result.succeed("b.txt" as RelativePath))
    assert.deepStrictEqual(workspacePathOf(ROOT, "a/../../x"), Result.fail("escaping"))
    assert.deepStrictEqual(workspacePathOf(ROOT, "../ws/x"), Result.fail("escaping"))
    assert.deepStrictEqual(workspacePathOf(ROOT, "a//b"), Result.fail("not_normalized"))
    assert.deepStrictEqual(workspacePathOf(ROOT, "./a"), Result.fail("not_normalized"))
    assert.deepStrictEqual(workspacePathOf(ROOT, ""), Result.fail("empty"))
    assert.deepStrictEqual(workspacePathOf(ROOT, ROOT), Result.fail("outside_workspace"))
    assert.deepStrictEqual(workspacePathOf(ROOT, "/srv/ws2/x"), Result.fail("outside_workspace"))
    assert.deepStrictEqual(workspacePathOf(undefined, "/srv/ws/x"), Result.fail("absolute_without_root"))
  })
})
