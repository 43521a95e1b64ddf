/**
 * The SQLite implementation of `HistoryContent`: blobs stored in the snapshot store (the
 * CPU-heavy part of a large write done before the write transaction), verified reads, and
 * retention, which decides from the records and open intents which snapshots are still needed.
 *
 * @since 0.1.0
 */
import { sha256 } from "@forkjoin/patch/Bytes"
import { type JournalIntent, JournalIntentFromJson, type Sha256Hash, utcTimestampFromMillis } from "@forkjoin/schema"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { HistoryContent, type RetentionReport, type RetentionRequest, StoreError } from "../../HistoryStore.ts"
import * as SnapshotStore from "../../SnapshotStore.ts"
import type { Connection, Sqlite } from "../../Sqlite.ts"
import { decodeRecordRow, messageOf, type RecordRow } from "../records.ts"

const SQL = {
  allRecords: "SELECT environment_id, record_id, commit_ordinal, record_json FROM records ORDER BY environment_id, commit_ordinal",
  allOpenIntents: "SELECT intent_json FROM intents WHERE status = 'open'"
} as const

const decodeIntentJson = Schema.decodeUnknownSync(JournalIntentFromJson)

/** One blob of a write, with the blob it was edited from (its `base`, at `baseAt` when among them too). */
interface BlobStep {
  readonly at: number
  readonly base: Sha256Hash | undefined
  readonly baseAt: number | undefined
}

/**
 * The order to store blobs in: each after the blob it was edited from when that is among them
 * too, so the later version can be stored as an edit of the earlier one.
 */
const inBaseOrder = (hashes: ReadonlyArray<Sha256Hash>, bases: ReadonlyMap<string, Sha256Hash>): Array<BlobStep> => {
  const index = new Map<string, number>()
  hashes.forEach((h, i) => {
    if (!index.has(h)) index.set(h, i)
  })
  const done = new Set<number>()
  const order: Array<BlobStep> = []
  const visit = (i: number): void => {
    if (done.has(i)) return
    // Marked first: two files swapping contents make a cycle of bases.
    done.add(i)
    const base = bases.get(hashes[i]!)
    const baseAt = base === undefined ? undefined : index.get(base)
    if (baseAt !== undefined) visit(baseAt)
    order.push({ at: i, base, baseAt })
  }
  for (let i = 0; i < hashes.length; i++) visit(i)
  return order
}

// Blobs from this size on are cut, hashed and compressed before the write transaction
// (`SnapshotStore.prepare`): a new 5 MB file then holds the lock ~5 ms instead of ~60. Below it
// that work takes about a millisecond, less than looking everything up twice.
const PREPARE_FROM = 256 * 1024

/**
 * Stores blobs (`bases`: a blob's hash to the blob it was edited from): the CPU-heavy work
 * first, on the connection but outside any transaction, then the writes in one transaction
 * (`operation`), which `after` extends.
 */
export const storeBlobs = (
  sql: Sqlite["Service"],
  operation: string,
  blobs: ReadonlyArray<Uint8Array>,
  hashes: ReadonlyArray<Sha256Hash>,
  bases: ReadonlyMap<string, Sha256Hash>,
  cache: SnapshotStore.ChunkCache,
  after: (c: Connection) => void = () => undefined
): Effect.Effect<void, StoreError> =>
  Effect.gen(function*() {
    const order = inBaseOrder(hashes, bases)
    const optionsOf = (step: BlobStep) => ({ base: step.base, baseBytes: step.baseAt === undefined ? undefined : blobs[step.baseAt], cache })
    const large = order.some((step) => blobs[step.at]!.byteLength >= PREPARE_FROM)
    // Only saves work: whatever it could not do (a read failing, another writer meanwhile) the
    // transaction does, and reports.
    const prepared = !large ? new Map<number, SnapshotStore.Prepared>() : yield* sql.run(operation, (c) => {
      const done = new Map<number, SnapshotStore.Prepared>()
      const seen = new Set<string>()
      for (const step of order) {
        // Two paths with the same new content: the second `put` finds it stored.
        if (blobs[step.at]!.byteLength < PREPARE_FROM || seen.has(hashes[step.at]!)) continue
        seen.add(hashes[step.at]!)
        const basePrepared = step.baseAt === undefined ? undefined : done.get(step.baseAt)
        done.set(step.at, SnapshotStore.prepare(c, blobs[step.at]!, hashes[step.at]!, { ...optionsOf(step), basePrepared }))
      }
      return done
    }).pipe(Effect.orElseSucceed(() => new Map<number, SnapshotStore.Prepared>()))
    yield* sql.transaction(operation, (c) => {
      for (const step of order) SnapshotStore.put(c, blobs[step.at]!, hashes[step.at]!, { ...optionsOf(step), prepared: prepared.get(step.at) })
      after(c)
    })
  })

