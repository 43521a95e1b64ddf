/**
 * Reading a child's `changeset.json`: a syntax error is `invalid_changeset` saying at which line
 * and column the file stops being JSON; invalid UTF-8 and a missing file say so too.
 */
import { afterEach, assert, describe, it } from "@effect/vitest"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { readChildChangeset } from "../src/internal/changesetFile.ts"

const made: Array<string> = []
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

const namespaceWith = (bytes: string | Uint8Array | undefined): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fj-changeset-file-"))
  made.push(dir)
  if (bytes !== undefined) fs.writeFileSync(path.join(dir, "changeset.json"), bytes)
  return dir
}

describe("readChildChangeset", () => {
  it("a syntax error at line 3, column 5 says so", () => {
    const ns = namespaceWith("{\n  \"schemaVersion\": 1\n    \"childId\": \"c\"\n}\n")
    const r = readChildChangeset(ns)
    assert.isTrue(Result.isFailure(r))
    if (Result.isSuccess(r)) return
    assert.strictEqual(r.failure.status, "invalid_changeset")
    assert.include(r.failure.reason, `the changeset ${path.join(ns, "changeset.json")} is not JSON (line 3, column 5: expected ',' or '}', found '"')`)
  })

  it("JSON is returned as parsed, undecoded", () => {
    assert.deepStrictEqual(readChildChangeset(namespaceWith("{\"schemaVersion\": 1}")), Result.succeed({ schemaVersion: 1 }))
  })

  it("invalid UTF-8 is not JSON; no file is missing_changeset", () => {
    const bad = readChildChangeset(namespaceWith(new Uint8Array([0x7b, 0xff, 0x7d])))
    assert.isTrue(Result.isFailure(bad) && bad.failure.status === "invalid_changeset" && bad.failure.reason.includes("is not JSON ("))
    const missing = readChildChangeset(namespaceWith(undefined))
    assert.isTrue(Result.isFailure(missing) && missing.failure.status === "missing_changeset")
  })
})
