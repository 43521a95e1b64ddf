/**
 * Gap detection (SPEC §4.5): compares a file on disk with the content history last recorded
 * for it and, when they differ and no open journal intent explains the difference (the file
 * was edited outside forkjoin), writes one `gap` record (`provenance: unknown`,
 * `exactness: partial`, an `unrecorded_change` warning) with the disk content as its blob.
 *
 * A view only looks (`findGap`, reported as an unrecorded change; views never write); a merge
 * records what it finds (`detectGap`); a write records the gap its own preimage shows, in its
 * commit's transaction (`recordGapsBeforeWrite`). Paths the default policy denies (`.git`,
 * `.forkjoin`) are never read, and a file is read only through the checked read
 * (`@forkjoin/patch/SafeRead`), never through a link swapped in.
 *
 * It owns reading the workspace for that comparison and writing gap records, through the
 * store's record-writing code (`internal/records.ts`). It does not own deciding when to look
 * nor showing gaps (the views).
 *
 * @since 0.1.0
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import { readWorkspaceFile } from "@forkjoin/patch/SafeRead"
import { snapshotOf } from "@forkjoin/patch/Snapshot"
import {
  type EnvironmentId,
  type FileChange,
  JournalIntent,
  type PatchHistoryRecord,
  RecordDraft,
  type RelativePath,
  type Snapshot,
  type UnrecordedChange
} from "@forkjoin/schema"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import type { StoreError } from "./HistoryStore.ts"
import {
  decodeRecordJsonRow,
  insertBlobs,
  insertRecord,
  prepareRecord,
  prepareRecordSync,
  type RecordRow,
  SQL as RECORD_SQL
} from "./internal/records.ts"
import { type Connection, Sqlite } from "./Sqlite.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * Where gaps are looked for: the environment's history and its workspace root (a real path).
 *
 * @category models
 * @since 0.1.0
 */
export interface GapScope {
  readonly environmentId: EnvironmentId
  readonly root: string
}

/**
 * One check: the thread and turn a discovered gap is attributed to, and the path to compare.
 *
 * @category models
 * @since 0.1.0
 */
export interface GapRequest {
  readonly caller: string
  readonly turnId: string
  readonly path: RelativePath
  /**
   * What the caller knows was at the path (e.g. a child's preimage), used when history has no
   * record of it yet; `absent` means no file.
   */
  readonly known?: Snapshot | "absent"
}

// -------------------------------------------------------------------------------------
// internals
// -------------------------------------------------------------------------------------

const SQL = {
  lastAt: "SELECT commit_ordinal FROM record_changes WHERE environment_id = ? AND path = ? " +
    "ORDER BY commit_ordinal DESC LIMIT 1",
  lastMovedOut: "SELECT commit_ordinal FROM record_changes WHERE environment_id = ? AND move_from = ? " +
    "AND move_from IS NOT NULL ORDER BY commit_ordinal DESC LIMIT 1",
  openIntents: "SELECT intent_id, intent_json FROM intents WHERE environment_id = ? AND status = 'open'"
} as const

/** The part of a journal intent gap detection reads: the paths it is about to change. */
const decodeIntentPaths = Schema.decodeUnknownResult(
  Schema.fromJsonString(Schema.Struct({ entries: JournalIntent.fields.entries }))
)

const decodeDraft = Schema.decodeUnknownSync(RecordDraft)

type Expected = { readonly ordinal: number; readonly state: Snapshot | "absent" | "unknown" }

/**
 * What history says is at `p` now: a snapshot, `absent`, or `unknown` (no after recorded).
 * `decoded` keeps records already decoded (a write of many paths shares their last records).
 */
const expectedAt = (
  c: Connection,
  env: EnvironmentId,
  p: string,
  decoded: Map<number, PatchHistoryRecord> = new Map()
): Expected | undefined => {
  const at = c.get<{ readonly commit_ordinal: number }>(SQL.lastAt, env, p)
  const out = c.get<{ readonly commit_ordinal: number }>(SQL.lastMovedOut, env, p)
  if (at === undefined && out === undefined) return undefined
  if (out !== undefined && (at === undefined || out.commit_ordinal > at.commit_ordinal)) {
    return { ordinal: out.commit_ordinal, state: "absent" }
  }
  const ordinal = at!.commit_ordinal
  let record = decoded.get(ordinal)
  if (record === undefined) {
    record = decodeRecordJsonRow("HistoryViews.gap", c.get<RecordRow>(RECORD_SQL.recordByOrdinal, env, ordinal)!)
    decoded.set(ordinal, record)
  }
  // A verification record only describes; fall back to what it verified only when it has an after.
  const change = record.changes.find((ch) => ch.path === p)!
  if (change.kind === "delete") return { ordinal, state: "absent" }
  return { ordinal, state: change.after ?? "unknown" }
}

