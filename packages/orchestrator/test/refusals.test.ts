/**
 * Which refused edits keep a child out of the join: the child's steps as the runtime lists
 * them (`Children.refusalsOf`), then the join's rule (`scope_violation` only for its scope or
 * policy; a stale file it retried past stays on record only).
 */
import { refused, ok } from "@forkjoin/runtime/Action"
import { refusalsOf } from "@forkjoin/runtime/Children"
import { TaskId } from "@forkjoin/schema/Ids"
import { describe, expect, it } from "vitest"
import { scopeViolation, withRefusals } from "../src/internal/refusals.ts"

const patch = { apply_patch: { patch: "*** Begin Patch\n*** Update File: src/a.ts\n@@\n-a\n+A\n*** End Patch" } }
const id = TaskId.make("child")

describe("refused edits", () => {
  it("lists refused apply_patch steps per path with their step, not refused reads", () => {
    const steps = [
      { action: { read_file: { path: ".git/config" } }, observation: refused("path_denied_by_policy", "no", { paths: [".git/config"] }) },
      { action: patch, observation: refused("stale_file", "changed", { paths: ["src/a.ts"] }) },
      { action: patch, observation: ok("staged") },
      { action: patch, observation: refused("write_scope_violation", "outside", { violatingPaths: ["README.md", "docs/x.md"], writeScope: ["src"] }) },
      { action: { apply_patch: { patch: 3 } }, observation: refused("invalid_action", "bad", { path: "$.apply_patch.patch" }) }
    ]
    expect(refusalsOf(steps)).toEqual([
      { step: 2, tool: "apply_patch", path: "src/a.ts", code: "stale_file" },
      { step: 4, tool: "apply_patch", path: "README.md", code: "write_scope_violation" },
      { step: 4, tool: "apply_patch", path: "docs/x.md", code: "write_scope_violation" },
      // A decoding problem's `path` is a JSON path, not a file.
      { step: 5, tool: "apply_patch", code: "invalid_action" }
    ])
  })

  it("a stale file the child retried past does not keep it out; a refusal for its scope or policy does", () => {
    const stale = [{ step: 2, tool: "apply_patch", path: "src/a.ts", code: "stale_file" }]
    expect(scopeViolation(id, stale)).toBeUndefined()
    expect(withRefusals({ childId: id, status: "applied" }, stale)).toEqual({ childId: id, status: "applied", refusals: stale })
    expect(withRefusals({ childId: id, status: "noop" }, [])).toEqual({ childId: id, status: "noop" })
    for (const code of ["write_scope_violation", "path_outside_roots", "path_denied_by_policy", "path_invalid"]) {
      const refusals = [...stale, { step: 3, tool: "apply_patch", path: "../x", code }]
      expect(scopeViolation(id, refusals)).toMatchObject({ childId: id, status: "scope_violation", refusals })
    }
  })
})
