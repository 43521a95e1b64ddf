/**
 * `applyTheirsHunks` (what `resolve --apply` does to a text conflict) and `TextMerge.takeTheirs`:
 * the child's side of the conflicting hunks only, onto the live file, every other region kept.
 */
import { applyTheirsHunks, mergeFile } from "@forkjoin/merge/FileMerge"
import { takeTheirs } from "@forkjoin/merge/TextMerge"
import { describe, expect, it } from "vitest"

const enc = (s: string): Uint8Array => new TextEncoder().encode(s)
const dec = (b: Uint8Array): string => new TextDecoder("utf-8", { ignoreBOM: true }).decode(b)

/** `n` numbered lines, with `edits` (1-based line → text) applied. */
const file = (n: number, edits: Readonly<Record<number, string>> = {}, eol = "\n"): string =>
  Array.from({ length: n }, (_, i) => `${edits[i + 1] ?? `line${i + 1}`}${eol}`).join("")

/** The conflict the join records for these sides, and its hunks. */
const heldHunks = (base: string, ours: string, theirs: string) => {
  const r = mergeFile({ base: enc(base), ours: enc(ours), theirs: enc(theirs) })
  if (r._tag !== "Conflict") throw new Error(`expected a conflict, got ${r._tag}`)
  return r.hunks
}

const applied = (r: ReturnType<typeof applyTheirsHunks>): string => {
  if (r._tag !== "Applied") throw new Error(`expected Applied, got ${JSON.stringify(r)}`)
  return dec(r.bytes)
}

describe("applyTheirsHunks", () => {
  // Sibling A changed line 2 (live); the child changed line 2 differently and line 10.
  const base = file(30)
  const joinedLive = file(30, { 2: "A2" })
  const theirs = file(30, { 2: "B2", 10: "B10" })
  const held = heldHunks(base, joinedLive, theirs)

  it("takes the child's side of the conflicting hunk and keeps every region only the live file changed", () => {
    expect(held).toHaveLength(1)
    // Sibling C joined line 20 after the conflict was recorded.
    const live = file(30, { 2: "A2", 20: "C20" })
    expect(applied(applyTheirsHunks({ base: enc(base), ours: enc(live), theirs: enc(theirs) }, held))).toBe(file(30, { 2: "B2", 10: "B10", 20: "C20" }))
    // Against the live file the join saw.
    expect(applied(applyTheirsHunks({ base: enc(base), ours: enc(joinedLive), theirs: enc(theirs) }, held))).toBe(file(30, { 2: "B2", 10: "B10" }))
  })

  it("keeps line endings, the byte order mark and the missing final newline byte for byte", () => {
    const crlf = (edits: Readonly<Record<number, string>>) => "\uFEFF" + file(12, edits, "\r\n").slice(0, -2)
    const b = crlf({})
    const o = crlf({ 3: "ours3", 12: "ours12" })
    const t = crlf({ 3: "theirs3", 7: "theirs7" })
    const r = applyTheirsHunks({ base: enc(b), ours: enc(o), theirs: enc(t) }, heldHunks(b, o, t))
    expect(applied(r)).toBe(crlf({ 3: "theirs3", 7: "theirs7", 12: "ours12" }))
  })

  it("is stale when the live file changed inside a conflicting region, was deleted, or became binary", () => {
    const inside = file(30, { 2: "edited by hand" })
    expect(applyTheirsHunks({ base: enc(base), ours: enc(inside), theirs: enc(theirs) }, held)._tag).toBe("Stale")
    // A new conflict next to the held one widens it: not what the user saw either.
    const next = file(30, { 2: "A2", 3: "by hand" })
    expect(applyTheirsHunks({ base: enc(base), ours: enc(next), theirs: enc(theirs) }, held)._tag).toBe("Stale")
    expect(applyTheirsHunks({ base: enc(base), ours: undefined, theirs: enc(theirs) }, held)._tag).toBe("Stale")
    expect(applyTheirsHunks({ base: enc(base), ours: new Uint8Array([0, 1, 2]), theirs: enc(theirs) }, held)._tag).toBe("Stale")
  })

  it("gives the child's version when the live file went back to the base, and the live file when it already holds the child's side", () => {
    expect(applied(applyTheirsHunks({ base: enc(base), ours: enc(base), theirs: enc(theirs) }, held))).toBe(theirs)
    expect(applied(applyTheirsHunks({ base: enc(base), ours: enc(file(30, { 2: "B2", 10: "B10", 20: "C20" })), theirs: enc(theirs) }, held))).toBe(
      file(30, { 2: "B2", 10: "B10", 20: "C20" })
    )
  })
})

describe("takeTheirs", () => {
  it("lists the regions it settled with theirs, and none when the sides do not overlap", () => {
    const r = takeTheirs(enc("a\nb\nc\n"), enc("a\nB-ours\nc\n"), enc("a\nB-theirs\nc\nd\n"))
    expect(r).toEqual({ _tag: "Merged", bytes: enc("a\nB-theirs\nc\nd\n"), taken: [{ baseStart: 2, base: ["b\n"], ours: ["B-ours\n"], theirs: ["B-theirs\n"] }] })
    const clean = takeTheirs(enc("a\nb\nc\n"), enc("A\nb\nc\n"), enc("a\nb\nC\n"))
    expect(clean).toEqual({ _tag: "Merged", bytes: enc("A\nb\nC\n"), taken: [] })
    expect(takeTheirs(enc("a\n"), enc("a\0\n"), enc("b\n"))).toEqual({ _tag: "Binary" })
  })
})
