/** Test data for the history store: drafts, intents and their blobs, decoded through the schemas. */
import {
  EnvironmentId,
  JournalIntent,
  type PatchHistoryRecord,
  RecordDraft,
  type Sha256Hash,
  TransactionId,
  TurnId
} from "@forkjoin/schema"
import Database from "better-sqlite3"
import * as Schema from "effect/Schema"
import { createHash, randomUUID } from "node:crypto"

const encoder = new TextEncoder()

/** UTF-8 bytes of a string. */
export const bytes = (text: string): Uint8Array => encoder.encode(text)

/** `sha256:<hex>` of some bytes, computed independently of the store. */
export const sha256 = (data: Uint8Array): Sha256Hash =>
  `sha256:${createHash("sha256").update(data).digest("hex")}` as Sha256Hash

/** A fresh environment id, so tests sharing a database never see each other's sequences. */
export const freshEnvironment = (label = "env"): EnvironmentId => EnvironmentId.make(`${label}-${randomUUID()}`)

/** A branded turn id. */
export const turn = (id: string): TurnId => TurnId.make(id)

/** A branded transaction id. */
export const txn = (id: string): TransactionId => TransactionId.make(id)

const snapshot = (content: Uint8Array) => ({
  hash: sha256(content),
  bytes: content.byteLength,
  encoding: "utf8",
  lineEnding: "lf",
  finalNewline: true,
  mode: 0o644
})

/** What a test draft describes. */
export interface DraftSpec {
  readonly environmentId: EnvironmentId
  readonly turnId?: string
  readonly threadId?: string
  readonly transactionId?: string
  /** One change per path: `before` absent = add, `after` absent = delete. */
  readonly files?: ReadonlyArray<{ readonly path: string; readonly before?: string; readonly after?: string }>
  readonly outcome?: "applied" | "gap"
}

/** A valid record draft (decoded, so the fixture itself is checked by the schema). */
export const draft = (spec: DraftSpec): RecordDraft => {
  const files = spec.files ?? [{ path: "src/a.txt", before: "old\n", after: "new\n" }]
  const gap = spec.outcome === "gap"
  return Schema.decodeUnknownSync(RecordDraft)({
    recordId: `rec-${randomUUID()}`,
    threadId: spec.threadId ?? "thread-1",
    turnId: spec.turnId ?? "turn-1",
    invocationId: `inv-${randomUUID()}`,
    environmentId: spec.environmentId,
    transactionId: spec.transactionId ?? (gap ? `gap:${randomUUID()}` : `patch:${randomUUID()}`),
    authority: gap ? "unsupported" : "native_patch_engine",
    provenance: gap ? "unknown" : "native_engine",
    exactness: gap ? "uncertain" : "exact",
    outcome: spec.outcome ?? "applied",
    changes: files.map((f) => ({
      kind: f.before === undefined ? "add" : f.after === undefined ? "delete" : "update",
      path: f.path,
      ...(f.before === undefined ? {} : { before: snapshot(bytes(f.before)) }),
      ...(f.after === undefined ? {} : { after: snapshot(bytes(f.after)) })
    })),
    directoryEffects: [],
    warnings: [],
    links: {}
  })
}

/** An open intent for a draft (entries: each change's before/after hash). */
export const intent = (
  d: RecordDraft,
  options?: { readonly createdAt?: string; readonly intentId?: string }
): JournalIntent => {
  const entries = d.changes.map((change) => ({
    path: change.path,
    pre: change.before?.hash ?? null,
    post: change.after?.hash ?? null
  }))
  return Schema.decodeUnknownSync(JournalIntent)({
    schemaVersion: 1,
    intentId: options?.intentId ?? `intent-${randomUUID()}`,
    environmentId: d.environmentId,
    transactionId: d.transactionId,
    createdAt: options?.createdAt ?? "2026-11-29T12:00:00.000Z",
    draft: d,
    entries,
    createdDirectories: []
  })
}

/** The blobs of a `DraftSpec`'s files (what the engine passes to `openIntent`). */
export const blobsOf = (spec: DraftSpec): ReadonlyArray<Uint8Array> =>
  (spec.files ?? [{ path: "src/a.txt", before: "old\n", after: "new\n" }]).flatMap((f) => [
    ...(f.before === undefined ? [] : [bytes(f.before)]),
    ...(f.after === undefined ? [] : [bytes(f.after)])
  ])

/** A draft plus its intent and blobs in one go. */
export const planned = (spec: DraftSpec, options?: { readonly createdAt?: string; readonly intentId?: string }) => {
  const d = draft(spec)
  return { draft: d, intent: intent(d, options), blobs: blobsOf(spec) }
}

/** Runs `f` on a plain better-sqlite3 connection to `file` (what another tool would see), then closes it. */
export const raw = <A>(file: string, f: (db: Database.Database) => A): A => {
  const db = new Database(file)
  try {
    return f(db)
  } finally {
    db.close()
  }
}

/** Every snapshot hash the records name, once each. */
export const snapshotsOf = (records: ReadonlyArray<PatchHistoryRecord>): Array<Sha256Hash> => [
  ...new Set(records.flatMap((r) => r.changes.flatMap((c) => [c.before, c.after, c.overwritten].flatMap((s) => (s === undefined ? [] : [s.hash])))))
]
