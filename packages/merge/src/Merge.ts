/**
 * Conflicts as values (jj's `Merge<A>`): a merge is alternating adds and removes, with
 * `adds.length === removes.length + 1`. A resolved value is one add and no removes; a
 * three-way conflict is `ours + theirs - base`. Pure; only I/O or broken invariants use an
 * error channel elsewhere.
 *
 * @since 0.1.0
 */

/**
 * A possibly-conflicted value.
 *
 * @category models
 * @since 0.1.0
 */
export interface Merge<A> {
  readonly adds: ReadonlyArray<A>
  readonly removes: ReadonlyArray<A>
}

/**
 * A settled value.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolved = <A>(a: A): Merge<A> => ({ adds: [a], removes: [] })

/**
 * The three-way merge `ours + theirs - base`, not yet simplified.
 *
 * @category constructors
 * @since 0.1.0
 */
export const threeWay = <A>(base: A, ours: A, theirs: A): Merge<A> => ({ adds: [ours, theirs], removes: [base] })

/**
 * True when the merge holds one value.
 *
 * @category predicates
 * @since 0.1.0
 */
export const isResolved = <A>(m: Merge<A>): boolean => m.removes.length === 0

/**
 * Cancels each remove against an equal add (`equals`), so `x + y - x` becomes `y` and
 * `x + x - b` stays a conflict unless the caller's rule converges it. Order of the remaining
 * terms is kept.
 *
 * @category combinators
 * @since 0.1.0
 */
export const simplify = <A>(m: Merge<A>, equals: (a: A, b: A) => boolean): Merge<A> => {
  const adds = [...m.adds]
  const removes: Array<A> = []
  for (const r of m.removes) {
    const i = adds.findIndex((a) => equals(a, r))
    if (i >= 0) adds.splice(i, 1)
    else removes.push(r)
  }
  return { adds, removes }
}

/**
 * The single value of a merge whose adds all agree (identical changes converge), else
 * `undefined`.
 *
 * @category combinators
 * @since 0.1.0
 */
export const resolveTrivial = <A>(m: Merge<A>, equals: (a: A, b: A) => boolean): A | undefined => {
  const s = simplify(m, equals)
  if (s.removes.length === 0) return s.adds[0]
  const first = s.adds[0]
  // Every add equal and every remove equal: both sides made the same change.
  if (first !== undefined && s.adds.every((a) => equals(a, first)) && s.removes.length > 0) return first
  return undefined
}
