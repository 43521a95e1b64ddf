import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { Snapshot } from "../src/Snapshot.ts"
import { decodeFailure } from "./helpers.ts"

const valid = {
  hash: `sha256:${"ab".repeat(32)}`,
  bytes: 12,
  encoding: "utf8-bom",
  lineEnding: "crlf",
  finalNewline: true,
  mode: 0o644
}

describe("Snapshot", () => {
  it("decodes a valid snapshot unchanged", () => {
    expect(Schema.decodeUnknownSync(Snapshot)(valid)).toEqual(valid)
  })

  it("names the offending field", () => {
    expect(decodeFailure(Snapshot, { ...valid, hash: "sha256:nope" })).toMatch(/Sha256Hash must be[\s\S]*at \["hash"\]/)
    expect(decodeFailure(Snapshot, { ...valid, encoding: "latin1" })).toMatch(/Expected "utf8" \| "utf8-bom" \| "binary"\n  at \["encoding"\]/)
    expect(decodeFailure(Snapshot, { ...valid, lineEnding: "cr" })).toContain(`at ["lineEnding"]`)
    expect(decodeFailure(Snapshot, { ...valid, bytes: -1 })).toContain(`at ["bytes"]`)
    expect(decodeFailure(Snapshot, { ...valid, bytes: 1.5 })).toContain(`at ["bytes"]`)
    expect(decodeFailure(Snapshot, { ...valid, finalNewline: "yes" })).toContain(`at ["finalNewline"]`)
    const { mode: _, ...noMode } = valid
    expect(decodeFailure(Snapshot, noMode)).toMatch(/Missing key\n  at \["mode"\]/)
  })

  it("keeps only permission bits in mode", () => {
    expect(decodeFailure(Snapshot, { ...valid, mode: 0o100644 })).toContain(`at ["mode"]`)
    expect(decodeFailure(Snapshot, { ...valid, mode: -1 })).toContain(`at ["mode"]`)
    expect(Schema.decodeUnknownSync(Snapshot)({ ...valid, mode: 0o7777 }).mode).toBe(0o7777)
  })
})
