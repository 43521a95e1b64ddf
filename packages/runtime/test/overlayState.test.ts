/**
 * The overlay's state and its pure transitions, tested directly: the view from what is known,
 * which baselines still need the workspace, staging (counts below directories, whole writes,
 * move origins), listings, and the export's net changes.
 */
import { RelativePath } from "@forkjoin/schema/Ids"
import { type FileState, NetChange, type Plan, type PlannedFile } from "@forkjoin/patch"
import { EngineError } from "@forkjoin/schema/EngineError"
import { describe, expect, it } from "vitest"
import * as S from "../src/internal/overlayState.ts"
import { text, utf8 } from "./helpers.ts"

const file = (s: string): FileState => ({ _tag: "File", bytes: utf8(s) })
const baseline = (state: FileState): S.Baseline => ({ state, inspection: undefined })
const withBase = (entries: Record<string, FileState>) =>
  S.capture(S.empty, Object.entries(entries).map(([p, s]) => [p, baseline(s)] as const))
const plan = (...files: ReadonlyArray<PlannedFile>): Plan => ({ files, summary: [] })
const update = (path: string, before: string, after: string): PlannedFile => ({ kind: "update", path: RelativePath.make(path), before: utf8(before), after: utf8(after) })
const add = (path: string, after: string): PlannedFile => ({ kind: "add", path: RelativePath.make(path), before: undefined, after: utf8(after) })
const del = (path: string, before: string): PlannedFile => ({ kind: "delete", path: RelativePath.make(path), before: utf8(before), after: undefined })
const move = (from: string, to: string, bytes: string): PlannedFile => ({ kind: "move", path: RelativePath.make(to), moveFrom: RelativePath.make(from), before: utf8(bytes), after: utf8(bytes) })

const tagOf = (v: FileState | EngineError | undefined) => (v === undefined ? "unknown" : v instanceof EngineError ? v.code : v._tag)
const nets = (state: S.OverlayState) =>
  S.netChanges(state).map((n) => ({
    kind: n.kind,
    path: n.path,
    ...(n.moveFrom === undefined ? {} : { moveFrom: n.moveFrom }),
    pre: n.pre === undefined ? null : text(n.pre),
    post: n.post === undefined ? null : text(n.post)
  }))

