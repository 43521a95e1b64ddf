import { describe, expect, it } from "vitest"
import { after, enc, err, ok, patchOf, plan } from "./helpers.ts"

const update = (path: string, ...body: ReadonlyArray<string>) => patchOf(`*** Update File: ${path}`, ...body)

describe("planPatch: operations and plan shape", () => {
  it("returns full before/after bytes per file, kinds, and Codex's A/M/D summary order", () => {
    const p = ok(plan(
      { "m.txt": "a\nb\n", "d.txt": "gone\n", "src.txt": "x\n" },
      patchOf(
        "*** Delete File: d.txt",
        "*** Update File: m.txt",
        "@@",
        "-b",
        "+B",
        "*** Add File: n/new.txt",
        "+hi",
        "*** Update File: src.txt",
        "*** Move to: dst/src.txt",
        "@@",
        "-x",
        "+y"
      )
    ))
    expect(p.summary).toEqual([
      { status: "A", path: "n/new.txt" },
      { status: "M", path: "m.txt" },
      { status: "M", path: "dst/src.txt" },
      { status: "D", path: "d.txt" }
    ])
    expect(p.files.map((f) => [f.kind, f.path, f.moveFrom])).toEqual([
      ["delete", "d.txt", undefined],
      ["update", "m.txt", undefined],
      ["add", "n/new.txt", undefined],
      ["move", "dst/src.txt", "src.txt"]
    ])
    expect(after(p, "m.txt")).toBe("a\nB\n")
    expect(after(p, "dst/src.txt")).toBe("y\n")
    expect(p.files.find((f) => f.kind === "move")?.before).toEqual(enc("x\n"))
  })

  it("later operations see earlier ones (add then update the same file)", () => {
    const p = ok(plan({}, patchOf("*** Add File: a", "+one", "*** Update File: a", "@@", "-one", "+two")))
    expect(p.files).toEqual([{ kind: "add", path: "a", before: undefined, after: enc("two\n") }])
  })

  it("drops no-op entries (add then delete, update to identical content)", () => {
    const p = ok(plan({ "f": "same\n" }, patchOf("*** Add File: t", "+x", "*** Delete File: t", "*** Update File: f", "@@", "-same", "+same")))
    expect(p.files).toEqual([])
  })

  it("normalizes paths and refuses absolute, escaping and control-character paths", () => {
    expect(ok(plan({}, patchOf("*** Add File: ./a//b/../c.txt", "+x"))).files[0]?.path).toBe("a/c.txt")
    expect(err(plan({}, patchOf("*** Add File: /etc/passwd", "+x")))).toMatchObject({ code: "path_outside_roots", stage: 3 })
    expect(err(plan({}, patchOf("*** Add File: ../x", "+x")))).toMatchObject({ code: "path_outside_roots", stage: 3 })
    expect(err(plan({}, patchOf("*** Add File: a\u0007b", "+x")))).toMatchObject({ code: "path_invalid", stage: 3 })
    expect(err(plan({}, patchOf("*** Add File: a/..", "+x")))).toMatchObject({ code: "path_invalid" })
  })

  it("empty patch: 'No files were modified.'", () => {
    expect(err(plan({}, patchOf()))).toMatchObject({ code: "patch_syntax", message: "No files were modified." })
  })

  it("missing targets, directories, binary files and self-moves get stable codes", () => {
    expect(err(plan({}, update("m", "@@", "-a")))).toMatchObject({
      code: "target_missing",
      paths: ["m"],
      message: "Failed to read file to update m: No such file or directory (os error 2)"
    })
    expect(err(plan({}, patchOf("*** Delete File: m")))).toMatchObject({ code: "target_missing" })
    expect(err(plan({ "dir/": "" }, patchOf("*** Delete File: dir")))).toMatchObject({ code: "unsupported_file_type" })
    expect(err(plan({ "b": new Uint8Array([0xff, 0xfe, 0x0a]) }, update("b", "@@", "-a"), { profile: "codex" }))).toMatchObject({
      code: "unsupported_file_type"
    })
    expect(err(plan({ "b": "a\u0000\n" }, update("b", "@@", "-a")))).toMatchObject({ code: "unsupported_file_type" })
    expect(err(plan({ "a": "x\n" }, update("a", "*** Move to: ./a", "@@", "-x", "+y"), { profile: "codex" }))).toMatchObject({
      code: "unsafe_move"
    })
  })

  it("context_not_found keeps upstream's message with the expected lines", () => {
    expect(err(plan({ "f": "a\n" }, update("f", "@@", " ctx", "-missing", "+x")))).toMatchObject({
      code: "context_not_found",
      stage: 5,
      message: "Failed to find expected lines in f:\nctx\nmissing"
    })
    expect(err(plan({ "f": "a\n" }, update("f", "@@ nothere", "-a")))).toMatchObject({
      code: "context_not_found",
      message: "Failed to find context 'nothere' in f"
    })
  })
})

