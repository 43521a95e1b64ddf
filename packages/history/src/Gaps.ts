/**
 * Gap detection (SPEC §4.5): compares a file on disk with the content history last recorded
 * for it and, when they differ and no open journal intent explains the difference (the file
 * was edited outside forkjoin), writes one `gap` record (`provenance: unknown`,
 * `exactness: partial`, an `unrecorded_change` warning) with the disk content as its blob.
 *
 * It owns reading the workspace for that comparison and writing gap records, through the
 * store's record-writing code (`internal/records.ts`). It does not own deciding when to look
 * (the `file` view asks before its first page) nor showing gaps (the views).
 *
 * @since 0.1.0
 */
import { isInside } from "@forkjoin/patch/RelativePath"
import { sha256 } from "@forkjoin/patch/Bytes"
import { snapshotOf } from "@forkjoin/patch/Snapshot"
import {
  type EnvironmentId,
  type FileChange,
  JournalIntent,
  RecordDraft,
  type RelativePath,
  type Snapshot
} from "@forkjoin/schema"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import type { StoreError } from "./HistoryStore.ts"
import {
  decodeRecordJsonRow,
  insertBlobs,
  insertRecord,
  prepareRecord,
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
  openIntents: "SELECT intent_json FROM intents WHERE environment_id = ? AND status = 'open'"
} as const

/** The part of a journal intent gap detection reads: the paths it is about to change. */
const decodeIntentPaths = Schema.decodeUnknownResult(
  Schema.fromJsonString(Schema.Struct({ entries: JournalIntent.fields.entries }))
)

const decodeDraft = Schema.decodeUnknownSync(RecordDraft)

/** What history says is at `p` now: a snapshot, `absent`, or `unknown` (no after recorded). */
const expectedAt = (
  c: Connection,
  env: EnvironmentId,
  p: string
): { ordinal: number; state: Snapshot | "absent" | "unknown" } | undefined => {
  const at = c.get<{ readonly commit_ordinal: number }>(SQL.lastAt, env, p)
  const out = c.get<{ readonly commit_ordinal: number }>(SQL.lastMovedOut, env, p)
  if (at === undefined && out === undefined) return undefined
  if (out !== undefined && (at === undefined || out.commit_ordinal > at.commit_ordinal)) {
    return { ordinal: out.commit_ordinal, state: "absent" }
  }
  const row = c.get<RecordRow>(RECORD_SQL.recordByOrdinal, env, at!.commit_ordinal)!
  const record = decodeRecordJsonRow("HistoryViews.gap", row)
  // A verification record only describes; fall back to what it verified only when it has an after.
  const change = record.changes.find((ch) => ch.path === p)!
  if (change.kind === "delete") return { ordinal: at!.commit_ordinal, state: "absent" }
  return { ordinal: at!.commit_ordinal, state: change.after ?? "unknown" }
}

/** The file at `p` on disk (never following a symlink out of the root), or `absent`. */
const readDisk = (root: string, p: string): { bytes: Uint8Array; mode: number } | "absent" | "unreadable" => {
  const abs = path.join(root, ...p.split("/"))
  let st: fs.Stats
  try {
    st = fs.lstatSync(abs)
  } catch {
    return "absent"
  }
  if (!st.isFile()) return "unreadable"
  try {
    const real = fs.realpathSync(abs)
    if (!isInside(root, real)) return "unreadable"
    return { bytes: fs.readFileSync(real) as Uint8Array, mode: st.mode & 0o7777 }
  } catch {
    return "unreadable"
  }
}

/**
 * Whether an open intent may be about to change `p`. An intent that does not decode (the
 * store only accepts valid ones) is taken to touch everything: never record a gap an engine
 * write in flight may explain.
 */
const intentTouches = (c: Connection, env: EnvironmentId, p: string): boolean =>
  c.all<{ readonly intent_json: string }>(SQL.openIntents, env).some((row) => {
    const intent = decodeIntentPaths(row.intent_json)
    return Result.isSuccess(intent) ? intent.success.entries.some((e) => e.path === p) : true
  })

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

/**
 * Compares `request.path` on disk with its last recorded content and records one gap when
 * they differ unexplained; does nothing for a path history never saw, an unreadable file, or
 * a gap another process recorded meanwhile. A path history never saw is compared with
 * `request.known` when the caller gives it.
 *
 * @category constructors
 * @since 0.1.0
 */
export const detectGap = (scope: GapScope, request: GapRequest): Effect.Effect<void, StoreError, Sqlite> =>
  Effect.gen(function*() {
    const operation = "HistoryViews.detectGap"
    const sql = yield* Sqlite
    const env = scope.environmentId
    const p = request.path
    const recorded = yield* sql.run(operation, (c) => expectedAt(c, env, p))
    // Ordinal 0: nothing recorded yet, the caller's knowledge stands in for history's.
    const first = recorded ?? (request.known === undefined ? undefined : { ordinal: 0, state: request.known })
    if (first === undefined || first.state === "unknown") return
    const disk = readDisk(scope.root, p)
    if (disk === "unreadable") return
    const diskHash = disk === "absent" ? undefined : sha256(disk.bytes)
    const expectedHash = first.state === "absent" ? undefined : first.state.hash
    if (diskHash === expectedHash) return
    const now = yield* Clock.currentTimeMillis
    const before = first.state === "absent" ? undefined : first.state
    const after = disk === "absent" ? undefined : snapshotOf(disk.bytes, disk.mode, diskHash)
    const change: FileChange = before === undefined
      ? { kind: "add", path: p, after: after! }
      : after === undefined
      ? { kind: "delete", path: p, before }
      : { kind: "replace", path: p, before, after }
    const id = randomUUID()
    const draft = decodeDraft({
      recordId: `rec-gap-${id}`,
      threadId: request.caller,
      turnId: request.turnId,
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
    const prepared = yield* prepareRecord(operation, draft, now)
    yield* sql.transaction(operation, (c) => {
      // Re-check under the write lock: another viewer may have recorded the gap meanwhile,
      // or an engine may have journaled a write that explains it.
      const again = expectedAt(c, env, p)
      if ((again?.ordinal ?? 0) !== first.ordinal || intentTouches(c, env, p)) return
      if (disk !== "absent") insertBlobs(c, [disk.bytes])
      insertRecord(c, prepared, null)
    })
  })
