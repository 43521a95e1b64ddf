/**
 * Coverage: how certain the records behind a view response are. Pure; whether an aggregate
 * is verified is the caller's lookup.
 */
import type { Coverage, PatchHistoryRecord } from "@forkjoin/schema"

/**
 * Counts the certainty labels of some records: exactness, gaps, provider aggregates and
 * how many of those have an exact verification record.
 *
 * @category combinators
 * @since 0.1.0
 */
export const coverageOf = (
  records: ReadonlyArray<PatchHistoryRecord>,
  isVerified: (record: PatchHistoryRecord) => boolean
): Coverage => {
  const c = { records: 0, exact: 0, partial: 0, uncertain: 0, gaps: 0, providerAggregates: 0, verifiedAggregates: 0 }
  for (const r of records) {
    c.records++
    c[r.exactness]++
    if (r.outcome === "gap") c.gaps++
    if (r.provenance === "provider_aggregate") {
      c.providerAggregates++
      if (isVerified(r)) c.verifiedAggregates++
    }
  }
  return c
}
