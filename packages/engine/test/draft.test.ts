/**
 * The pure draft builder: one `FileChange` per planned file with the right snapshots and
 * modes, intent entries per path (a move gives two), directory effects, and each content
 * hashed once — all without touching a disk.
 */
import { ThreadId, TurnId } from "@forkjoin/schema/Ids"
import type { Plan, PlannedFile } from "@forkjoin/patch"
import { sha256 } from "@forkjoin/patch/Bytes"
import { snapshotOf } from "@forkjoin/patch/Snapshot"
import {
  type EnvironmentId,
  type InvocationId,
  JournalIntent,
  type RecordId,
  RelativePath,
  type Sha256Hash,
  type TransactionId,
  utcTimestampFromMillis
} from "@forkjoin/schema"
import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { stepsOf } from "../src/internal/commit.ts"
import { buildDraft, type DraftInput } from "../src/internal/draft.ts"
import type { ResolvedTarget } from "../src/internal/resolve.ts"

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)
const NEW_FILE_MODE = 0o640
const TXN = "patch:00000000-0000-4000-8000-000000000001"

const file = (path: string, content: Uint8Array, mode: number): ResolvedTarget => ({
  path,
  absolute: `/ws/${path}`,
  state: { _tag: "File", bytes: content },
  mode
})
const missing = (path: string): ResolvedTarget => ({ path, absolute: `/ws/${path}`, state: { _tag: "Missing" }, mode: undefined })

const inputOf = (files: ReadonlyArray<PlannedFile>, targets: ReadonlyArray<ResolvedTarget>, createdDirectories: ReadonlyArray<string> = []): DraftInput => {
  const plan: Plan = { files, summary: [] }
  const byPath = new Map(targets.map((t) => [t.path, t]))
  return {
    plan,
    steps: stepsOf(plan, byPath),
    targets: byPath,
    request: { threadId: ThreadId.make("thread-1"), turnId: TurnId.make("turn-1") },
    ids: {
      intentId: "intent-1",
      recordId: "rec-1" as RecordId,
      transactionId: TXN as TransactionId,
      invocationId: "inv-1" as InvocationId,
      environmentId: "env-1" as EnvironmentId
    },
    createdAt: utcTimestampFromMillis(Date.UTC(2030, 0, 2, 3, 4, 5, 678)),
    newFileMode: NEW_FILE_MODE,
    createdDirectories: createdDirectories as ReadonlyArray<RelativePath>
  }
}

