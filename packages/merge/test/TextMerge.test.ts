/** The three-way text merge: byte-exact results, conflicts as hunks plus rendered markers, and the diff3 adapter. */
import { defaultLabels, type TextMerge, mergeText } from "@forkjoin/merge/TextMerge"
import { ConflictHunk } from "@forkjoin/schema/Conflict"
import * as Schema from "effect/Schema"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { anchored, type Diff3, diffLines, LCS_BUDGET, lcsCost, libraryNodeDiff3, nodeDiff3, regionsOverLibraryDiff } from "../src/internal/diff3.ts"
import { dominantEnding, splitLines } from "../src/internal/lines.ts"

const enc = (s: string): Uint8Array => new TextEncoder().encode(s)
const dec = (b: Uint8Array): string => new TextDecoder("utf-8", { ignoreBOM: true }).decode(b)
const BOM = "\uFEFF"

/** The merged text, or a readable failure naming what came back instead. */
const merged = (r: TextMerge): string => {
  if (r._tag !== "Merged") throw new Error(`expected Merged, got ${r._tag}: ${JSON.stringify(r)}`)
  return dec(r.bytes)
}
const conflictOf = (r: TextMerge) => {
  if (r._tag !== "Conflict") throw new Error(`expected Conflict, got ${r._tag}`)
  for (const h of r.hunks) Schema.decodeUnknownSync(ConflictHunk)(h)
  return r
}
const m = (base: string, ours: string, theirs: string) => mergeText(enc(base), enc(ours), enc(theirs))

// ---------------------------------------------------------------------------------------------
// Generators: files of unique lines with chosen endings, and edits with an unchanged line between
// any two (so each edit is a separate diff3 hunk and none touches another).

type Ending = "\n" | "\r\n" | "\r" | "mixed"

interface Edit {
  readonly at: number
  readonly del: number
  readonly ins: ReadonlyArray<string>
  readonly ours: boolean
}

interface Case {
  readonly base: ReadonlyArray<string>
  readonly ours: ReadonlyArray<string>
  readonly theirs: ReadonlyArray<string>
  readonly expected: ReadonlyArray<string>
  readonly bom: readonly [boolean, boolean, boolean]
}

const apply = (lines: ReadonlyArray<string>, edits: ReadonlyArray<Edit>): Array<string> => {
  const out = [...lines]
  // From the end, so earlier positions stay valid.
  for (const e of [...edits].sort((a, b) => b.at - a.at)) out.splice(e.at, e.del, ...e.ins)
  return out
}

const disjointCase = fc
  .record({
    n: fc.integer({ min: 1, max: 40 }),
    ending: fc.constantFrom<Ending>("\n", "\r\n", "\r", "mixed"),
    endingPicks: fc.array(fc.constantFrom("\n", "\r\n"), { minLength: 40, maxLength: 40 }),
    lastTerminated: fc.boolean(),
    bom: fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()),
    specs: fc.array(
      fc.record({ gap: fc.integer({ min: 0, max: 6 }), del: fc.integer({ min: 0, max: 3 }), ins: fc.integer({ min: 0, max: 3 }), ours: fc.boolean() }),
      { maxLength: 8 }
    )
  })
  .map(({ n, ending, endingPicks, lastTerminated, bom, specs }): Case => {
    const eol = (i: number) => (ending === "mixed" ? endingPicks[i % endingPicks.length]! : ending)
    const base = Array.from({ length: n }, (_, i) => `line ${i} ü€😀${i === n - 1 && !lastTerminated ? "" : eol(i)}`)
    const edits: Array<Edit> = []
    // The first edit may start at line 0; each next one leaves at least one unchanged line.
    let next = 0
    specs.forEach((s, k) => {
      const at = next + s.gap
      // Edits stay before the end: inserting after an unterminated last line would join lines.
      if (at >= n) return
      const del = Math.min(s.del, n - at)
      const ins = Array.from({ length: del === 0 && s.ins === 0 ? 1 : s.ins }, (_, i) => `${s.ours ? "ours" : "theirs"} edit ${k}.${i}${eol(at + i)}`)
      edits.push({ at, del, ins, ours: s.ours })
      next = at + del + 1
    })
    // A side that flips the base's BOM bit; both may flip (then they agree).
    const bomBits: readonly [boolean, boolean, boolean] = [bom[0], bom[1] ? !bom[0] : bom[0], bom[2] ? !bom[0] : bom[0]]
    return {
      base,
      ours: apply(base, edits.filter((e) => e.ours)),
      theirs: apply(base, edits.filter((e) => !e.ours)),
      expected: apply(base, edits),
      bom: bomBits
    }
  })

