/**
 * Binary search over a sorted array: the one partition point the CLI's short ids and the
 * gateway's per-token numbering both need.
 *
 * @since 0.1.0
 */

/**
 * The first index of `sorted` whose element fails `before` (everything earlier passes it), found
 * by binary search; `sorted` must be partitioned by `before` (all passing elements first).
 *
 * @category combinators
 * @since 0.1.0
 */
export const partitionPoint = <A>(sorted: ReadonlyArray<A>, before: (a: A) => boolean): number => {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (before(sorted[mid]!)) lo = mid + 1
    else hi = mid
  }
  return lo
}