describe("buildDraft", () => {
  it("records an update with the file's mode on both sides and a schema-valid intent", () => {
    const before = bytes("a\r\nb\r\n")
    const after = bytes("a\r\nB\r\n")
    const { draft, intent } = buildDraft(inputOf([{ kind: "update", path: RelativePath.make("x.sh"), before, after }], [file("x.sh", before, 0o755)]))
    expect(draft.changes).toEqual([
      { kind: "update", path: RelativePath.make("x.sh"), before: snapshotOf(before, 0o755), after: snapshotOf(after, 0o755) }
    ])
    expect(draft.changes[0]!.after!.lineEnding).toBe("crlf")
    expect(intent.entries).toEqual([{ path: RelativePath.make("x.sh"), pre: sha256(before), post: sha256(after), preMode: 0o755, postMode: 0o755 }])
    expect(intent.createdAt).toBe("2030-01-02T03:04:05.678Z")
    expect(Schema.is(JournalIntent)(intent)).toBe(true)
  })

  it("carries the ids and the request's defaults into the draft", () => {
    const after = bytes("new\n")
    const { draft, intent } = buildDraft(inputOf([{ kind: "add", path: RelativePath.make("n.txt"), before: undefined, after }], [missing("n.txt")]))
    expect(draft).toMatchObject({
      recordId: "rec-1",
      threadId: ThreadId.make("thread-1"),
      turnId: TurnId.make("turn-1"),
      invocationId: "inv-1",
      environmentId: "env-1",
      transactionId: TXN,
      authority: "native_patch_engine",
      provenance: "native_engine",
      exactness: "exact",
      outcome: "applied",
      warnings: [],
      links: {}
    })
    expect(intent).toMatchObject({ intentId: "intent-1", environmentId: "env-1", transactionId: TXN, draft })
  })

  it("gives an added file the new-file mode and a deleted file no after", () => {
    const added = bytes("new\n")
    const gone = bytes("old\n")
    const { draft, intent } = buildDraft(
      inputOf(
        [
          { kind: "add", path: RelativePath.make("n.txt"), before: undefined, after: added },
          { kind: "delete", path: RelativePath.make("d.txt"), before: gone, after: undefined }
        ],
        [missing("n.txt"), file("d.txt", gone, 0o600)]
      )
    )
    expect(draft.changes).toEqual([
      { kind: "add", path: RelativePath.make("n.txt"), after: snapshotOf(added, NEW_FILE_MODE) },
      { kind: "delete", path: RelativePath.make("d.txt"), before: snapshotOf(gone, 0o600) }
    ])
    expect(intent.entries).toEqual([
      { path: RelativePath.make("n.txt"), pre: null, post: sha256(added), postMode: NEW_FILE_MODE },
      { path: RelativePath.make("d.txt"), pre: sha256(gone), post: null, preMode: 0o600 }
    ])
  })

  it("records a move onto an existing file with its overwritten snapshot and two intent entries", () => {
    const source = bytes("s\n")
    const moved = bytes("s2\n")
    const victim = bytes("v\n")
    const { blobs, draft, intent } = buildDraft(
      inputOf(
        [{ kind: "move", path: RelativePath.make("dst.txt"), moveFrom: RelativePath.make("src.txt"), before: source, after: moved, overwritten: victim }],
        [file("src.txt", source, 0o700), file("dst.txt", victim, 0o644)]
      )
    )
    expect(draft.changes).toEqual([{
      kind: "move",
      path: RelativePath.make("dst.txt"),
      moveFrom: RelativePath.make("src.txt"),
      before: snapshotOf(source, 0o700),
      after: snapshotOf(moved, 0o644),
      overwritten: snapshotOf(victim, 0o644)
    }])
    expect(intent.entries).toEqual([
      { path: RelativePath.make("dst.txt"), pre: sha256(victim), post: sha256(moved), preMode: 0o644, postMode: 0o644 },
      { path: RelativePath.make("src.txt"), pre: sha256(source), post: null, preMode: 0o700 }
    ])
    expect(blobs).toEqual([source, moved, victim])
  })

  it("keeps a moved file's source mode when the destination is new", () => {
    const source = bytes("s\n")
    const { draft, intent } = buildDraft(
      inputOf(
        [{ kind: "move", path: RelativePath.make("dst.txt"), moveFrom: RelativePath.make("src.txt"), before: source, after: source }],
        [file("src.txt", source, 0o751), missing("dst.txt")]
      )
    )
    expect(draft.changes[0]).toMatchObject({ before: { mode: 0o751 }, after: { mode: 0o751 } })
    expect(intent.entries[0]).toEqual({ path: RelativePath.make("dst.txt"), pre: null, post: sha256(source), postMode: 0o751 })
  })

  it("records the created directories as directory effects and in the intent", () => {
    const { draft, intent } = buildDraft(
      inputOf([{ kind: "add", path: RelativePath.make("new/dir/a.txt"), before: undefined, after: bytes("x\n") }], [missing("new/dir/a.txt")], [
        "new",
        "new/dir"
      ])
    )
    expect(draft.directoryEffects).toEqual([{ kind: "created", path: RelativePath.make("new") }, { kind: "created", path: RelativePath.make("new/dir") }])
    expect(intent.createdDirectories).toEqual(["new", "new/dir"])
  })

  it("hashes each content once, sharing the hash between snapshots, entries and blobs", () => {
    const before = bytes("1\n")
    const after = bytes("2\n")
    const hashed: Array<Uint8Array> = []
    const counting = (b: Uint8Array): Sha256Hash => {
      hashed.push(b)
      return sha256(b)
    }
    const { blobHashes, blobs, draft, intent } = buildDraft(
      inputOf([{ kind: "update", path: RelativePath.make("a"), before, after }], [file("a", before, 0o644)]),
      counting
    )
    expect(hashed).toEqual([before, after])
    expect(blobHashes).toEqual(blobs.map((b) => sha256(b)))
    expect(intent.entries[0]!.pre).toBe(draft.changes[0]!.before!.hash)
    expect(intent.entries[0]!.post).toBe(draft.changes[0]!.after!.hash)
  })
})