/** The database's size: its pages (the WAL's committed pages included). */
const databaseBytes = (c: Connection): number =>
  c.get<{ readonly page_count: number }>("PRAGMA page_count")!.page_count * c.get<{ readonly page_size: number }>("PRAGMA page_size")!.page_size

/**
 * Which snapshots records use: `old`, used by a record committed before `committedBefore`;
 * `needed`, whatever retention must keep: used by a newer record, the last recorded content of
 * a path (per environment, moves followed), or a pre or post content of an open intent.
 */
const snapshotUse = (
  c: Connection,
  operation: string,
  committedBefore: number
): { readonly old: Set<Sha256Hash>; readonly needed: Set<Sha256Hash> } => {
  const old = new Set<Sha256Hash>()
  const needed = new Set<Sha256Hash>()
  const latest = new Map<string, Sha256Hash | undefined>()
  for (const row of c.all<RecordRow & { readonly environment_id: string }>(SQL.allRecords)) {
    const record = decodeRecordRow(operation, row)
    const into = Date.parse(record.committedAt) < committedBefore ? old : needed
    for (const change of record.changes) {
      for (const s of [change.before, change.after, change.overwritten]) if (s !== undefined) into.add(s.hash)
      if (change.moveFrom !== undefined) latest.set(`${row.environment_id}\u0000${change.moveFrom}`, undefined)
      latest.set(`${row.environment_id}\u0000${change.path}`, change.after?.hash)
    }
  }
  for (const hash of latest.values()) if (hash !== undefined) needed.add(hash)
  for (const row of c.all<{ readonly intent_json: string }>(SQL.allOpenIntents)) {
    let intent: JournalIntent
    try {
      intent = decodeIntentJson(row.intent_json)
    } catch (e) {
      // An open intent that does not decode could need anything: prune nothing.
      throw new StoreError({ operation, reason: "Corrupt", detail: `an open intent does not decode: ${messageOf(e)}`, cause: e })
    }
    for (const entry of intent.entries) for (const h of [entry.pre, entry.post]) if (h !== null) needed.add(h)
  }
  return { old, needed }
}
/** The `HistoryContent` of the connection `sql`, reading and writing through `cache`. */
export const makeContent = (sql: Sqlite["Service"], cache: SnapshotStore.ChunkCache): HistoryContent["Service"] => {
  const putBlobs = Effect.fnUntraced(function*(blobs: ReadonlyArray<Uint8Array>) {
    const hashes = blobs.map((bytes) => sha256(bytes))
    if (blobs.length === 0) return hashes
    yield* storeBlobs(sql, "HistoryStore.putBlobs", blobs, hashes, new Map(), cache)
    return hashes
  })

  const getBlob = Effect.fnUntraced(function*(hash: Sha256Hash) {
    const operation = "HistoryStore.getBlob"
    // Repair and rollback restore files from these bytes: `read` never hands out content that
    // is not what its address says.
    const found = yield* sql.run(operation, (c) => SnapshotStore.read(c, operation, hash, cache))
    switch (found._tag) {
      case "Stored":
        return Option.some(found.bytes)
      case "Missing":
        return Option.none<Uint8Array>()
      case "Pruned":
        return yield* new StoreError({
          operation,
          reason: "Pruned",
          detail: `the content of ${hash} was dropped by retention at ${found.prunedAt} (forkjoin gc --prune-snapshots-older-than)`
        })
    }
  })

  const pruneSnapshots = Effect.fnUntraced(function*(request: RetentionRequest) {
    const operation = "HistoryStore.pruneSnapshots"
    const at = utcTimestampFromMillis(yield* Clock.currentTimeMillis)
    const databaseBytesBefore = yield* sql.run(operation, databaseBytes)
    const counts = yield* sql.transaction(operation, (c) => {
      const use = snapshotUse(c, operation, request.committedBefore)
      for (const hash of request.keep ?? []) use.needed.add(hash)
      return SnapshotStore.prune(c, operation, [...use.old].filter((h) => !use.needed.has(h)), at)
    })
    // Deleted chunks leave free pages: give them back to the filesystem.
    if (counts.chunks > 0) yield* sql.run(`${operation}:vacuum`, (c) => c.exec("VACUUM"))
    return {
      snapshotsPruned: counts.snapshots,
      chunksRemoved: counts.chunks,
      bytesFreed: counts.bytes,
      databaseBytesBefore,
      databaseBytesAfter: yield* sql.run(operation, databaseBytes)
    } satisfies RetentionReport
  })

  return HistoryContent.of({ putBlobs, getBlob, pruneSnapshots })
}
