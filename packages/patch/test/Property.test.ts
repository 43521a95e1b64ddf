/**
 * Property tests: the parser and planner are total (never throw, whatever the input), plans
 * are well-formed, and a generated in-order patch applies exactly.
 */
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as Result from "effect/Result"
import { parsePatch, type Profile } from "../src/index.ts"
import { dec, patchOf, plan } from "./helpers.ts"

const ATOMS = [
  "*** Begin Patch", "*** End Patch", "*** Add File: a.txt", "*** Delete File: a.txt", "*** Update File: a.txt",
  "*** Update File: ../x", "*** Update File: /abs", "*** Move to: b.txt", "*** Move to: a.txt", "*** End of File",
  "@@", "@@ ctx", "@@ ", "+", "-", " ", "+line", "-line", " line", " ctx", "", "\r", "\uFEFF", "\u0085", "<<EOF", "EOF",
  "\u2014", "\u00A0", "x", "*", "***", "\u0000"
]
const lineArb = fc.oneof(fc.constantFrom(...ATOMS), fc.string({ maxLength: 12 }))
const textArb = fc.array(lineArb, { maxLength: 30 }).chain((lines) =>
  fc.constantFrom("\n", "\r\n", "\r").map((sep) => lines.join(sep))
)
const fileArb = fc.oneof(
  fc.array(fc.constantFrom("line", "ctx", "", " line", "x", "a\r", "\uFEFFline"), { maxLength: 12 }).map((l) => l.join("\n")),
  fc.uint8Array({ maxLength: 16 }).map((b) => new Uint8Array(b))
)
const profileArb = fc.constantFrom<Profile>("codex", "native")

describe("totality", () => {
  it("parsePatch never throws on arbitrary text", () => {
    fc.assert(
      fc.property(fc.oneof(textArb, fc.string(), fc.string({ unit: "grapheme" })), profileArb, (text, profile) => {
        const r = parsePatch(text, { profile })
        expect(Result.isSuccess(r) || Result.isFailure(r)).toBe(true)
      }),
      { numRuns: 3000 }
    )
  })

  it("planning never throws and plans are well-formed", () => {
    fc.assert(
      fc.property(textArb, fileArb, fileArb, profileArb, fc.boolean(), (body, a, b, profile, overwrite) => {
        const text = body.includes("*** Begin Patch") ? body : patchOf(body)
        const r = plan({ "a.txt": a, "b.txt": b, "dir/": "" }, text, { profile, allowOverwrite: overwrite })
        if (Result.isFailure(r)) {
          expect(r.failure.code).toMatch(/^[a-z_]+$/)
          expect([2, 3, 5]).toContain(r.failure.stage)
          return
        }
        for (const f of r.success.files) {
          expect(f.path).not.toMatch(/(^|\/)\.\.?(\/|$)|^\//)
          if (f.kind === "add") expect(f.before).toBeUndefined()
          if (f.kind === "delete") expect(f.after).toBeUndefined()
          if (f.kind === "move") expect(f.moveFrom).toBeDefined()
        }
      }),
      { numRuns: 3000 }
    )
  })

  it("mutated valid patches never throw", () => {
    const base = patchOf("*** Update File: a.txt", "@@ ctx", " line", "-x", "+y", "*** End of File", "*** Add File: c", "+z")
    const lines = base.split("\n")
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(lines.length), fc.constantFrom("drop", "dup", "insert"), lineArb), { maxLength: 6 }),
        profileArb,
        (mutations, profile) => {
          const l = [...lines]
          for (const [i, kind, atom] of mutations) {
            const at = i % (l.length + 1)
            if (kind === "drop") l.splice(at, 1)
            else if (kind === "dup") l.splice(at, 0, l[at] ?? "")
            else l.splice(at, 0, atom)
          }
          const r = plan({ "a.txt": "ctx\nline\nx\n" }, l.join("\n"), { profile })
          expect(Result.isSuccess(r) || Result.isFailure(r)).toBe(true)
        }
      ),
      { numRuns: 3000 }
    )
  })
})

describe("exactness", () => {
  it("a generated in-order patch with 3 context lines applies exactly (native and codex)", () => {
    // Short and long lines: the matcher hashes long lines by sampling, short ones whole.
    const fileArb = fc.tuple(fc.uniqueArray(fc.integer({ min: 0, max: 1_000_000 }), { minLength: 8, maxLength: 80 }), fc.boolean())
      .map(([ns, long]) =>
        ns.map((n) => (long ? `${"  ".repeat(n % 4)}const value_${n} = compute(${n % 97}, "${n.toString(36)}"); // note` : `line ${n}`))
      )
    fc.assert(
      fc.property(fileArb, fc.array(fc.nat(), { minLength: 1, maxLength: 6 }), profileArb, (lines, picks, profile) => {
        const targets = [...new Set(picks.map((p) => p % lines.length))].sort((a, b) => a - b)
        // keep edits at least 7 lines apart so each chunk's context is its own
        const chosen: Array<number> = []
        for (const t of targets) if (chosen.length === 0 || t - chosen[chosen.length - 1]! >= 7) chosen.push(t)
        const body: Array<string> = ["*** Update File: a.txt"]
        for (const t of chosen) {
          body.push("@@")
          for (let k = Math.max(0, t - 3); k < t; k++) body.push(` ${lines[k]}`)
          body.push(`-${lines[t]}`, `+${lines[t]} edited`)
          for (let k = t + 1; k < Math.min(lines.length, t + 4); k++) body.push(` ${lines[k]}`)
        }
        const expected = lines.map((l, i) => (chosen.includes(i) ? `${l} edited` : l)).join("\n") + "\n"
        const r = plan({ "a.txt": lines.join("\n") + "\n" }, patchOf(...body), { profile })
        if (Result.isFailure(r)) throw new Error(r.failure.message)
        expect(dec(r.success.files[0]?.after)).toBe(expected)
      }),
      { numRuns: 500 }
    )
  })
})
