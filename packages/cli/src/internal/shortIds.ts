/**
 * Short ids, as git abbreviates hashes: in text output the UUID of a run, transaction,
 * conflict, record, thread or agent session id (its first one: a path or task id after it stays as it is) is
 * cut to its shortest prefix (at least `MIN_SHOWN` characters) that no other UUID of the
 * workspace's history shares, so `subagent_merge:run-<uuid>/docs` reads
 * `subagent_merge:run-a51f3e80/docs`. Commands taking an id accept that form (any prefix of at
 * least `MIN_TYPED` characters of the UUID, the rest of the id as it is) and expand it to the one id it names; a prefix
 * naming several is refused with `ambiguous_id` and the candidates. `--json` keeps full ids.
 *
 * Reads only: the ids come from the history database through the `Sqlite` service (agent
 * sessions, which live in their folders, are given by the caller: `ofAgents`).
 */
import { partitionPoint } from "@forkjoin/patch/Sorted"
import type { StoreError } from "@forkjoin/history/HistoryStore"
import { Sqlite } from "@forkjoin/history/Sqlite"
import type { EnvironmentId } from "@forkjoin/schema/Ids"
import * as Effect from "effect/Effect"
import { HistoryCommandError, toHistoryCommandError } from "./errors.ts"

/** The fewest characters of a UUID text output shows: its first group, as in `run-a51f3e80`. */
export const MIN_SHOWN = 8

/** The fewest characters of a UUID an id typed on the command line may keep (git's minimum). */
export const MIN_TYPED = 4

/** Which ids a command argument names. */
export type IdKind = "run" | "transaction" | "conflict" | "record" | "thread" | "agent"

const KIND_NAMES: Record<IdKind, string> = {
  run: "runs",
  transaction: "transactions",
  conflict: "conflicts",
  record: "records",
  thread: "threads",
  agent: "agent sessions"
}

/**
 * The ids of a workspace's history, by kind, and each record's transaction.
 *
 * @category models
 * @since 0.1.0
 */
export interface IdSets {
  readonly run: ReadonlyArray<string>
  readonly transaction: ReadonlyArray<string>
  readonly conflict: ReadonlyArray<string>
  readonly record: ReadonlyArray<string>
  /** The threads with records, and each run's own thread (its run id). */
  readonly thread: ReadonlyArray<string>
  /** Agent sessions (`agent-<uuid>`, `mcp-<uuid>`): kept in their folders, not in the history; see `ofAgents`. */
  readonly agent?: ReadonlyArray<string> | undefined
  /** Record id to its transaction id. */
  readonly transactionOf: ReadonlyMap<string, string>
}

/**
 * What an id typed on the command line names among the ids of its kind.
 *
 * @category models
 * @since 0.1.0
 */
export type Match =
  | { readonly _tag: "Unique"; readonly id: string }
  | { readonly _tag: "Ambiguous"; readonly candidates: ReadonlyArray<string> }
  | { readonly _tag: "None" }

/**
 * Abbreviates ids for text output and expands typed abbreviations (see the module doc).
 *
 * @category models
 * @since 0.1.0
 */
export interface ShortIds {
  /** `id` with its UUID cut to its shortest unique prefix. */
  readonly short: (id: string) => string
  /** `text` (a message) with every UUID of a known id in it cut like `short` cuts it. */
  readonly shortIn: (text: string) => string
  /** The one id of `kind` that `input` is or abbreviates, if any. */
  readonly match: (kind: IdKind, input: string) => Match
  readonly sets: IdSets
}

// An id's own UUID is its first: a later one belongs to a task id or a path and stays whole.
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/

/** The UUID of `id`, if it has one. */
const uuidOf = (id: string): string | undefined => UUID.exec(id)?.[0]

/**
 * True when `input` is `id` with its UUID cut to a prefix of at least `MIN_TYPED` characters,
 * the text before and after it unchanged (linear in the lengths: nothing is tried twice).
 */
const abbreviates = (input: string, id: string): boolean => {
  const m = UUID.exec(id)
  if (m === null) return false
  const head = id.slice(0, m.index)
  const tail = id.slice(m.index + m[0].length)
  const cut = input.length - head.length - tail.length
  return cut >= MIN_TYPED && cut <= m[0].length && input.startsWith(head) && input.endsWith(tail) &&
    m[0].startsWith(input.slice(head.length, head.length + cut))
}

