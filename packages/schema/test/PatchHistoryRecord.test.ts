import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { PatchHistoryRecord, PatchHistoryRecordFromJson } from "../src/PatchHistoryRecord.ts"
import type { PatchHistoryRecordEncoded } from "../src/PatchHistoryRecord.ts"
import type { SnapshotEncoded } from "../src/Snapshot.ts"
import { decodeFailure } from "./helpers.ts"

const UUID = "0f8fad5b-d9cb-469f-a165-70867728950e"
const hash = (c: string) => `sha256:${c.repeat(64)}`
const snap = (c: string, extra: Partial<SnapshotEncoded> = {}): SnapshotEncoded => ({
  hash: hash(c),
  bytes: 10,
  encoding: "utf8",
  lineEnding: "lf",
  finalNewline: true,
  mode: 0o644,
  ...extra
})

const record = {
  schemaVersion: 1,
  recordId: "rec-1",
  threadId: "thread-parent",
  turnId: "turn-3",
  invocationId: "call-7",
  environmentId: "env-abc",
  transactionId: `subagent_merge:child-a`,
  commitOrdinal: 42,
  committedAt: "2026-01-31T12:00:00.000Z",
  authority: "native_patch_engine",
  provenance: "native_engine",
  exactness: "exact",
  outcome: "applied",
  changes: [
    { kind: "add", path: "src/new.ts", after: snap("a") },
    { kind: "add", path: "src/over.ts", after: snap("b"), overwritten: snap("c") },
    { kind: "update", path: "README.md", before: snap("d", { lineEnding: "crlf" }), after: snap("e", { lineEnding: "crlf" }) },
    { kind: "replace", path: "img/logo.png", before: snap("f", { encoding: "binary", lineEnding: "none", finalNewline: false }), after: snap("0", { encoding: "binary", lineEnding: "none", finalNewline: false, mode: 0o755 }) },
    { kind: "delete", path: "old.txt", before: snap("1", { bytes: 0, lineEnding: "none", finalNewline: false }) },
    { kind: "move", path: "lib/b.ts", moveFrom: "lib/a.ts", before: snap("2"), after: snap("3", { encoding: "utf8-bom" }), overwritten: snap("4") }
  ],
  directoryEffects: [{ kind: "created", path: "lib" }, { kind: "removed", path: "tmp/empty" }],
  warnings: [{ code: "final_newline_added", message: "a final newline was added", path: "src/new.ts" }, { code: "slow_fsync", message: "fsync took 2s" }],
  links: { mergeRunId: "merge-1", conflictId: "c-9" }
} satisfies PatchHistoryRecordEncoded

const withChange = (i: number, change: object) => ({
  ...record,
  changes: record.changes.map((c, j) => (j === i ? change : c))
})