describe("matching passes (both profiles)", () => {
  for (const profile of ["codex", "native"] as const) {
    it(`${profile}: trim_end, trim and punctuation-normalised passes`, () => {
      expect(after(ok(plan({ "f": "a  \nb\n" }, update("f", "@@", " a", "-b", "+B"), { profile })), "f")).toMatch(/B\n$/)
      expect(after(ok(plan({ "f": "  a\nb\n" }, update("f", "@@", " a", "-b", "+B"), { profile })), "f")).toMatch(/B\n$/)
      expect(after(ok(plan({ "f": "x = \u201Cq\u201D \u2014 1\n" }, update("f", "@@", "-x = \"q\" - 1", "+y"), { profile })), "f")).toBe("y\n")
    })
    it(`${profile}: End of File anchors at the tail only`, () => {
      const p = ok(plan({ "f": "a\nb\na\nb\n" }, update("f", "@@", " a", "-b", "+B", "*** End of File"), { profile }))
      expect(after(p, "f")).toBe("a\nb\na\nB\n")
      expect(err(plan({ "f": "a\nb\nc\n" }, update("f", "@@", "-a", "+A", "*** End of File"), { profile })).code).toBe("context_not_found")
    })
    it(`${profile}: chunks apply in file order with a forward cursor`, () => {
      expect(err(plan({ "f": "a\nb\n" }, update("f", "@@", "-b", "+B", "@@", "-a", "+A"), { profile })).code).toBe("context_not_found")
    })
  }

  it("Rust trim does not strip U+FEFF: codex cannot match a BOM'd first line by trimming", () => {
    const file = "\uFEFFfirst\nsecond\n"
    expect(err(plan({ "f": file }, update("f", "@@", "-first", "+FIRST"), { profile: "codex" })).code).toBe("context_not_found")
    // native strips the BOM before matching and restores it on write.
    expect(after(ok(plan({ "f": file }, update("f", "@@", "-first", "+FIRST"))), "f")).toBe("\uFEFFFIRST\nsecond\n")
  })

  it("Rust trim strips U+0085 (NEL), unlike JavaScript", () => {
    expect(after(ok(plan({ "f": "a\u0085\nb\n" }, update("f", "@@", " a", "-b", "+B"), { profile: "codex" })), "f")).toBe("a\nB\n")
  })
})

