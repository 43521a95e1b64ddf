/** Helpers for the history-view tests: layers over one database and terse record drafts. */
import { HistoryStore } from "@forkjoin/history/HistoryStore"
import { layerNoDeps, sqliteOptions } from "@forkjoin/history/HistoryStoreSqlite"
import { Sqlite } from "@forkjoin/history/Sqlite"
import { HistoryViews, type ViewsConfig } from "@forkjoin/history/Views"
import { type EnvironmentId, type PatchHistoryRecord, RecordDraft, ThreadId } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import { bytes, sha256 } from "./fixtures.ts"

/** Store and views over one database (`:memory:` or a file). */
export const layerBoth = (file: string, config: ViewsConfig) =>
  Layer.mergeAll(layerNoDeps, HistoryViews.layerNoDeps(config)).pipe(
    Layer.provideMerge(Sqlite.layer(file, sqliteOptions())),
    Layer.orDie
  )

const snap = (text: string) => ({
  hash: sha256(bytes(text)),
  bytes: bytes(text).byteLength,
  encoding: "utf8",
  lineEnding: text.includes("\n") ? "lf" : "none",
  finalNewline: text.endsWith("\n"),
  mode: 0o644
})

/** One change: `add p=after`, `update p before→after`, `delete p before`, `move from→p`. */
export type Spec =
  | { readonly add: string; readonly after: string }
  | { readonly update: string; readonly before: string; readonly after: string }
  | { readonly delete: string; readonly before: string }
  | { readonly move: string; readonly to: string; readonly before: string; readonly after: string }

/** A valid exact native record draft of `changes` for `thread`/`turn`. */
export const draftOf = (
  env: EnvironmentId,
  thread: string,
  turn: string,
  changes: ReadonlyArray<Spec>
): RecordDraft =>
  Schema.decodeUnknownSync(RecordDraft)({
    recordId: `rec-${randomUUID()}`,
    threadId: thread,
    turnId: turn,
    invocationId: `inv-${randomUUID()}`,
    environmentId: env,
    transactionId: `patch:${randomUUID()}`,
    authority: "native_patch_engine",
    provenance: "native_engine",
    exactness: "exact",
    outcome: "applied",
    changes: changes.map((c) =>
      "add" in c
        ? { kind: "add", path: c.add, after: snap(c.after) }
        : "update" in c
        ? { kind: "update", path: c.update, before: snap(c.before), after: snap(c.after) }
        : "delete" in c
        ? { kind: "delete", path: c.delete, before: snap(c.before) }
        : { kind: "move", path: c.to, moveFrom: c.move, before: snap(c.before), after: snap(c.after) }
    ),
    directoryEffects: [],
    warnings: [],
    links: {}
  })

/** The texts of a spec list (blobs to store). */
const textsOf = (changes: ReadonlyArray<Spec>): Array<string> =>
  changes.flatMap((c) => ("before" in c ? [c.before] : []).concat("after" in c ? [c.after] : []))

let clock = Date.parse("2026-11-29T12:00:00.000Z")

/** Appends one record (and its blobs) through the store; returns it. */
export const commit = (env: EnvironmentId, thread: string, turn: string, changes: ReadonlyArray<Spec>) =>
  Effect.gen(function*() {
    const store = yield* HistoryStore
    yield* store.putBlobs(textsOf(changes).map(bytes))
    return yield* store.appendRecord(draftOf(env, thread, turn, changes), clock++)
  })

/** Registers `child` under `parent`. */
export const fork = (child: string, parent: string) =>
  Effect.flatMap(HistoryStore, (store) => store.registerThread(ThreadId.make(child), ThreadId.make(parent)))

/** Record ids, for comparing pages. */
export const ids = (records: ReadonlyArray<{ readonly recordId: string }>): Array<string> => records.map((r) => r.recordId)

/** Type helper for records. */
export type Rec = PatchHistoryRecord