const commonPrefix = (a: string | undefined, b: string): number => {
  if (a === undefined) return 0
  let n = 0
  while (n < a.length && n < b.length && a[n] === b[n]) n++
  return n
}


/**
 * The short ids of `sets` (pure): a UUID is cut after the longest prefix it shares with any
 * other UUID of any kind, plus one character, and never below `MIN_SHOWN`; one UUID therefore
 * reads the same in every id that holds it (a run, its merges, its conflicts).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (sets: IdSets): ShortIds => {
  const all = new Set<string>()
  for (const ids of [sets.run, sets.transaction, sets.conflict, sets.record, sets.thread, sets.agent ?? []]) {
    for (const id of ids) {
      const u = uuidOf(id)
      if (u !== undefined) all.add(u)
    }
  }
  const sorted = [...all].sort()
  const lengths = new Map<string, number>()
  const lengthOf = (u: string): number => {
    const known = lengths.get(u)
    if (known !== undefined) return known
    const at = partitionPoint(sorted, (x) => x < u)
    const next = sorted[at] === u ? sorted[at + 1] : sorted[at]
    const shared = Math.max(commonPrefix(sorted[at - 1], u), next === undefined ? 0 : commonPrefix(next, u))
    const length = Math.min(u.length, Math.max(MIN_SHOWN, shared + 1))
    lengths.set(u, length)
    return length
  }
  const short = (id: string): string => id.replace(UUID, (u) => u.slice(0, lengthOf(u)))
  const shortIn = (text: string): string => text.replace(new RegExp(UUID.source, "g"), (u) => (all.has(u) ? u.slice(0, lengthOf(u)) : u))
  const match = (kind: IdKind, input: string): Match => {
    const ids = sets[kind] ?? []
    if (ids.includes(input)) return { _tag: "Unique", id: input }
    const candidates = ids.filter((id) => abbreviates(input, id))
    return candidates.length === 0
      ? { _tag: "None" }
      : candidates.length === 1
      ? { _tag: "Unique", id: candidates[0]! }
      : { _tag: "Ambiguous", candidates }
  }
  return { short, shortIn, match, sets }
}

// No ids: nothing is cut, nothing matches.
const none: IdSets = { run: [], transaction: [], conflict: [], record: [], thread: [], transactionOf: new Map() }

/**
 * The short ids of the agent sessions `agentIds` alone: each is cut to the shortest prefix no
 * other session shares (a typed session id names a session, so only sessions can collide with it).
 *
 * @category constructors
 * @since 0.1.0
 */
export const ofAgents = (agentIds: ReadonlyArray<string>): ShortIds => make({ ...none, agent: agentIds })

/**
 * Leaves every id whole and matches nothing: for text output when the history cannot be read.
 *
 * @category constructors
 * @since 0.1.0
 */
export const fullIds: ShortIds = {
  ...make(none),
  short: (id) => id,
  shortIn: (text) => text
}

const TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('records', 'merge_runs', 'merge_conflicts')"
// `instr(x, '')` is 1: the empty head reads every id.
const RUNS = "SELECT run_id AS id FROM merge_runs WHERE environment_id = ? AND instr(run_id, ?) > 0"
const CONFLICTS = "SELECT conflict_id AS id FROM merge_conflicts WHERE environment_id = ? AND instr(conflict_id, ?) > 0"
const RECORDS = "SELECT record_id, transaction_id, thread_id FROM records " +
  "WHERE environment_id = ? AND (instr(record_id, ?) > 0 OR instr(transaction_id, ?) > 0 OR instr(thread_id, ?) > 0)"

type RecordIds = { readonly record_id: string; readonly transaction_id: string; readonly thread_id: string }

