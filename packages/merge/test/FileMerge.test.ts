/** `mergeFile`: every case of absent and present sides, and what each conflict carries. */
import { type FileMergeOutcome, mergeFile, type Side } from "@forkjoin/merge/FileMerge"
import { ConflictHunk } from "@forkjoin/schema/Conflict"
import * as Schema from "effect/Schema"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

const enc = (s: string): Uint8Array => new TextEncoder().encode(s)
const binary = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01])
const binary2 = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x00, 0x02])

const conflictOf = (r: FileMergeOutcome) => {
  if (r._tag !== "Conflict") throw new Error(`expected Conflict, got ${r._tag}`)
  return r
}

/** A non-text conflict: no hunks, and one line of explanation. */
const explained = (r: FileMergeOutcome, reason: string) => {
  const c = conflictOf(r)
  expect(c.reason).toBe(reason)
  expect(c.hunks).toEqual([])
  expect(c.text.length).toBeGreaterThan(20)
  expect(c.text).not.toContain("\n")
  expect(c.text).toMatch(/apply/)
  expect(c.text).toMatch(/discard/)
  return c
}

describe("mergeFile: one side changed, or both the same", () => {
  it("theirs == base is Unchanged (also both absent, and ours deleted or added on its own)", () => {
    expect(mergeFile({ base: enc("a\n"), ours: enc("b\n"), theirs: enc("a\n") })).toEqual({ _tag: "Unchanged" })
    expect(mergeFile({ base: undefined, ours: undefined, theirs: undefined })).toEqual({ _tag: "Unchanged" })
    expect(mergeFile({ base: enc("a\n"), ours: undefined, theirs: enc("a\n") })).toEqual({ _tag: "Unchanged" })
    expect(mergeFile({ base: undefined, ours: enc("new\n"), theirs: undefined })).toEqual({ _tag: "Unchanged" })
    expect(mergeFile({ base: binary, ours: binary2, theirs: Uint8Array.from(binary) })).toEqual({ _tag: "Unchanged" })
  })

  it("ours == base is TakeTheirs: an edit, a deletion (undefined) or a creation", () => {
    expect(mergeFile({ base: enc("a\n"), ours: enc("a\n"), theirs: enc("b\n") })).toEqual({ _tag: "TakeTheirs", bytes: enc("b\n") })
    expect(mergeFile({ base: enc("a\n"), ours: enc("a\n"), theirs: undefined })).toEqual({ _tag: "TakeTheirs", bytes: undefined })
    expect(mergeFile({ base: undefined, ours: undefined, theirs: enc("new\n") })).toEqual({ _tag: "TakeTheirs", bytes: enc("new\n") })
    expect(mergeFile({ base: binary, ours: Uint8Array.from(binary), theirs: binary2 })).toEqual({ _tag: "TakeTheirs", bytes: binary2 })
  })

  it("ours == theirs is Converged: the same edit, the same addition, both deleted", () => {
    expect(mergeFile({ base: enc("a\n"), ours: enc("b\n"), theirs: enc("b\n") })).toEqual({ _tag: "Converged" })
    expect(mergeFile({ base: undefined, ours: enc("new\n"), theirs: enc("new\n") })).toEqual({ _tag: "Converged" })
    expect(mergeFile({ base: enc("a\n"), ours: undefined, theirs: undefined })).toEqual({ _tag: "Converged" })
    expect(mergeFile({ base: binary, ours: binary2, theirs: Uint8Array.from(binary2) })).toEqual({ _tag: "Converged" })
  })
})

describe("mergeFile: both changed text", () => {
  it("non-overlapping edits are AutoMerged", () => {
    expect(mergeFile({ base: enc("a\nb\nc\nd\n"), ours: enc("A\nb\nc\nd\n"), theirs: enc("a\nb\nc\nD\n") })).toEqual({
      _tag: "AutoMerged",
      bytes: enc("A\nb\nc\nD\n"),
      method: "line"
    })
  })

  it("overlapping edits are an overlapping_edits conflict with hunks and markers", () => {
    const c = conflictOf(mergeFile({ base: enc("a\nb\nc\n"), ours: enc("a\nB\nc\n"), theirs: enc("a\nX\nc\n") }))
    expect(c.reason).toBe("overlapping_edits")
    expect(c.hunks).toEqual([{ baseStart: 2, base: ["b\n"], ours: ["B\n"], theirs: ["X\n"] }])
    expect(c.text).toBe("a\n<<<<<<< ours\nB\n||||||| base\nb\n=======\nX\n>>>>>>> theirs\nc\n")
  })
})

describe("mergeFile: conflicts without hunks", () => {
  it("binary content changed on both sides", () => {
    explained(mergeFile({ base: binary, ours: binary2, theirs: new Uint8Array([1, 0]) }), "binary")
    // One side turned a text file into binary content.
    explained(mergeFile({ base: enc("a\n"), ours: enc("b\n"), theirs: binary }), "binary")
  })

  it("ours deleted what theirs edited: delete_vs_edit", () => {
    const c = explained(mergeFile({ base: enc("a\n"), ours: undefined, theirs: enc("b\n") }), "delete_vs_edit")
    expect(c.text).toMatch(/ours deleted.*theirs edited/)
  })

  it("ours edited what theirs deleted: edit_vs_delete", () => {
    const c = explained(mergeFile({ base: enc("a\n"), ours: enc("b\n"), theirs: undefined }), "edit_vs_delete")
    expect(c.text).toMatch(/ours edited.*theirs deleted/)
  })
})