describe("native profile divergences (SPEC §2)", () => {
  it("rejects ambiguous context with candidate line numbers; codex takes the first", () => {
    const tree = { "f": "x\ny\nz\nx\ny\n" }
    const patch = update("f", "@@", " x", "-y", "+Y")
    expect(err(plan(tree, patch))).toMatchObject({ code: "ambiguous_context", stage: 5, candidates: [1, 4], paths: ["f"] })
    expect(after(ok(plan(tree, patch, { profile: "codex" })), "f")).toBe("x\nY\nz\nx\ny\n")
    // An @@ header or more context disambiguates.
    expect(after(ok(plan(tree, update("f", "@@ z", " x", "-y", "+Y"))), "f")).toBe("x\ny\nz\nx\nY\n")
  })

  it("ambiguity is judged at the first matching pass only", () => {
    // exact pass matches once (line 1); a trimmed duplicate at line 3 does not make it ambiguous
    expect(after(ok(plan({ "f": "a\nb\n a \nb\n" }, update("f", "@@", " a", "-b", "+B"))), "f")).toBe("a\nB\n a \nb\n")
  })

  it("refuses Add onto an existing file and Move onto an existing file without the overwrite grant", () => {
    expect(err(plan({ "a": "old\n" }, patchOf("*** Add File: a", "+new")))).toMatchObject({ code: "target_exists", paths: ["a"] })
    const move = update("s", "*** Move to: d", "@@", "-x", "+y")
    expect(err(plan({ "s": "x\n", "d": "keep\n" }, move))).toMatchObject({ code: "unsafe_move", paths: ["s", "d"] })
    // with the grant: replace and an overwriting move recorded with the overwritten snapshot
    expect(ok(plan({ "a": "old\n" }, patchOf("*** Add File: a", "+new"), { allowOverwrite: true })).files[0]).toMatchObject({ kind: "replace" })
    const m = ok(plan({ "s": "x\n", "d": "keep\n" }, move, { allowOverwrite: true })).files
    expect(m).toEqual([{ kind: "move", path: "d", moveFrom: "s", before: enc("x\n"), after: enc("y\n"), overwritten: enc("keep\n") }])
    // codex overwrites silently (upstream fixtures 010/011)
    expect(ok(plan({ "a": "old\n" }, patchOf("*** Add File: a", "+new"), { profile: "codex" })).files[0]?.kind).toBe("replace")
  })

  it("keeps CRLF, per-line mixed endings, BOM and a missing final newline; never rewrites untouched lines", () => {
    expect(after(ok(plan({ "f": "a\r\nb\r\nc\r\n" }, update("f", "@@", " a", "-b", "+B", "+B2"))), "f")).toBe("a\r\nB\r\nB2\r\nc\r\n")
    expect(after(ok(plan({ "f": "a\nb\r\nc\n" }, update("f", "@@", " a", "-b", "+B"))), "f")).toBe("a\nB\r\nc\n")
    expect(after(ok(plan({ "f": "\uFEFFa\r\nb\r\n" }, update("f", "@@", "-b", "+B"))), "f")).toBe("\uFEFFa\r\nB\r\n")
    expect(after(ok(plan({ "f": "a\nb" }, update("f", "@@", " a", "-b", "+B"))), "f")).toBe("a\nB")
    expect(after(ok(plan({ "f": "a\nb" }, update("f", "@@", " b", "+c"))), "f")).toBe("a\nb\nc")
    // a context line found by the trim pass keeps the file's own indentation (openai/codex#30505)
    expect(after(ok(plan({ "f": "    keep();\nold();\n" }, update("f", "@@", " keep();", "-old();", "+new();"))), "f"))
      .toBe("    keep();\nnew();\n")
    // codex legacy mode rewrites that context line and drops CRs inside the matched block
    expect(after(ok(plan({ "f": "    keep();\nold();\n" }, update("f", "@@", " keep();", "-old();", "+new();"), { profile: "codex" })), "f"))
      .toBe("keep();\nnew();\n")
  })

  it("anchors a pure addition right after its @@ header (codex appends at end of file)", () => {
    const tree = { "f": "def a():\n    pass\ndef b():\n    pass\n" }
    const patch = update("f", "@@ def a():", "+    # doc")
    expect(after(ok(plan(tree, patch)), "f")).toBe("def a():\n    # doc\n    pass\ndef b():\n    pass\n")
    expect(after(ok(plan(tree, patch, { profile: "codex" })), "f")).toBe("def a():\n    pass\ndef b():\n    pass\n    # doc\n")
  })

  it("rejects an ambiguous insertion anchor", () => {
    expect(err(plan({ "f": "x\nx\n" }, update("f", "@@ x", "+y")))).toMatchObject({ code: "ambiguous_context", candidates: [1, 2] })
  })

  it("seeks stacked @@ headers in order", () => {
    const tree = { "f": "class A:\n  def m():\n    v = 1\nclass B:\n  def m():\n    v = 1\n" }
    const p = ok(plan(tree, update("f", "@@ class B:", "@@   def m():", "-    v = 1", "+    v = 2")))
    expect(after(p, "f")).toBe("class A:\n  def m():\n    v = 1\nclass B:\n  def m():\n    v = 2\n")
  })
})
