/** The Changeset schema (SPEC §6.3): shape, cross-field rules, and strict decoding of untrusted input. */
import {
  Changeset,
  type ChangesetEncoded,
  ChangesetFromJson,
  decodeUntrustedChangeset,
  decodeUntrustedChangesetJson
} from "@forkjoin/schema"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"

const hash = (c: string) => `sha256:${c.repeat(64)}`
const facts = { bytes: 4, encoding: "utf8", lineEnding: "lf", finalNewline: true } as const
const pre = (path: string, c: string) => ({ path, hash: hash(c), ...facts, mode: 0o644 })
const post = (path: string, c: string) => ({ path, hash: hash(c), ...facts })

const valid = {
  schemaVersion: 1,
  childId: "edit-a",
  taskId: "edit-a",
  threadId: "thread-child-a",
  writeScope: ["docs/readme.md", "src/a"],
  exportable: false,
  limits: { maxFileBytes: 16 * 1024 * 1024 },
  blobs: { addressing: "sha256", hashes: [hash("1"), hash("2")] },
  entries: [
    { path: "docs/readme.md", kind: "update", preimage: pre("docs/readme.md", "a"), postimage: post("docs/readme.md", "1"), exportable: true },
    { path: "src/a/big.bin", kind: "add", postimage: post("src/a/big.bin", "9"), exportable: false, reason: { code: "postimage_too_large", message: "too big" } },
    { path: "src/a/gone.ts", kind: "delete", preimage: pre("src/a/gone.ts", "b"), exportable: true },
    { path: "src/a/new.ts", kind: "move", moveFrom: "src/a/old.ts", preimage: pre("src/a/old.ts", "c"), postimage: post("src/a/new.ts", "c"), exportable: true },
    { path: "src/a/x.png", kind: "replace", preimage: pre("src/a/x.png", "d"), postimage: post("src/a/x.png", "2"), exportable: true }
  ]
} satisfies ChangesetEncoded

const withoutKey = (i: number, key: string) => ({
  ...valid,
  entries: valid.entries.map((e, j) => (j === i ? Object.fromEntries(Object.entries(e).filter(([k]) => k !== key)) : e))
})

const failure = (input: unknown): string => {
  const r = decodeUntrustedChangeset(input)
  if (Result.isSuccess(r)) throw new Error("expected the changeset to be rejected")
  return r.failure.message
}

const withEntry = (i: number, patch: object) => ({
  ...valid,
  entries: valid.entries.map((e, j) => (j === i ? { ...e, ...patch } : e))
})

