/**
 * The turn aggregate: records (in commit order) → one net change per file, moves followed,
 * through the shared `NetChange` fold under its `follow` identity rule. The `turn` view pages
 * over the result.
 *
 * It owns the mapping between records and the fold only. It does not own reading records (the
 * views), their coverage, nor the fold itself (`@forkjoin/patch/NetChange`).
 */
import { NetChange } from "@forkjoin/patch"
import type { Exactness, PatchHistoryRecord, RecordId, Snapshot, TurnPathChange } from "@forkjoin/schema"

const RANK: Record<Exactness, number> = { exact: 0, partial: 1, uncertain: 2 }
const worst = (a: Exactness, b: Exactness): Exactness => (RANK[a] >= RANK[b] ? a : b)

/** Two snapshots name the same version when hash and mode agree. */
const sameVersion = (a: Snapshot, b: Snapshot): boolean => a.hash === b.hash && a.mode === b.mode

/**
 * Combines records (in commit order) into per-path net changes, following moves: a file
 * moved twice reports one move from its first to its last name; a file added then deleted
 * in the same records does not appear; content that ends where it started is omitted.
 * Verification records (`verification:` transactions) describe, they do not change: skipped.
 *
 * @category combinators
 * @since 0.1.0
 */
export const netChanges = (records: ReadonlyArray<PatchHistoryRecord>): Array<TurnPathChange> => {
  const exactness = new Map<RecordId, Exactness>()
  const steps: Array<NetChange.Step<Snapshot, RecordId>> = []
  for (const r of records) {
    if (r.transactionId.startsWith("verification:")) continue
    exactness.set(r.recordId, r.exactness)
    for (const c of r.changes) steps.push({ ...c, tag: r.recordId })
  }
  return NetChange.lineageChanges(NetChange.fold(steps, "follow"), sameVersion).map((c) => ({
    kind: c.kind,
    // The fold keeps the paths it was given: they are the records' RelativePaths.
    path: c.path,
    ...(c.moveFrom === undefined ? {} : { moveFrom: c.moveFrom }),
    ...(c.before === undefined ? {} : { before: c.before }),
    ...(c.after === undefined ? {} : { after: c.after }),
    exactness: c.tags.reduce<Exactness>((w, id) => worst(w, exactness.get(id) ?? "exact"), "exact"),
    records: c.tags
  }))
}
