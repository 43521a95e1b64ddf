/**
 * A child's own check on its join outcome: on record whatever the outcome, and the reason of a
 * child that exported nothing because its check did not pass (not the generic one).
 */
import type { ChildOutcome, ChildVerifyResult } from "@forkjoin/schema"
import { TaskId } from "@forkjoin/schema/Ids"
import { describe, expect, it } from "vitest"
import { withCheck } from "../src/internal/childCheck.ts"

const childId = TaskId.make("child")
const missing: ChildOutcome = { childId, status: "missing_changeset", reason: "the child exported no changeset (it did not finish cleanly)" }
const timedOut: ChildVerifyResult = { status: "timed_out", summary: "the child's check timed out after 50 ms and was ended", attempt: 3, output: ["slow"] }
const passed: ChildVerifyResult = { status: "passed", summary: "the child's check passed", attempt: 1, output: [] }

describe("withCheck", () => {
  it("names the check that did not pass as why a child has no changeset, with its summary and attempt", () => {
    const outcome = withCheck(missing, timedOut)
    expect(outcome.childVerify).toEqual(timedOut)
    expect(outcome.reason).toMatch(/^the child's own check failed after attempt 3, .*: the child's check timed out after 50 ms and was ended; /)
    expect(outcome.reason).not.toMatch(/did not finish cleanly/)
  })

  it("keeps the join's own reason when the child's status is not for want of a changeset", () => {
    const refused: ChildOutcome = { childId, status: "scope_violation", reason: "outside its writeScope" }
    expect(withCheck(refused, timedOut)).toEqual({ ...refused, childVerify: timedOut })
    expect(withCheck({ childId, status: "pending" }, timedOut)).toEqual({ childId, status: "pending", childVerify: timedOut })
  })

  it("records a passed check as it is and leaves an outcome without a check unchanged", () => {
    const applied: ChildOutcome = { childId, status: "applied" }
    expect(withCheck(applied, passed)).toEqual({ childId, status: "applied", childVerify: passed })
    expect(withCheck(missing, passed)).toEqual({ ...missing, childVerify: passed })
    expect(withCheck(missing, undefined)).toBe(missing)
  })
})