describe("overlayState", () => {
  it("views paths from what is known: staged files make directories, files and deletions decide below them", () => {
    let s = withBase({ "src/a.txt": file("a"), gone: { _tag: "Missing" } })
    s = S.stage(s, plan(add("new/deep/x.txt", "x"), del("src/a.txt", "a")))
    expect(["new", "new/deep", "new/deep/x.txt", "src/a.txt", "src/a.txt/below", "gone/below", "src/other"].map((p) => tagOf(S.view(s, p))))
      .toEqual(["Directory", "Directory", "File", "Missing", "Missing", "Missing", "unknown"])
    expect(tagOf(S.view(s, "new/deep/x.txt/y"))).toBe("path_invalid")
    expect(tagOf(S.view(withBase({ f: file("f") }), "f/g"))).toBe("path_invalid")
  })

  it("pendingBaselines splits what the view implies from what only the workspace can answer", () => {
    const s = S.stage(withBase({ "src/a.txt": file("a"), gone: { _tag: "Missing" } }), plan(add("f", "f")))
    const pending = S.pendingBaselines(s, ["src/a.txt", "gone/x", "src/b.txt", "f/x", "other"])
    expect(pending.derived.map(([p, v]) => [p, v._tag])).toEqual([["gone/x", "Missing"]])
    expect(pending.unknown).toEqual(["src/b.txt", "other"])
  })

  it("capture keeps the first baseline and leaves the previous state untouched", () => {
    const s1 = withBase({ a: file("first") })
    const s2 = S.capture(s1, [["a", baseline(file("second"))], ["b", baseline(file("b"))]])
    expect(S.view(s2, "a")).toEqual(file("first"))
    expect(S.view(s2, "b")).toEqual(file("b"))
    expect(s1.base.has("b")).toBe(false)
    expect(S.capture(s2, [["a", baseline(file("third"))]])).toBe(s2)
  })

  it("stage is a pure transition: counts below directories follow adds and deletes, the old state is unchanged", () => {
    const s0 = withBase({})
    const s1 = S.stage(s0, plan(add("d/e/x", "x"), add("d/y", "y")))
    expect([...s1.stagedFilesBelow]).toEqual([["d", 2], ["d/e", 1]])
    const s2 = S.stage(s1, plan(del("d/e/x", "x")))
    expect([...s2.stagedFilesBelow]).toEqual([["d", 1]])
    expect(tagOf(S.view(s2, "d/e"))).toBe("unknown")
    expect(s0.staged.size).toBe(0)
    expect(s1.staged.get("d/e/x")?._tag).toBe("File")
  })

  it("a chain of moves keeps its first source; a delete or a whole write forgets the origin", () => {
    let s = withBase({ a: file("a"), b: file("b") })
    s = S.stage(s, plan(move("a", "m1", "a")))
    s = S.stage(s, plan(move("m1", "m2", "a")))
    const origins = (st: S.OverlayState) => [...NetChange.fold(st.steps, "path").moved].map(([dest, l]) => [dest, l.origin])
    expect(origins(s)).toEqual([["m2", "a"]])
    s = S.stage(s, plan(move("b", "n", "b")))
    s = S.stage(s, plan(add("n", "fresh")))
    expect(origins(s)).toEqual([["m2", "a"]])
    expect(NetChange.fold(s.steps, "path").wholeWrites.has(RelativePath.make("n"))).toBe(true)
  })

  it("knownListing merges the shared listing with what the child saw and wrote", () => {
    let s = withBase({ "d/seen.txt": file("s"), "d/gone.txt": file("g") })
    s = S.stage(s, plan(del("d/gone.txt", "g"), add("d/new.txt", "n"), add("d/sub/x", "x")))
    const names = S.knownListing(s, "d", [{ name: "gone.txt", kind: "file" }, { name: "kept", kind: "symlink" }])
    expect([...names].sort()).toEqual([["kept", "symlink"], ["new.txt", "file"], ["seen.txt", "file"], ["sub", "directory"]])
    expect(S.needsSharedListing(s, "")).toBe(true)
    expect(S.needsSharedListing(s, "d")).toBe(false)
    expect(S.needsSharedListing(withBase({ d: { _tag: "Directory" } }), "d")).toBe(true)
  })

  it("netChanges: first preimage and last postimage per path, moves fused, no-ops dropped, kinds by history", () => {
    let s = withBase({ a: file("a0"), b: file("b0"), c: file("c0"), r: file("r0"), m: file("m0") })
    s = S.stage(s, plan(update("a", "a0", "a1")))
    s = S.stage(s, plan(update("a", "a1", "a2")))
    s = S.stage(s, plan(update("b", "b0", "B")))
    s = S.stage(s, plan(update("b", "B", "b0")))
    s = S.stage(s, plan(add("t", "tmp")))
    s = S.stage(s, plan(del("t", "tmp")))
    s = S.stage(s, plan({ kind: "replace", path: RelativePath.make("r"), before: utf8("r0"), after: utf8("r1") }))
    s = S.stage(s, plan(move("m", "m2", "m0")))
    s = S.stage(s, plan(update("m2", "m0", "m1")))
    s = S.stage(s, plan(del("c", "c0")))
    expect(nets(s)).toEqual([
      { kind: "update", path: RelativePath.make("a"), pre: "a0", post: "a2" },
      { kind: "delete", path: RelativePath.make("c"), pre: "c0", post: null },
      { kind: "move", path: RelativePath.make("m2"), moveFrom: RelativePath.make("m"), pre: "m0", post: "m1" },
      { kind: "replace", path: RelativePath.make("r"), pre: "r0", post: "r1" }
    ])
    // A move whose source is written again is not fused: the source is replaced, the destination added.
    const back = S.stage(S.stage(withBase({ x: file("x") }), plan(move("x", "y", "x"))), plan(add("x", "again")))
    expect(nets(back)).toEqual([
      { kind: "replace", path: RelativePath.make("x"), pre: "x", post: "again" },
      { kind: "add", path: RelativePath.make("y"), pre: null, post: "x" }
    ])
  })
})