const bytesOf = (lines: ReadonlyArray<string>, bom: boolean) => enc((bom ? BOM : "") + lines.join(""))

/** Small files over a tiny alphabet: many repeated lines, so alignments are ambiguous. */
const repetitiveCase = fc
  .record({
    base: fc.array(fc.constantFrom<string>("a\n", "b\n", "}\n", "\n", "c"), { maxLength: 8 }),
    ours: fc.array(fc.tuple(fc.nat(9), fc.nat(3), fc.array(fc.constantFrom("a\n", "b\n", "}\n", "x\n"), { maxLength: 3 })), { maxLength: 3 }),
    theirs: fc.array(fc.tuple(fc.nat(9), fc.nat(3), fc.array(fc.constantFrom("a\n", "b\n", "}\n", "y\n"), { maxLength: 3 })), { maxLength: 3 })
  })
  .map(({ base, ours, theirs }) => {
    const edit = (specs: ReadonlyArray<readonly [number, number, ReadonlyArray<string>]>) => {
      const out = [...base]
      for (const [at, del, ins] of specs) out.splice(at % (out.length + 1), del, ...ins)
      return out
    }
    return { base, ours: edit(ours), theirs: edit(theirs) }
  })

// ---------------------------------------------------------------------------------------------

describe("mergeText: trivial sides", () => {
  const anyBytes = fc.oneof(fc.uint8Array({ maxLength: 40 }), fc.string({ maxLength: 40 }).map(enc))

  it("ours == base gives theirs exactly; theirs == base gives ours exactly (binary too)", () => {
    fc.assert(
      fc.property(anyBytes, anyBytes, (base, other) => {
        const a = mergeText(base, Uint8Array.from(base), other)
        expect(a).toEqual({ _tag: "Merged", bytes: other, bothChanged: false })
        const b = mergeText(base, other, Uint8Array.from(base))
        expect(b).toEqual({ _tag: "Merged", bytes: other, bothChanged: false })
      }),
      { numRuns: 500 }
    )
  })

  it("the same change on both sides converges to it", () => {
    fc.assert(
      fc.property(anyBytes, anyBytes, (base, x) => {
        fc.pre(Buffer.compare(base, x) !== 0)
        const r = mergeText(base, x, Uint8Array.from(x))
        expect(r._tag).toBe("Merged")
        if (r._tag === "Merged") {
          expect(Buffer.compare(r.bytes, x)).toBe(0)
          expect(r.bothChanged).toBe(true)
        }
      }),
      { numRuns: 500 }
    )
  })
})

describe("mergeText: edits in disjoint regions", () => {
  it("always auto-merge to both edits applied, byte for byte (endings, BOM, final newline)", () => {
    fc.assert(
      fc.property(disjointCase, (c) => {
        const [bb, bo, bt] = c.bom
        const r = mergeText(bytesOf(c.base, bb), bytesOf(c.ours, bo), bytesOf(c.theirs, bt))
        const bom = bo === bb ? bt : bo
        expect(r._tag).toBe("Merged")
        if (r._tag === "Merged") expect(dec(r.bytes)).toBe((bom ? BOM : "") + c.expected.join(""))
      }),
      { numRuns: 1500 }
    )
  })

  const engines: ReadonlyArray<readonly [string, Diff3]> = [
    ["sync points + anchored diffs (shipped)", anchored(nodeDiff3)],
    ["anchored two-way diffs, no sync points", nodeDiff3],
    ["region walk over node-diff3 diffIndices", regionsOverLibraryDiff],
    ["node-diff3 diff3Merge as is", libraryNodeDiff3]
  ]
  for (const [name, diff3] of engines) {
    it(`${name}: merges to both edits applied`, () => {
      fc.assert(
        fc.property(disjointCase, (c) => {
          const blocks = diff3(c.base, c.ours, c.theirs)
          expect(blocks.every((b) => b._tag === "Ok")).toBe(true)
          expect(blocks.flatMap((b) => (b._tag === "Ok" ? b.lines : []))).toEqual(c.expected)
        }),
        { numRuns: 500 }
      )
    })
  }
})

