/**
 * A child's own check (its task's `childVerify`) on its join outcome: the result goes on
 * record, and a child that exported nothing because its check did not pass says so, with the
 * check's summary, instead of the generic "did not finish cleanly". Pure.
 */
import type { ChildOutcome, ChildVerifyResult } from "@forkjoin/schema"

/** Why a child whose check did not pass has no changeset, and where to look next. */
export const checkFailedReason = (check: ChildVerifyResult): string =>
  `the child's own check failed after attempt ${check.attempt}, so it exported no changeset and nothing of it was applied: ` +
  `${check.summary}; its last output lines are in the outcome's childVerify and the child's childVerify.log`

/**
 * `outcome` with the child's check on record (unchanged when it ran none); a `missing_changeset`
 * after a check that did not pass takes that as its reason.
 */
export const withCheck = (outcome: ChildOutcome, check: ChildVerifyResult | undefined): ChildOutcome => {
  if (check === undefined) return outcome
  const failed = check.status !== "passed" && outcome.status === "missing_changeset"
  return { ...outcome, ...(failed ? { reason: checkFailedReason(check) } : {}), childVerify: check }
}