describe("PatchHistoryRecord", () => {
  it("round-trips through its JSON codec", () => {
    const decoded = Schema.decodeUnknownSync(PatchHistoryRecord)(record)
    const json = Schema.encodeSync(PatchHistoryRecordFromJson)(decoded)
    expect(JSON.parse(json)).toEqual(record)
    const again = Schema.decodeUnknownSync(PatchHistoryRecordFromJson)(json)
    expect(again).toEqual(decoded)
    expect(Schema.encodeSync(PatchHistoryRecordFromJson)(again)).toBe(json)
    expect(typeof again.committedAt).toBe("string")
  })

  it("round-trips a minimal record with empty arrays and links", () => {
    const minimal = { ...record, transactionId: `patch:${UUID}`, changes: [], directoryEffects: [], warnings: [], links: {} }
    const json = Schema.encodeSync(PatchHistoryRecordFromJson)(Schema.decodeUnknownSync(PatchHistoryRecord)(minimal))
    expect(Schema.decodeUnknownSync(PatchHistoryRecordFromJson)(json)).toEqual(minimal)
  })

  it("rejects invalid JSON text", () => {
    expect(decodeFailure(PatchHistoryRecordFromJson, "{not json")).toContain("JSON")
  })

  describe("names the JSON path of a bad field", () => {
    it("a bad hash", () => {
      const bad = withChange(2, { ...record.changes[2], after: { ...snap("e"), hash: "sha256:XYZ" } })
      expect(decodeFailure(PatchHistoryRecord, bad)).toMatch(/Sha256Hash must be[^\n]*\n  at \["changes"\]\[2\]\["after"\]\["hash"\]/)
    })
    it("a wrong schemaVersion", () => {
      expect(decodeFailure(PatchHistoryRecord, { ...record, schemaVersion: 2 })).toBe(`Expected 1\n  at ["schemaVersion"]`)
      expect(decodeFailure(PatchHistoryRecordFromJson, JSON.stringify({ ...record, schemaVersion: "1" }))).toContain(`at ["schemaVersion"]`)
    })
    it("an absolute path", () => {
      expect(decodeFailure(PatchHistoryRecord, withChange(0, { ...record.changes[0], path: "/etc/passwd" })))
        .toMatch(/must be relative, not absolute[^\n]*\n  at \["changes"\]\[0\]\["path"\]/)
      expect(decodeFailure(PatchHistoryRecord, { ...record, directoryEffects: [{ kind: "created", path: "../up" }] }))
        .toContain(`at ["directoryEffects"][0]["path"]`)
    })
    it("an unknown authority", () => {
      expect(decodeFailure(PatchHistoryRecord, { ...record, authority: "git" }))
        .toBe(`Expected "native_patch_engine" | "codex_aggregate_event" | "managed_claude_patch_engine" | "unsupported"\n  at ["authority"]`)
    })
    it("other enumerations, ids and numbers", () => {
      expect(decodeFailure(PatchHistoryRecord, { ...record, provenance: "model" })).toContain(`at ["provenance"]`)
      expect(decodeFailure(PatchHistoryRecord, { ...record, exactness: "exactish" })).toContain(`at ["exactness"]`)
      expect(decodeFailure(PatchHistoryRecord, { ...record, outcome: "ok" })).toContain(`at ["outcome"]`)
      expect(decodeFailure(PatchHistoryRecord, withChange(0, { ...record.changes[0], kind: "copy" }))).toContain(`at ["changes"][0]["kind"]`)
      expect(decodeFailure(PatchHistoryRecord, { ...record, transactionId: "txn-1" })).toContain(`at ["transactionId"]`)
      expect(decodeFailure(PatchHistoryRecord, { ...record, commitOrdinal: 0 })).toContain(`at ["commitOrdinal"]`)
      expect(decodeFailure(PatchHistoryRecord, { ...record, commitOrdinal: 1.5 })).toContain(`at ["commitOrdinal"]`)
      expect(decodeFailure(PatchHistoryRecord, { ...record, committedAt: "yesterday" })).toContain(`at ["committedAt"]`)
      expect(decodeFailure(PatchHistoryRecord, { ...record, warnings: [{ code: "Bad Code", message: "m" }] })).toContain(`at ["warnings"][0]["code"]`)
      expect(decodeFailure(PatchHistoryRecord, { ...record, links: { verifies: "" } })).toContain(`at ["links"]["verifies"]`)
      const { threadId: _, ...noThread } = record
      expect(decodeFailure(PatchHistoryRecord, noThread)).toBe(`Missing key\n  at ["threadId"]`)
    })
  })

  describe("change sides", () => {
    it("moveFrom belongs to moves only, and a move needs it", () => {
      expect(decodeFailure(PatchHistoryRecord, withChange(2, { ...record.changes[2], moveFrom: "x" })))
        .toContain(`only a move change may have moveFrom, not update\n  at ["changes"][2]["moveFrom"]`)
      const { moveFrom: _, ...noFrom } = record.changes[5]!
      expect(decodeFailure(PatchHistoryRecord, withChange(5, noFrom))).toContain(`a move change needs moveFrom\n  at ["changes"][5]["moveFrom"]`)
      expect(decodeFailure(PatchHistoryRecord, withChange(5, { ...record.changes[5], moveFrom: "lib/b.ts" }))).toContain("must differ")
    })
    it("an add has no before, a delete no after, overwritten only on add/move", () => {
      expect(decodeFailure(PatchHistoryRecord, withChange(0, { ...record.changes[0], before: snap("9") }))).toContain(`at ["changes"][0]["before"]`)
      expect(decodeFailure(PatchHistoryRecord, withChange(4, { ...record.changes[4], after: snap("9") }))).toContain(`at ["changes"][4]["after"]`)
      expect(decodeFailure(PatchHistoryRecord, withChange(2, { ...record.changes[2], overwritten: snap("9") }))).toContain(`at ["changes"][2]["overwritten"]`)
    })
    it("an exact record needs every required side; a partial one may omit unknown sides", () => {
      const { before: _, ...noBefore } = record.changes[2]!
      expect(decodeFailure(PatchHistoryRecord, withChange(2, noBefore))).toContain(`an exact update change needs a before snapshot\n  at ["changes"][2]["before"]`)
      const { after: __, ...noAfter } = record.changes[0]!
      expect(decodeFailure(PatchHistoryRecord, withChange(0, noAfter))).toContain(`at ["changes"][0]["after"]`)
      const partial = {
        ...withChange(2, noBefore),
        authority: "codex_aggregate_event",
        provenance: "provider_aggregate",
        exactness: "partial"
      }
      expect(Schema.decodeUnknownSync(PatchHistoryRecord)(partial).changes[2]).toEqual(noBefore)
    })
    it("a path changes at most once", () => {
      const dup = { ...record, changes: [...record.changes, { kind: "update", path: "README.md", before: snap("5"), after: snap("6") }] }
      expect(decodeFailure(PatchHistoryRecord, dup)).toContain(`changes twice\n  at ["changes"][6]["path"]`)
    })
  })

  describe("record invariants", () => {
    it("a provider aggregate is never exact", () => {
      expect(decodeFailure(PatchHistoryRecord, { ...record, authority: "codex_aggregate_event", provenance: "provider_aggregate" }))
        .toContain(`never exact; verification adds a linked record\n  at ["exactness"]`)
    })
    it("commit_state_uncertain is uncertain, gap is provenance unknown", () => {
      expect(decodeFailure(PatchHistoryRecord, { ...record, outcome: "commit_state_uncertain", provenance: "recovery" })).toContain(`at ["exactness"]`)
      expect(Schema.decodeUnknownSync(PatchHistoryRecord)({ ...record, outcome: "commit_state_uncertain", provenance: "recovery", exactness: "uncertain" }).outcome)
        .toBe("commit_state_uncertain")
      expect(decodeFailure(PatchHistoryRecord, { ...record, outcome: "gap" })).toContain(`at ["provenance"]`)
      expect(Schema.decodeUnknownSync(PatchHistoryRecord)({ ...record, transactionId: "gap:g-1", outcome: "gap", provenance: "unknown" }).outcome).toBe("gap")
    })
    it("rollbackOf matches a rollback:<txn> transaction id", () => {
      const ok = { ...record, transactionId: "rollback:subagent_merge:child-a", links: { rollbackOf: "subagent_merge:child-a" } }
      expect(Schema.decodeUnknownSync(PatchHistoryRecord)(ok).links.rollbackOf).toBe("subagent_merge:child-a")
      expect(decodeFailure(PatchHistoryRecord, { ...ok, links: {} })).toContain(`links.rollbackOf = "subagent_merge:child-a"\n  at ["links"]["rollbackOf"]`)
      expect(decodeFailure(PatchHistoryRecord, { ...ok, links: { rollbackOf: `patch:${UUID}` } })).toContain(`at ["links"]["rollbackOf"]`)
      expect(decodeFailure(PatchHistoryRecord, { ...record, links: { rollbackOf: `patch:${UUID}` } }))
        .toContain(`only a rollback:<txn> transaction may set links.rollbackOf\n  at ["links"]["rollbackOf"]`)
    })
  })
})