describe("the diff3 adapter", () => {
  it("the region walk over node-diff3's diffIndices equals node-diff3's own diff3Merge", () => {
    fc.assert(
      fc.property(repetitiveCase, ({ base, ours, theirs }) => {
        expect(regionsOverLibraryDiff(base, ours, theirs)).toEqual(libraryNodeDiff3(base, ours, theirs))
      }),
      { numRuns: 3000 }
    )
  })

  it("anchored two-way diffs turn base into the other side, hunks apart and in order", () => {
    fc.assert(
      fc.property(repetitiveCase, ({ base, ours }) => {
        const hunks = diffLines(base, ours)
        const out: Array<string> = []
        let at = 0
        hunks.forEach((h, i) => {
          // An unchanged line between any two hunks (the region walk relies on it).
          expect(h.oStart).toBeGreaterThanOrEqual(i === 0 ? 0 : at + 1)
          out.push(...base.slice(at, h.oStart), ...ours.slice(h.xStart, h.xStart + h.xLength))
          expect(h.oLength + h.xLength).toBeGreaterThan(0)
          at = h.oStart + h.oLength
        })
        out.push(...base.slice(at))
        expect(out).toEqual(ours)
      }),
      { numRuns: 3000 }
    )
  })

  it("a gap of only repeated lines too costly for node-diff3 becomes one changed region", () => {
    const o = Array.from({ length: 3000 }, (_, i) => ["a\n", "b\n", "\n"][i % 3]!)
    const x = [...o]
    x[10] = "X\n"
    x[2990] = "Y\n"
    expect(lcsCost(o, 10, 2991, x, 10, 2991)).toBeGreaterThan(LCS_BUDGET)
    expect(diffLines(o, x)).toEqual([{ oStart: 10, oLength: 2981, xStart: 10, xLength: 2981 }])
    // A short one still gets node-diff3's minimal diff.
    const short = o.slice(0, 30)
    const edited = [...short]
    edited[10] = "X\n"
    edited[20] = "Y\n"
    expect(lcsCost(short, 10, 21, edited, 10, 21)).toBeLessThan(LCS_BUDGET)
    expect(diffLines(short, edited)).toEqual([
      { oStart: 10, oLength: 1, xStart: 10, xLength: 1 },
      { oStart: 20, oLength: 1, xStart: 20, xLength: 1 }
    ])
  })

  it("every conflict hunk is the base lines at baseStart and a run of each side's lines", () => {
    const contains = (xs: ReadonlyArray<string>, run: ReadonlyArray<string>) =>
      xs.some((_, i) => run.every((l, j) => xs[i + j] === l)) || run.length === 0
    fc.assert(
      fc.property(repetitiveCase, ({ base, ours, theirs }) => {
        const r = mergeText(enc(base.join("")), enc(ours.join("")), enc(theirs.join("")))
        if (r._tag !== "Conflict") return
        expect(r.hunks.length).toBeGreaterThan(0)
        for (const h of r.hunks) {
          Schema.decodeUnknownSync(ConflictHunk)(h)
          expect(h.base).toEqual(splitLines(base.join("")).slice(h.baseStart - 1, h.baseStart - 1 + h.base.length))
          expect(contains(splitLines(ours.join("")), h.ours)).toBe(true)
          expect(contains(splitLines(theirs.join("")), h.theirs)).toBe(true)
          expect(h.ours).not.toEqual(h.theirs)
          expect(r.text).toContain(["<<<<<<< ours\n", ...h.ours].join(""))
        }
      }),
      { numRuns: 2000 }
    )
  })

  it("sync points do not change clean merges of unambiguous files", () => {
    fc.assert(
      fc.property(disjointCase, (c) => {
        expect(anchored(nodeDiff3)(c.base, c.ours, c.theirs)).toEqual(libraryNodeDiff3(c.base, c.ours, c.theirs))
      }),
      { numRuns: 300 }
    )
  })
})

