/**
 * One classification of child outcome statuses serves the join, the command line and the page:
 * every status has exactly one class, the settled ones are those that need nothing more
 * (landed, unchanged, discarded), and a discarded child is settled but not landed.
 */
import { describe, expect, it } from "vitest"
import { ChildOutcomeClass, ChildOutcomeStatus, classOf, isSettled, statusesOf } from "../src/MergeRun.ts"

describe("child outcome classes", () => {
  it("every status is in exactly one class", () => {
    const all = ChildOutcomeClass.literals.flatMap((c) => statusesOf(c))
    expect([...all].sort()).toEqual([...ChildOutcomeStatus.literals].sort())
    for (const status of ChildOutcomeStatus.literals) expect(statusesOf(classOf(status))).toContain(status)
  })

  it("settled means landed, unchanged or discarded; a conflict, a drift or a refusal is not", () => {
    expect(ChildOutcomeStatus.literals.filter(isSettled)).toEqual(["applied", "auto_merged", "noop", "discarded", "resolved"])
    expect(statusesOf("landed")).toEqual(["applied", "auto_merged", "resolved"])
    expect(classOf("discarded")).toBe("dropped")
    expect(statusesOf("held")).toEqual(["pending", "baseline_drift", "baseline_unverifiable", "conflicted_unresolved", "missing_changeset"])
  })
})
