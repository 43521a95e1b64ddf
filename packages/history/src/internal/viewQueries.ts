/**
 * The SQL the history views read with (constant strings: each is prepared once per
 * connection). Writes, and the reads that decide them (gap detection), live with the code
 * that writes records (`records.ts`, `Gaps.ts`); snapshot contents are read through
 * `SnapshotStore`, never by SQL here.
 */

/** The views' statements. */
export const SQL = {
  scope: "WITH RECURSIVE sub(t) AS (SELECT ? UNION SELECT th.thread_id FROM threads th JOIN sub ON th.parent_thread_id = sub.t) " +
    "SELECT t FROM sub",
  everyThread: "SELECT DISTINCT thread_id AS t FROM records WHERE environment_id = ? UNION SELECT thread_id AS t FROM threads",
  timelineAll: "SELECT record_id, commit_ordinal, record_json FROM records " +
    "WHERE environment_id = ? AND commit_ordinal > ? ORDER BY commit_ordinal LIMIT ?",
  // One row per thread in scope after the cursor's thread id: its parent and its records here.
  threads: "SELECT s.value AS thread_id, th.parent_thread_id AS parent, COUNT(r.record_id) AS n, " +
    "MIN(r.committed_at) AS first_at, MAX(r.committed_at) AS last_at FROM json_each(?) s " +
    "LEFT JOIN threads th ON th.thread_id = s.value " +
    "LEFT JOIN records r ON r.environment_id = ? AND r.thread_id = s.value " +
    "WHERE s.value > ? GROUP BY s.value ORDER BY s.value LIMIT ?",
  recordAt: "SELECT thread_id, committed_at FROM records WHERE environment_id = ? AND commit_ordinal = ?",
  timelineThread: "SELECT record_id, commit_ordinal, record_json FROM records " +
    "WHERE environment_id = ? AND thread_id = ? AND commit_ordinal > ? ORDER BY commit_ordinal LIMIT ?",
  timelineThreads: "SELECT record_id, commit_ordinal, record_json FROM records " +
    "WHERE environment_id = ? AND thread_id IN (SELECT value FROM json_each(?)) AND commit_ordinal > ? " +
    "ORDER BY commit_ordinal LIMIT ?",
  timelineTurn: "SELECT record_id, commit_ordinal, record_json FROM records " +
    "WHERE environment_id = ? AND turn_id = ? AND thread_id IN (SELECT value FROM json_each(?)) AND commit_ordinal > ? " +
    "ORDER BY commit_ordinal LIMIT ?",
  turnRecords: "SELECT record_id, commit_ordinal, record_json FROM records " +
    "WHERE environment_id = ? AND turn_id = ? AND thread_id IN (SELECT value FROM json_each(?)) AND commit_ordinal <= ? " +
    "ORDER BY commit_ordinal",
  maxOrdinal: "SELECT COALESCE(MAX(commit_ordinal), 0) AS o FROM records WHERE environment_id = ?",
  recordById: "SELECT record_id, commit_ordinal, record_json, environment_id, thread_id FROM records WHERE record_id = ?",
  verified: "SELECT 1 AS v FROM records WHERE verifies = ? AND exactness = 'exact' LIMIT 1",
  providerEvent: "SELECT format, payload FROM provider_events WHERE record_id = ?",
  // INDEXED BY: the planner otherwise walks every change of the path through the primary key
  // (50,000 rows for a hot file) to find its few moves.
  movesIn: "SELECT commit_ordinal, move_from FROM record_changes INDEXED BY record_changes_moved_in " +
    "WHERE environment_id = ? AND path = ? " +
    "AND move_from IS NOT NULL AND commit_ordinal > ? AND commit_ordinal <= ? ORDER BY commit_ordinal",
  movesOut: "SELECT commit_ordinal, path FROM record_changes WHERE environment_id = ? AND move_from = ? " +
    "AND commit_ordinal > ? AND commit_ordinal <= ? ORDER BY commit_ordinal",
  segmentRows: "SELECT commit_ordinal, path FROM record_changes WHERE environment_id = ? AND path = ? " +
    "AND commit_ordinal > ? AND commit_ordinal <= ? AND thread_id IN (SELECT value FROM json_each(?)) " +
    "ORDER BY commit_ordinal LIMIT ?"
} as const
