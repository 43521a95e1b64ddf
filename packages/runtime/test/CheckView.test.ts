/**
 * The check's view is a copy: a changeset whose path runs through a workspace link leading out
 * of the workspace writes in the copy, never where the link points, and the copy holds no link
 * leading out.
 */
import { Changeset } from "@forkjoin/schema"
import { sha256 } from "@forkjoin/patch/Bytes"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { makeMemory } from "../src/BlobStore.ts"
import * as CheckView from "../src/CheckView.ts"
import { fingerprint, makeWorkspace, removeSandboxes } from "./helpers.ts"

const outside = fs.mkdtempSync(path.join(os.tmpdir(), "fj-checkview-outside-"))
afterAll(() => {
  removeSandboxes()
  fs.rmSync(outside, { recursive: true, force: true })
})

const adding = (rel: string, bytes: string) => {
  const image = { path: rel, hash: sha256(bytes), bytes: bytes.length, encoding: "utf8", lineEnding: "lf", finalNewline: true }
  return Schema.decodeUnknownSync(Changeset)({
    schemaVersion: 1, childId: "t", taskId: "t", threadId: "t", writeScope: [rel.split("/")[0]], exportable: true,
    limits: { maxFileBytes: 1_000_000 }, blobs: { addressing: "sha256", hashes: [image.hash] },
    entries: [{ path: rel, kind: "add", exportable: true, postimage: image }]
  })
}

describe("CheckView.make", () => {
  it("a path through a link leading out of the workspace is written in the copy, and the link is not copied", async () => {
    const ws = makeWorkspace({ "a/f.txt": "f\n" })
    fs.symlinkSync(outside, path.join(ws, "out"))
    const before = fingerprint(ws)
    const blobs = makeMemory()
    await Effect.runPromise(blobs.put(new TextEncoder().encode("planted\n")))
    const view = await Effect.runPromise(CheckView.make(ws, adding("out/planted.txt", "planted\n"), blobs))
    try {
      expect(fs.lstatSync(path.join(view, "out")).isDirectory()).toBe(true)
      expect(fs.readFileSync(path.join(view, "out/planted.txt"), "utf8")).toBe("planted\n")
      expect(fs.readdirSync(outside)).toEqual([])
      expect(fingerprint(ws)).toEqual(before)
    } finally {
      await Effect.runPromise(CheckView.remove(view))
    }
    expect(fs.existsSync(view)).toBe(false)
  })

})