describe("Changeset schema", () => {
  it("decodes a valid changeset and round-trips through JSON", () => {
    const r = decodeUntrustedChangeset(valid)
    expect(Result.isSuccess(r)).toBe(true)
    const decoded = Schema.decodeUnknownSync(Changeset)(valid)
    const json = Schema.encodeSync(ChangesetFromJson)(decoded)
    expect(JSON.parse(json)).toEqual(valid)
    const again = decodeUntrustedChangesetJson(json)
    expect(Result.isSuccess(again) && again.success).toEqual(decoded)
  })

  it("rejects excess properties at every level when decoding untrusted input", () => {
    expect(failure({ ...valid, extra: true })).toMatch(/extra/)
    expect(failure(withEntry(0, { content: "inline text" }))).toMatch(/content/)
    expect(failure(withEntry(0, { preimage: { ...pre("docs/readme.md", "a"), restorable: true } }))).toMatch(/restorable/)
    expect(failure({ ...valid, blobs: { ...valid.blobs, dir: "/tmp" } })).toMatch(/dir/)
    expect(Result.isFailure(decodeUntrustedChangesetJson(JSON.stringify({ ...valid, x: 1 })))).toBe(true)
    // The lenient default strips them, which is exactly why untrusted input must not use it.
    expect(Schema.decodeUnknownSync(Changeset)({ ...valid, extra: true })).not.toHaveProperty("extra")
  })

  it("rejects unknown versions, bad ids and unnormalized paths", () => {
    expect(failure({ ...valid, schemaVersion: 2 })).toMatch(/schemaVersion/)
    expect(failure({ ...valid, childId: "../etc" })).toMatch(/TaskId/)
    expect(failure(withEntry(2, { path: "src/a/../gone.ts", preimage: pre("src/a/../gone.ts", "b") }))).toMatch(/RelativePath/)
    expect(failure({ ...valid, writeScope: ["/abs"] })).toMatch(/RelativePath/)
  })

  it("requires a non-empty scope covering every entry path and move source", () => {
    expect(failure({ ...valid, writeScope: [] })).toMatch(/non-empty writeScope/)
    expect(failure({ ...valid, writeScope: ["src/a", "src/a"] })).toMatch(/twice/)
    expect(failure({ ...valid, writeScope: ["src/a"] })).toMatch(/"docs\/readme\.md" is outside the writeScope/)
    expect(failure(withEntry(3, { moveFrom: "src/ab/old.ts", preimage: pre("src/ab/old.ts", "c") }))).toMatch(
      /moveFrom of an entry "src\/ab\/old\.ts" is outside/
    )
  })

  it("requires image paths to match their entry (a move's preimage names its source)", () => {
    expect(failure(withEntry(0, { postimage: post("docs/other.md", "1") }))).toMatch(/postimage path must be/)
    expect(failure(withEntry(0, { preimage: pre("docs/other.md", "a") }))).toMatch(/preimage path must be/)
    expect(failure(withEntry(3, { preimage: pre("src/a/new.ts", "c") }))).toMatch(/preimage path must be the entry's moveFrom/)
  })

  it("requires the sides each kind implies", () => {
    expect(failure(withoutKey(0, "preimage"))).toMatch(/update entry needs a preimage/)
    expect(failure({ ...withEntry(1, { preimage: pre("src/a/big.bin", "e") }) })).toMatch(/add entry has no preimage/)
    expect(failure(withEntry(2, { postimage: post("src/a/gone.ts", "1") }))).toMatch(/delete entry has no postimage/)
    expect(failure(withoutKey(3, "moveFrom"))).toMatch(/move entry needs moveFrom/)
    expect(failure(withEntry(3, { moveFrom: "src/a/new.ts", preimage: pre("src/a/new.ts", "c") }))).toMatch(/must differ/)
    expect(failure(withEntry(4, { moveFrom: "src/a/y.png" }))).toMatch(/only a move entry may have moveFrom/)
    expect(failure(withEntry(4, { overwritten: pre("src/a/x.png", "d") }))).toMatch(/only a move entry may have overwritten/)
  })

  it("keeps exportability honest: reasons, the conjunction, and stored blobs", () => {
    expect(failure(withoutKey(1, "reason"))).toMatch(/needs a reason/)
    expect(failure(withEntry(0, { reason: { code: "postimage_too_large", message: "x" } }))).toMatch(/exportable entry has no reason/)
    expect(failure({ ...valid, exportable: true })).toMatch(/exportable must be false/)
    expect(failure({ ...valid, blobs: { addressing: "sha256", hashes: [hash("1")] } })).toMatch(/listed in blobs\.hashes/)
    expect(failure({ ...valid, blobs: { addressing: "sha256", hashes: [hash("1"), hash("1"), hash("2")] } })).toMatch(/twice/)
    // A pure move (content unchanged) needs no blob: the parent moves the verified source.
    expect(Result.isSuccess(decodeUntrustedChangeset(valid))).toBe(true)
  })

  it("refuses two entries for one path, including a move source that is also an entry", () => {
    expect(failure({ ...valid, entries: [...valid.entries, valid.entries[0]] })).toMatch(/is also the path of an entry/)
    expect(
      failure({
        ...valid,
        entries: [...valid.entries, { path: "src/a/old.ts", kind: "delete", preimage: pre("src/a/old.ts", "c"), exportable: true }]
      })
    ).toMatch(/"src\/a\/old\.ts" is also/)
  })
})