describe("mergeFile: the explanations name the sides as the caller does", () => {
  const names = { ours: "the workspace", theirs: "this child", oursVersion: "the workspace's version", theirsVersion: "this child's version" }
  const texts = [
    mergeFile({ base: enc("a\n"), ours: undefined, theirs: enc("b\n") }, undefined, { names }),
    mergeFile({ base: enc("a\n"), ours: enc("b\n"), theirs: undefined }, undefined, { names }),
    mergeFile({ base: binary, ours: binary2, theirs: new Uint8Array([1, 0]) }, undefined, { names }),
    mergeFile({ base: undefined, ours: binary, theirs: binary2 }, undefined, { names }),
    mergeFile({ base: undefined, ours: new Uint8Array(0), theirs: enc("x\n") }, undefined, { names })
  ].map((r) => conflictOf(r).text)

  it("no explanation speaks of ours or theirs", () => {
    for (const text of texts) {
      expect(text).not.toMatch(/\b(ours|theirs)\b/)
      expect(text).toContain("this child")
    }
    expect(texts[0]).toMatch(/^the workspace deleted this file and this child edited it: apply to restore this child's version/)
    expect(texts[1]).toMatch(/^the workspace edited this file and this child deleted it: .*discard to keep the workspace's version/)
  })
})

describe("mergeFile: both added the path with different content (add_vs_add)", () => {
  it("text: one hunk from merging against an empty base, and the markers", () => {
    const c = conflictOf(mergeFile({ base: undefined, ours: enc("x\ny\n"), theirs: enc("x\nz\n") }))
    expect(c.reason).toBe("add_vs_add")
    expect(c.hunks).toEqual([{ baseStart: 1, base: [], ours: ["x\n", "y\n"], theirs: ["x\n", "z\n"] }])
    expect(c.text).toBe("<<<<<<< ours\nx\ny\n||||||| base\n=======\nx\nz\n>>>>>>> theirs\n")
  })

  it("the caller's labels reach the markers of both text conflicts", () => {
    const labels = { ours: "workspace", base: "baseline", theirs: "second" }
    const added = conflictOf(mergeFile({ base: undefined, ours: enc("x\ny\n"), theirs: enc("x\nz\n") }, labels))
    expect(added.text).toBe("<<<<<<< workspace\nx\ny\n||||||| baseline\n=======\nx\nz\n>>>>>>> second\n")
    const edited = conflictOf(mergeFile({ base: enc("a\n"), ours: enc("b\n"), theirs: enc("c\n") }, labels))
    expect(edited.text).toBe("<<<<<<< workspace\nb\n||||||| baseline\na\n=======\nc\n>>>>>>> second\n")
  })

  it("binary, one side empty, or only the BOM differing: explained", () => {
    explained(mergeFile({ base: undefined, ours: binary, theirs: binary2 }), "add_vs_add")
    explained(mergeFile({ base: undefined, ours: new Uint8Array(0), theirs: enc("x\n") }), "add_vs_add")
    explained(mergeFile({ base: undefined, ours: enc("\uFEFFx\n"), theirs: enc("x\n") }), "add_vs_add")
  })
})

describe("mergeFile is total", () => {
  const side: fc.Arbitrary<Side> = fc.oneof(
    fc.constant(undefined),
    fc.constantFrom("", "a\n", "b\n", "a\nb\n", "a\nB\n", "A\nb\n", "a\r\nb\r\n", "\uFEFFa\nb\n").map(enc),
    fc.constantFrom(binary, binary2)
  )

  it("every combination of sides gives a consistent outcome", () => {
    fc.assert(
      fc.property(side, side, side, (base, ours, theirs) => {
        const r = mergeFile({ base, ours, theirs })
        const same = (a: Side, b: Side) => (a === undefined ? b === undefined : b !== undefined && Buffer.compare(a, b) === 0)
        switch (r._tag) {
          case "Unchanged":
            expect(same(theirs, base)).toBe(true)
            break
          case "TakeTheirs":
            expect(same(ours, base)).toBe(true)
            expect(r.bytes).toBe(theirs)
            break
          case "Converged":
            expect(same(ours, theirs)).toBe(true)
            break
          case "AutoMerged":
            expect([base, ours, theirs].every((s) => s !== undefined)).toBe(true)
            break
          case "Conflict": {
            expect(same(ours, base) || same(theirs, base) || same(ours, theirs)).toBe(false)
            const textual = r.reason === "overlapping_edits" || (r.reason === "add_vs_add" && r.hunks.length > 0)
            expect(r.hunks.length > 0).toBe(textual)
            for (const h of r.hunks) Schema.decodeUnknownSync(ConflictHunk)(h)
            expect(r.text.length).toBeGreaterThan(0)
            if (textual) expect(r.text).toContain("<<<<<<< ours")
            const expected = base === undefined ? "add_vs_add" : ours === undefined ? "delete_vs_edit" : theirs === undefined ? "edit_vs_delete" : undefined
            if (expected !== undefined) expect(r.reason).toBe(expected)
            else expect(["overlapping_edits", "binary"]).toContain(r.reason)
          }
        }
      }),
      { numRuns: 1000 }
    )
  })
})