describe("mergeText: byte-exact examples", () => {
  it("CRLF files merge with CRLF kept", () => {
    expect(merged(m("a\r\nb\r\nc\r\nd\r\ne\r\n", "a\r\nB\r\nc\r\nd\r\ne\r\n", "a\r\nb\r\nc\r\nD\r\ne\r\n"))).toBe("a\r\nB\r\nc\r\nD\r\ne\r\n")
  })

  it("mixed endings: every line keeps its own, and a changed ending is a changed line", () => {
    expect(merged(m("a\r\nb\nc\rd\r\ne\n", "A\r\nb\nc\rd\r\ne\n", "a\r\nb\nc\rd\r\ne\r\n"))).toBe("A\r\nb\nc\rd\r\ne\r\n")
    // ours turned line b's LF into CRLF, theirs edited line c next to it: a conflict, as in git.
    const r = conflictOf(m("a\nb\nc\n", "a\nb\r\nc\n", "a\nb\nC\n"))
    expect(r.hunks).toEqual([{ baseStart: 2, base: ["b\n", "c\n"], ours: ["b\r\n", "c\n"], theirs: ["b\n", "C\n"] }])
  })

  it("a lone CR is a line terminator", () => {
    expect(splitLines("a\rb\r\nc\n\rd")).toEqual(["a\r", "b\r\n", "c\n", "\r", "d"])
    expect(merged(m("a\rb\rc\rd\r", "A\rb\rc\rd\r", "a\rb\rc\rD\r"))).toBe("A\rb\rc\rD\r")
  })

  it("no final newline survives, and adding one is a change to the last line", () => {
    expect(merged(m("a\nb\nc\nd", "A\nb\nc\nd", "a\nb\nc\nD"))).toBe("A\nb\nc\nD")
    expect(merged(m("a\nb\nc\nd", "A\nb\nc\nd", "a\nb\nc\nd\n"))).toBe("A\nb\nc\nd\n")
    expect(merged(m("a\nb\nc\nd\n", "A\nb\nc\nd\n", "a\nb\nc\nd"))).toBe("A\nb\nc\nd")
    const r = conflictOf(m("a\nb", "a\nb\n", "a\nb\nc"))
    expect(r.hunks).toEqual([{ baseStart: 2, base: ["b"], ours: ["b\n"], theirs: ["b\n", "c"] }])
  })

  it("a BOM is kept, and one side's change to it wins", () => {
    const b = `${BOM}a\nb\nc\nd\n`
    expect(mergeText(enc(b), enc(`${BOM}A\nb\nc\nd\n`), enc(`${BOM}a\nb\nc\nD\n`))).toEqual({
      _tag: "Merged",
      bytes: enc(`${BOM}A\nb\nc\nD\n`),
      bothChanged: true
    })
    expect(merged(m(b, "A\nb\nc\nd\n", `${BOM}a\nb\nc\nD\n`))).toBe("A\nb\nc\nD\n")
    expect(merged(m("a\nb\nc\nd\n", "A\nb\nc\nd\n", `${BOM}a\nb\nc\nD\n`))).toBe(`${BOM}A\nb\nc\nD\n`)
    // Both removed it: they agree.
    expect(merged(m(b, "A\nb\nc\nd\n", "a\nb\nc\nD\n"))).toBe("A\nb\nc\nD\n")
    // The BOM is not part of the first line: adding it next to an edit of line 2 is no conflict.
    const bytes = (mergeText(enc("a\nb\nc\n"), enc(`${BOM}a\nb\nc\n`), enc("a\nB\nc\n")) as { bytes: Uint8Array }).bytes
    expect(Array.from(bytes.subarray(0, 3))).toEqual([0xef, 0xbb, 0xbf])
    expect(dec(bytes)).toBe(`${BOM}a\nB\nc\n`)
  })

  it("multi-byte UTF-8 merges byte-exactly", () => {
    expect(merged(m("α\nβ\nγ\nδ\n", "α😀\nβ\nγ\nδ\n", "α\nβ\nγ\nδ€\n"))).toBe("α😀\nβ\nγ\nδ€\n")
  })

  it("identical changes converge inside a merge with other changes", () => {
    expect(merged(m("a\nb\nc\nd\ne\n", "a\nB\nc\nD\ne\n", "a\nB\nc\nd\ne\n"))).toBe("a\nB\nc\nD\ne\n")
    expect(merged(m("a\nb\n", "a\nx\nb\n", "a\nx\nb\n"))).toBe("a\nx\nb\n")
    expect(merged(m("a\nb\nc\n", "a\nc\n", "a\nc\n"))).toBe("a\nc\n")
  })

  it("edits at the start and the end of the file merge", () => {
    expect(merged(m("a\nb\nc\nd\n", "A\nb\nc\nd\n", "a\nb\nc\nD\n"))).toBe("A\nb\nc\nD\n")
    expect(merged(m("a\nb\nc\n", "x\na\nb\nc\n", "a\nb\nc\ny\n"))).toBe("x\na\nb\nc\ny\n")
  })
})

