/**
 * What a thread-scoped token sees of the workspace-wide commit count: nothing. Stored records
 * number commits across the whole workspace (`commitOrdinal`), so a token that saw two of its
 * own records would learn how many other threads committed in between. The gateway therefore
 * numbers every record it serves among the records its caller sees (1, 2, 3, ... in commit
 * order: the caller can count those anyway) and seals the views' page cursors, which hold the
 * global ordinal, so a client can page on but not read them. Stored records are unchanged.
 *
 * It owns the caller's numbering and the cursor seal. The visibility rule is `sees`, the views'.
 */
import { partitionPoint } from "@forkjoin/patch/Sorted"
import { Engine } from "@forkjoin/engine/Engine"
import { HistoryRecords } from "@forkjoin/history/HistoryStore"
import { ordinalOf } from "@forkjoin/history/ViewRequests"
import type { HistoryViews } from "@forkjoin/history/Views"
import type { FileHistoryItem } from "@forkjoin/schema/HistoryViews"
import type { ThreadId } from "@forkjoin/schema/Ids"
import type { PatchHistoryRecord } from "@forkjoin/schema/PatchHistoryRecord"
import * as Effect from "effect/Effect"
import * as Semaphore from "effect/Semaphore"
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"
import { BadRequest, NotFound, Unavailable } from "../GatewayApi.ts"
import { sees, toApiError } from "./access.ts"

// -------------------------------------------------------------------------------------
// numbering among the records a caller sees
// -------------------------------------------------------------------------------------

/** The global ordinals of the records one caller sees, in order, read up to `upTo`. */
interface Seen {
  readonly ordinals: Array<number>
  upTo: number
  readonly lock: Semaphore.Semaphore
}

// One numbering per history store (one per server) and caller; a new server starts afresh.
const numberings = new WeakMap<object, Map<string, Seen>>()
const PAGE = 500

const seenBy = (store: object, caller: ThreadId): Seen => {
  let byCaller = numberings.get(store)
  if (byCaller === undefined) numberings.set(store, byCaller = new Map())
  let seen = byCaller.get(caller)
  if (seen === undefined) byCaller.set(caller, seen = { ordinals: [], upTo: 0, lock: Semaphore.makeUnsafe(1) })
  return seen
}


/**
 * The caller's `Seen`, having read the records committed since the last call up to `ordinal`
 * (all of them for `Infinity`), keeping those whose thread the caller sees.
 */
const seenUpTo = (caller: ThreadId, ordinal: number): Effect.Effect<Seen, Unavailable, Engine | HistoryRecords | HistoryViews> =>
  Effect.gen(function*() {
    const history = yield* HistoryRecords
    const seen = seenBy(history, caller)
    if (ordinal <= seen.upTo) return seen
    const env = (yield* Engine).environmentId
    yield* seen.lock.withPermit(Effect.gen(function*() {
      const threads = new Map<string, boolean>()
      while (ordinal > seen.upTo) {
        const records = yield* history.recordsAfter(env, seen.upTo, PAGE).pipe(Effect.mapError(toApiError))
        for (const r of records) {
          let visible = threads.get(r.threadId)
          if (visible === undefined) threads.set(r.threadId, visible = yield* sees(caller, r.threadId))
          if (visible) seen.ordinals.push(r.commitOrdinal)
          seen.upTo = Math.max(seen.upTo, r.commitOrdinal)
        }
        if (records.length < PAGE) break
      }
    }))
    return seen
  }).pipe(Effect.mapError((e) => (e instanceof Unavailable ? e : new Unavailable({ message: e.message }))))

/** The number `caller` sees for the record with global ordinal `ordinal`: how many records it sees were committed up to it. */
const numberFor = (caller: ThreadId, ordinal: number) => Effect.map(seenUpTo(caller, ordinal), (seen) => partitionPoint(seen.ordinals, (o) => o <= ordinal))