/**
 * The paths open intents other than `except` may be about to change, or `"all"` when one
 * does not decode (the store only accepts valid ones): never record a gap an engine write in
 * flight may explain.
 */
const pathsInFlight = (c: Connection, env: EnvironmentId, except?: string): ReadonlySet<string> | "all" => {
  const paths = new Set<string>()
  for (const row of c.all<{ readonly intent_id: string; readonly intent_json: string }>(SQL.openIntents, env)) {
    if (row.intent_id === except) continue
    const intent = decodeIntentPaths(row.intent_json)
    if (Result.isFailure(intent)) return "all"
    for (const e of intent.success.entries) paths.add(e.path)
  }
  return paths
}

const intentTouches = (c: Connection, env: EnvironmentId, p: string): boolean => {
  const inFlight = pathsInFlight(c, env)
  return inFlight === "all" || inFlight.has(p)
}

/** The gap record of `p`: from what history recorded (`before`) to what is there (`after`). */
const gapDraft = (
  env: EnvironmentId,
  caller: string,
  turnId: string,
  p: string,
  before: Snapshot | undefined,
  after: Snapshot | undefined
): RecordDraft => {
  const change: FileChange = before === undefined
    ? { kind: "add", path: p as RelativePath, after: after! }
    : after === undefined
    ? { kind: "delete", path: p as RelativePath, before }
    : { kind: "replace", path: p as RelativePath, before, after }
  const id = randomUUID()
  return decodeDraft({
    recordId: `rec-gap-${id}`,
    threadId: caller,
    turnId,
    invocationId: `gap-${id}`,
    environmentId: env,
    transactionId: `gap:${id}`,
    authority: "unsupported",
    provenance: "unknown",
    exactness: "partial",
    outcome: "gap",
    changes: [change],
    directoryEffects: [],
    warnings: [{
      code: "unrecorded_change",
      message: `${p} differs from its last recorded content and no forkjoin intent explains it (edited outside forkjoin)`,
      path: p
    }],
    links: {}
  })
}

/** What a write says was at each path it changes just before it (its preimages), by path. */
const preimagesOf = (changes: ReadonlyArray<FileChange>): ReadonlyArray<readonly [string, Snapshot | "absent"]> =>
  changes.flatMap((ch): Array<readonly [string, Snapshot | "absent"]> => {
    if (ch.moveFrom !== undefined) {
      const source: Array<readonly [string, Snapshot | "absent"]> = ch.before === undefined ? [] : [[ch.moveFrom, ch.before]]
      return [...source, [ch.path, ch.overwritten ?? "absent"]]
    }
    if (ch.kind === "add") return [[ch.path, ch.overwritten ?? "absent"]]
    return ch.before === undefined ? [] : [[ch.path, ch.before]]
  })

const hashOfState = (s: Snapshot | "absent"): string | null => (s === "absent" ? null : s.hash)

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

/**
 * A difference between the disk and history's last content of one path that no open intent
 * explains: what history recorded (at `ordinal`, 0 when the caller's `known` stood in) and
 * what the disk holds.
 *
 * @category models
 * @since 0.1.0
 */
export interface FoundGap {
  readonly path: RelativePath
  readonly ordinal: number
  readonly recorded: Snapshot | "absent"
  readonly disk: { readonly bytes: Uint8Array; readonly mode: number; readonly hash: string } | "absent"
}

/**
 * The found gap as a view reports it (hashes only, never the content).
 *
 * @category constructors
 * @since 0.1.0
 */
export const unrecordedChangeOf = (gap: FoundGap): UnrecordedChange => ({
  path: gap.path,
  recordedHash: hashOfState(gap.recorded) as UnrecordedChange["recordedHash"],
  diskHash: (gap.disk === "absent" ? null : gap.disk.hash) as UnrecordedChange["diskHash"]
})

