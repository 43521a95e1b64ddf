/** A changeset is untrusted input: each problem gives the child status the join reports. */
import { describe, expect, it } from "@effect/vitest"
import { RelativePath, TaskId } from "@forkjoin/schema/Ids"
import * as Result from "effect/Result"
import { revalidate } from "../src/Revalidate.ts"

const H = (c: string) => `sha256:${c.repeat(64)}`
const facts = { bytes: 2, encoding: "utf8", lineEnding: "lf", finalNewline: true }
const good = () => ({
  schemaVersion: 1,
  childId: "t",
  taskId: "t",
  threadId: "run/t",
  writeScope: ["src"],
  exportable: true,
  limits: { maxFileBytes: 1024 },
  blobs: { addressing: "sha256", hashes: [H("b")] },
  entries: [{
    path: "src/a.ts",
    kind: "update",
    preimage: { path: "src/a.ts", hash: H("a"), ...facts },
    postimage: { path: "src/a.ts", hash: H("b"), ...facts },
    exportable: true
  }]
})
const task = { id: TaskId.make("t"), writeScope: [RelativePath.make("src")] }
const statusOf = (raw: unknown, t = task) => {
  const r = revalidate(raw, t)
  return Result.isSuccess(r) ? "ok" : `${r.failure.status}: ${r.failure.reason}`
}
const edit = (f: (c: ReturnType<typeof good>) => void) => {
  const c = good()
  f(c)
  return c
}

describe("revalidate", () => {
  it("accepts a well-formed changeset of this task", () => {
    expect(statusOf(good())).toBe("ok")
  })

  it.each([
    ["not an object", [], /^invalid_changeset: the changeset is not a JSON object/],
    ["unknown schema version", edit((c) => { c.schemaVersion = 2 }), /^invalid_changeset: unknown changeset schemaVersion 2/],
    ["empty writeScope", edit((c) => { c.writeScope = [] }), /^scope_violation: missing_or_invalid_write_scope/],
    ["escaping writeScope", edit((c) => { c.writeScope = ["../x"] }), /^scope_violation: missing_or_invalid_write_scope/],
    ["entry outside the scope", edit((c) => { c.writeScope = ["lib"] }), /^scope_violation: entries\[0\]\.path "src\/a\.ts" is outside/],
    ["scope wider than the task's", edit((c) => { c.writeScope = ["src", "lib"] }), /^scope_violation: the changeset's writeScope \["lib"\] is not within/],
    ["postimage path differs", edit((c) => { c.entries[0]!.postimage.path = "src/b.ts" }), /^invalid_changeset_path: entries\[0\]\.postimage\.path "src\/b\.ts" differs/],
    ["'..' in a path", edit((c) => { c.entries[0]!.path = "src/../../etc" }), /^invalid_changeset_path: entries\[0\]\.path/],
    ["absolute path", edit((c) => { c.entries[0]!.path = "/etc/passwd" }), /^invalid_changeset_path: entries\[0\]\.path "\/etc\/passwd"/],
    ["duplicate paths", edit((c) => { c.entries.push({ ...c.entries[0]! }) }), /^invalid_changeset: at entries\.1\.path: .*also/],
    ["blob not listed", edit((c) => { c.blobs.hashes = [] }), /^invalid_changeset: at entries\.0\.postimage\.hash/],
    ["an unknown key", edit((c) => { Object.assign(c, { extra: 1 }) }), /^invalid_changeset: at extra/],
    ["another child's changeset", edit((c) => { c.childId = "u" }), /^invalid_changeset: the changeset belongs to child "u"/]
  ] as const)("%s", (_name, raw, expected) => {
    expect(statusOf(raw)).toMatch(expected)
  })
})