/**
 * A diff `target` as the views take it: `#N` from a token names the caller's `N`-th record, so
 * it becomes that record's global `#ordinal` (past the caller's last it is not found); any
 * other target is unchanged.
 */
export const scopedTarget = (caller: ThreadId, target: string): Effect.Effect<string, NotFound | Unavailable, Engine | HistoryRecords | HistoryViews> => {
  const n = ordinalOf(target)
  if (n === undefined) return Effect.succeed(target)
  return Effect.flatMap(seenUpTo(caller, Infinity), (seen) => {
    const ordinal = seen.ordinals[n - 1]
    return ordinal === undefined
      ? Effect.fail(new NotFound({ message: `no record ${target} is visible from thread ${caller}; #N counts the records this token sees (the timeline shows them)` }))
      : Effect.succeed(`#${ordinal}`)
  })
}

/** `record` as `caller` is shown it: numbered among the records the caller sees. */
export const scopedRecord = (caller: ThreadId, record: PatchHistoryRecord) =>
  Effect.map(numberFor(caller, record.commitOrdinal), (commitOrdinal): PatchHistoryRecord => ({ ...record, commitOrdinal }))

/** A file-history item as `caller` is shown it: numbered among the records the caller sees. */
const scopedItem = (caller: ThreadId, item: FileHistoryItem) =>
  Effect.map(numberFor(caller, item.commitOrdinal), (commitOrdinal): FileHistoryItem => ({ ...item, commitOrdinal }))

// -------------------------------------------------------------------------------------
// sealed cursors
// -------------------------------------------------------------------------------------

// A key of this process: a cursor pages on within one server's life, then is refused.
const KEY = randomBytes(32)
const IV_BYTES = 12
const TAG_BYTES = 16

/** A views cursor sealed (AES-256-GCM): opaque to the client, and any change to it is refused. */
const seal = (cursor: string): string => {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv("aes-256-gcm", KEY, iv)
  const body = Buffer.concat([cipher.update(cursor, "utf8"), cipher.final()])
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url")
}

/**
 * The views cursor a client's sealed `cursor` holds; `BadRequest` (`InvalidCursor`) for one this
 * server did not give (made up, altered, or from before a restart).
 */
export const openCursor = (cursor: string | undefined): Effect.Effect<string | undefined, BadRequest> => {
  if (cursor === undefined) return Effect.succeed(undefined)
  const bytes = Buffer.from(cursor, "base64url")
  try {
    if (bytes.length < IV_BYTES + TAG_BYTES) throw new Error("too short")
    const decipher = createDecipheriv("aes-256-gcm", KEY, bytes.subarray(0, IV_BYTES))
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
    return Effect.succeed(Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8"))
  } catch {
    return Effect.fail(
      new BadRequest({ reason: "InvalidCursor", message: "the cursor is not one this server gave (or the server restarted); pass a nextCursor it returned, or start without a cursor" })
    )
  }
}

/** A page with its `nextCursor` sealed. */
export const sealedPage = <P extends { readonly nextCursor: string | null }>(page: P): P =>
  page.nextCursor === null ? page : { ...page, nextCursor: seal(page.nextCursor) }

/** A timeline page as `caller` is shown it: records numbered among the caller's, cursor sealed. */
export const scopedRecordPage = <P extends { readonly nextCursor: string | null; readonly items: ReadonlyArray<PatchHistoryRecord> }>(caller: ThreadId, page: P) =>
  Effect.map(Effect.forEach(page.items, (r) => scopedRecord(caller, r)), (items): P => sealedPage({ ...page, items }))

/** A file-history page as `caller` is shown it: items numbered among the caller's, cursor sealed. */
export const scopedFilePage = <P extends { readonly nextCursor: string | null; readonly items: ReadonlyArray<FileHistoryItem> }>(caller: ThreadId, page: P) =>
  Effect.map(Effect.forEach(page.items, (i) => scopedItem(caller, i)), (items): P => sealedPage({ ...page, items }))