/**
 * Compares `request.path` on disk with its last recorded content, writing nothing: the
 * difference when they differ unexplained; none for a path history never saw (unless
 * `request.known` stands in), a denied path, an unreadable file, or a path an open intent
 * is about to change.
 *
 * @category constructors
 * @since 0.1.0
 */
export const findGap = (
  scope: GapScope,
  request: Pick<GapRequest, "path" | "known">
): Effect.Effect<FoundGap | undefined, StoreError, Sqlite> =>
  Effect.gen(function*() {
    const sql = yield* Sqlite
    const env = scope.environmentId
    const p = request.path
    const recorded = yield* sql.run("HistoryViews.findGap", (c) => ({ at: expectedAt(c, env, p), inFlight: intentTouches(c, env, p) }))
    // An engine write in flight may explain the difference.
    if (recorded.inFlight) return undefined
    // Ordinal 0: nothing recorded yet, the caller's knowledge stands in for history's.
    const first = recorded.at ?? (request.known === undefined ? undefined : { ordinal: 0, state: request.known })
    if (first === undefined || first.state === "unknown") return undefined
    const disk = readWorkspaceFile(scope.root, p)
    if (disk === "unreadable") return undefined
    const diskHash = disk === "absent" ? undefined : sha256(disk.bytes)
    const expectedHash = first.state === "absent" ? undefined : first.state.hash
    if (diskHash === expectedHash) return undefined
    return {
      path: p,
      ordinal: first.ordinal,
      recorded: first.state,
      disk: disk === "absent" ? "absent" : { bytes: disk.bytes, mode: disk.mode, hash: diskHash! }
    }
  })

/**
 * Compares `request.path` on disk with its last recorded content and records one gap when
 * they differ unexplained (see `findGap`); does nothing when another process recorded the
 * gap meanwhile.
 *
 * @category constructors
 * @since 0.1.0
 */
export const detectGap = (scope: GapScope, request: GapRequest): Effect.Effect<void, StoreError, Sqlite> =>
  Effect.gen(function*() {
    const operation = "HistoryViews.detectGap"
    const found = yield* findGap(scope, request)
    if (found === undefined) return
    const sql = yield* Sqlite
    const env = scope.environmentId
    const p = request.path
    const now = yield* Clock.currentTimeMillis
    const disk = found.disk
    const before = found.recorded === "absent" ? undefined : found.recorded
    const after = disk === "absent" ? undefined : snapshotOf(disk.bytes, disk.mode, disk.hash as Snapshot["hash"])
    const prepared = yield* prepareRecord(operation, gapDraft(env, request.caller, request.turnId, p, before, after), now)
    yield* sql.transaction(operation, (c) => {
      // Re-check under the write lock: another process may have recorded the gap meanwhile,
      // or an engine may have journaled a write that explains it.
      const again = expectedAt(c, env, p)
      if ((again?.ordinal ?? 0) !== found.ordinal || intentTouches(c, env, p)) return
      if (disk !== "absent") insertBlobs(c, [disk.bytes])
      insertRecord(c, prepared, null)
    })
  })

/**
 * Inside the commit transaction of the write `draft` (journaled as `intentId`): records, before
 * the write's own record, one gap for each path whose preimage (what the write found there)
 * differs from history's last content, unless another open intent explains it. Reads no
 * file: the preimages' contents are already in the write's journal. Throws the store's
 * `StoreError` for a gap record that does not validate.
 *
 * @category constructors
 * @since 0.1.0
 */
export const recordGapsBeforeWrite = (
  c: Connection,
  draft: RecordDraft,
  intentId: string,
  committedAtMillis: number
): void => {
  const env = draft.environmentId
  let inFlight: ReadonlySet<string> | "all" | undefined
  const decoded = new Map<number, PatchHistoryRecord>()
  for (const [p, preimage] of preimagesOf(draft.changes)) {
    const recorded = expectedAt(c, env, p, decoded)
    if (recorded === undefined || recorded.state === "unknown") continue
    if (hashOfState(recorded.state) === hashOfState(preimage)) continue
    inFlight ??= pathsInFlight(c, env, intentId)
    if (inFlight === "all" || inFlight.has(p)) continue
    const gap = gapDraft(
      env,
      draft.threadId,
      draft.turnId,
      p,
      recorded.state === "absent" ? undefined : recorded.state,
      preimage === "absent" ? undefined : preimage
    )
    insertRecord(c, prepareRecordSync("HistoryStore.commitIntent", gap, committedAtMillis), null)
  }
}