describe("mergeText: conflicts", () => {
  it("overlapping edits: the hunk and the rendered text with markers", () => {
    const r = conflictOf(m("a\nb\nc\n", "a\nB\nc\n", "a\nX\nc\n"))
    expect(r.hunks).toEqual([{ baseStart: 2, base: ["b\n"], ours: ["B\n"], theirs: ["X\n"] }])
    expect(r.text).toBe("a\n<<<<<<< ours\nB\n||||||| base\nb\n=======\nX\n>>>>>>> theirs\nc\n")
  })

  it("adjacent edits, insertions at one point, and edits at the first line conflict (as in git)", () => {
    expect(conflictOf(m("a\nb\nc\nd\n", "a\nB\nc\nd\n", "a\nb\nC\nd\n")).hunks).toEqual([
      { baseStart: 2, base: ["b\n", "c\n"], ours: ["B\n", "c\n"], theirs: ["b\n", "C\n"] }
    ])
    expect(conflictOf(m("a\nb\n", "a\nx\nb\n", "a\ny\nb\n")).hunks).toEqual([{ baseStart: 2, base: [], ours: ["x\n"], theirs: ["y\n"] }])
    expect(conflictOf(m("a\nb\n", "a\nb\nx\n", "a\nb\ny\n")).hunks).toEqual([{ baseStart: 3, base: [], ours: ["x\n"], theirs: ["y\n"] }])
    expect(conflictOf(m("a\nb\nc\n", "A\nb\nc\n", "X\nb\nc\n")).hunks).toEqual([{ baseStart: 1, base: ["a\n"], ours: ["A\n"], theirs: ["X\n"] }])
  })

  it("delete vs edit of one line, and several hunks in one file", () => {
    expect(conflictOf(m("a\nb\nc\n", "a\nc\n", "a\nB\nc\n")).hunks).toEqual([{ baseStart: 2, base: ["b\n"], ours: [], theirs: ["B\n"] }])
    const r = conflictOf(m("a\nb\nc\nd\ne\nf\ng\n", "a\nB\nc\nd\ne\nF\ng\n", "a\nX\nc\nD\ne\nY\ng\n"))
    expect(r.hunks.map((h) => h.baseStart)).toEqual([2, 6])
    expect(r.text).toBe(
      "a\n<<<<<<< ours\nB\n||||||| base\nb\n=======\nX\n>>>>>>> theirs\nc\nD\ne\n<<<<<<< ours\nF\n||||||| base\nf\n=======\nY\n>>>>>>> theirs\ng\n"
    )
  })

  it("markers end with the file's dominant line ending", () => {
    const r = conflictOf(m("a\r\nb\r\nc\n", "a\r\nB\r\nc\n", "a\r\nX\r\nc\n"))
    expect(r.text).toBe("a\r\n<<<<<<< ours\r\nB\r\n||||||| base\r\nb\r\n=======\r\nX\r\n>>>>>>> theirs\r\nc\n")
    expect(dominantEnding([["a\n", "b\r\n", "c\r\n"]])).toBe("\r\n")
    expect(dominantEnding([["x"], ["a\r", "b\n"]])).toBe("\n")
    expect(dominantEnding([["x"], []])).toBe("\n")
  })

  it("a side without a final newline still gets each marker on its own line", () => {
    const r = conflictOf(m("a\nb", "a\nB", "a\nX"))
    expect(r.hunks).toEqual([{ baseStart: 2, base: ["b"], ours: ["B"], theirs: ["X"] }])
    expect(r.text).toBe("a\n<<<<<<< ours\nB\n||||||| base\nb\n=======\nX\n>>>>>>> theirs\n")
  })

  it("the rendered text keeps the merged BOM", () => {
    const r = conflictOf(mergeText(enc(`${BOM}a\n`), enc(`${BOM}b\n`), enc(`${BOM}c\n`)))
    expect(r.text).toBe(`${BOM}<<<<<<< ours\nb\n||||||| base\na\n=======\nc\n>>>>>>> theirs\n`)
  })

  it("the caller's labels name each side on its marker; the defaults are ours, base, theirs", () => {
    const labels = { ours: "workspace", base: "baseline", theirs: "second" }
    const r = conflictOf(mergeText(enc("a\nb\nc\n"), enc("a\nB\nc\n"), enc("a\nX\nc\n"), labels))
    expect(r.text).toBe("a\n<<<<<<< workspace\nB\n||||||| baseline\nb\n=======\nX\n>>>>>>> second\nc\n")
    expect(r.hunks).toEqual(conflictOf(m("a\nb\nc\n", "a\nB\nc\n", "a\nX\nc\n")).hunks)
    expect(defaultLabels).toEqual({ ours: "ours", base: "base", theirs: "theirs" })
  })

  it("a label cannot forge lines: line breaks and control characters in it become one space; an empty label leaves the bare marker", () => {
    const labels = { ours: "x\n=======\r\ninjected", base: "", theirs: " t\u0000\u2028>>>>>>> y " }
    const r = conflictOf(mergeText(enc("a\nb\nc\n"), enc("a\nB\nc\n"), enc("a\nX\nc\n"), labels))
    expect(r.text).toBe("a\n<<<<<<< x ======= injected\nB\n|||||||\nb\n=======\nX\n>>>>>>> t >>>>>>> y\nc\n")
    expect(r.text.split("\n").filter((l) => /^(<{7}|\|{7}|={7}|>{7})/.test(l))).toHaveLength(4)
  })

  it("an empty base: two different additions are one hunk", () => {
    const r = conflictOf(m("", "x\ny\n", "x\nz\n"))
    expect(r.hunks).toEqual([{ baseStart: 1, base: [], ours: ["x\n", "y\n"], theirs: ["x\n", "z\n"] }])
  })
})

describe("mergeText: binary content is not merged", () => {
  it("a NUL byte or invalid UTF-8 on any side, when both sides changed", () => {
    expect(mergeText(enc("a\n"), enc("b\n"), new Uint8Array([0x63, 0x00, 0x0a]))).toEqual({ _tag: "Binary" })
    expect(mergeText(enc("a\n"), new Uint8Array([0xff, 0x0a]), enc("c\n"))).toEqual({ _tag: "Binary" })
    expect(mergeText(new Uint8Array([0x00]), enc("b\n"), enc("c\n"))).toEqual({ _tag: "Binary" })
    // A NUL late in the file still makes it binary (the snapshot facts' rule).
    const late = enc(`${"x\n".repeat(5000)}\u0000\n`)
    expect(mergeText(enc("a\n"), enc("b\n"), late)).toEqual({ _tag: "Binary" })
  })
})