/** The ids of the environment's history that hold one of `heads` (a table that does not exist yet holds none). */
const read = (operation: string, environmentId: EnvironmentId, heads: ReadonlyArray<string>): Effect.Effect<ShortIds, StoreError, Sqlite> =>
  heads.length === 0 ? Effect.succeed(make(none)) : Effect.flatMap(Sqlite, (sql) =>
    sql.run(operation, (c) => {
      const tables = new Set(c.all<{ readonly name: string }>(TABLES).map((t) => t.name))
      const ids = (query: string, table: string) =>
        tables.has(table) ? [...new Set(heads.flatMap((h) => c.all<{ readonly id: string }>(query, environmentId, h).map((r) => r.id)))] : []
      const records = tables.has("records") ? heads.flatMap((h) => c.all<RecordIds>(RECORDS, environmentId, h, h, h)) : []
      const runs = ids(RUNS, "merge_runs")
      return make({
        run: runs,
        thread: [...new Set([...runs, ...records.map((r) => r.thread_id)])],
        conflict: ids(CONFLICTS, "merge_conflicts"),
        transaction: [...new Set(records.map((r) => r.transaction_id))],
        record: [...new Set(records.map((r) => r.record_id))],
        transactionOf: new Map(records.map((r) => [r.record_id, r.transaction_id]))
      })
    }))

/**
 * The ids of environment `environmentId`'s history.
 *
 * @category constructors
 * @since 0.1.0
 */
export const load = (environmentId: EnvironmentId): Effect.Effect<ShortIds, StoreError, Sqlite> => read("ShortIds.load", environmentId, [""])

/**
 * Like `load`, but only the ids whose UUIDs could share a shown prefix with a UUID in one of
 * `shown` (ids or messages; the ids read hold its first `MIN_SHOWN` characters): enough for
 * `short` and `shortIn` to cut every UUID of `shown` exactly as `load` would, without reading
 * the whole history. Nothing is read when `shown` holds no UUID.
 *
 * @category constructors
 * @since 0.1.0
 */
export const loadNear = (environmentId: EnvironmentId, shown: Iterable<string>): Effect.Effect<ShortIds, StoreError, Sqlite> => {
  const heads = new Set<string>()
  for (const text of shown) for (const [u] of text.matchAll(new RegExp(UUID.source, "g"))) heads.add(u.slice(0, MIN_SHOWN))
  return read("ShortIds.loadNear", environmentId, [...heads])
}

/**
 * `loadNear` for one id (`forkjoin apply` prints one).
 *
 * @category constructors
 * @since 0.1.0
 */
export const loadAround = (environmentId: EnvironmentId, shown: string): Effect.Effect<ShortIds, StoreError, Sqlite> => loadNear(environmentId, [shown])

/**
 * The short ids for text output: of the whole history, or with `shown` only those near the ids
 * and messages it holds (`loadNear`); when the history cannot be read, ids are shown whole.
 *
 * @category constructors
 * @since 0.1.0
 */
export const loadForDisplay = (environmentId: EnvironmentId, shown?: Iterable<string>): Effect.Effect<ShortIds, never, Sqlite> =>
  Effect.orElseSucceed(shown === undefined ? load(environmentId) : loadNear(environmentId, shown), () => fullIds)

/**
 * The full id of `kind` that `input` names: itself when it names none (the command then says
 * it was not found), the one it abbreviates, or `ambiguous_id` listing the candidates.
 * `label` names the argument in the message (`TRANSACTION_ID`, `--run`).
 *
 * @category combinators
 * @since 0.1.0
 */
export const expand = (ids: ShortIds, kind: IdKind, input: string, label: string): Effect.Effect<string, HistoryCommandError> => {
  const m = ids.match(kind, input)
  if (m._tag === "None") return Effect.succeed(input)
  if (m._tag === "Unique") return Effect.succeed(m.id)
  const shown = m.candidates.slice(0, 10)
  return Effect.fail(
    new HistoryCommandError({
      code: "ambiguous_id",
      message: `${label} '${input}' matches ${m.candidates.length} ${KIND_NAMES[kind]}: ${shown.join(", ")}` +
        `${m.candidates.length > shown.length ? `, … and ${m.candidates.length - shown.length} more` : ""}; ` +
        "give more characters of the id (text output shows each id's shortest unique form) or the full id"
    })
  )
}

/**
 * `expand` after loading the ids (a history that cannot be read is `store_failed` or
 * `history_unavailable`).
 *
 * @category combinators
 * @since 0.1.0
 */
export const expandIn = (environmentId: EnvironmentId, kind: IdKind, input: string, label: string): Effect.Effect<string, HistoryCommandError, Sqlite> =>
  load(environmentId).pipe(
    Effect.mapError(toHistoryCommandError("read")),
    Effect.flatMap((ids) => expand(ids, kind, input, label))
  )
