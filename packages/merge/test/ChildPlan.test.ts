/**
 * One child's plan in the join (SPEC §6.6 steps 2–3): clean entries, drift, unverifiable and
 * invalid changesets, sibling merges and conflicts, and properties over random changesets.
 *
 * Tests that need the real three-way text merge (`mergeFile` auto-merging edits far apart)
 * are named "(real merge)".
 */
import { type ChildPlanOutcome, joinMarkerLabels, planChild, planOfFiles } from "@forkjoin/merge/ChildPlan"
import type { MarkerLabels } from "@forkjoin/merge/TextMerge"
import { sameBytes, sha256 } from "@forkjoin/patch/Bytes"
import type { FileState, Plan } from "@forkjoin/patch/Plan"
import { factsOf } from "@forkjoin/patch/Snapshot"
import type { ChangesetEntry } from "@forkjoin/schema/Changeset"
import { RelativePath, TaskId } from "@forkjoin/schema/Ids"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

// -------------------------------------------------------------------------------------
// fixtures
// -------------------------------------------------------------------------------------

const P = (p: string) => RelativePath.make(p)
const enc = (s: string | Uint8Array): Uint8Array => (typeof s === "string" ? new TextEncoder().encode(s) : s)
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b))
const DIR = Symbol("directory")
type Content = string | Uint8Array | typeof DIR
type Workspace = Readonly<Record<string, Content>>

const stateOf = (ws: Workspace) => (p: RelativePath): FileState => {
  const c = ws[p]
  return c === undefined ? { _tag: "Missing" } : c === DIR ? { _tag: "Directory" } : { _tag: "File", bytes: enc(c) }
}

// One test's blob stores: the child's postimages and history's preimages, filled by the builders.
const fixture = () => {
  const posts = new Map<string, Uint8Array>()
  const history = new Map<string, Uint8Array>()
  const image = (store: Map<string, Uint8Array>, path: string, content: string | Uint8Array) => {
    const bytes = enc(content)
    store.set(sha256(bytes), bytes)
    return { path: P(path), ...factsOf(bytes) }
  }
  const pre = (path: string, c: string | Uint8Array) => image(history, path, c)
  const post = (path: string, c: string | Uint8Array) => image(posts, path, c)
  const add = (path: string, after: string | Uint8Array): ChangesetEntry => ({ path: P(path), kind: "add", postimage: post(path, after), exportable: true })
  const update = (path: string, before: string | Uint8Array, after: string | Uint8Array, kind: "update" | "replace" = "update"): ChangesetEntry => ({
    path: P(path),
    kind,
    preimage: pre(path, before),
    postimage: post(path, after),
    exportable: true
  })
  const del = (path: string, before: string | Uint8Array): ChangesetEntry => ({ path: P(path), kind: "delete", preimage: pre(path, before), exportable: true })
  const move = (from: string, to: string, before: string | Uint8Array, after: string | Uint8Array, overwritten?: string | Uint8Array): ChangesetEntry => ({
    path: P(to),
    kind: "move",
    moveFrom: P(from),
    preimage: pre(from, before),
    // A pure move travels without a blob, as the export stores it.
    postimage: sameBytes(enc(after), enc(before)) ? { path: P(to), ...factsOf(enc(after)) } : post(to, after),
    ...(overwritten === undefined ? {} : { overwritten: pre(to, overwritten) }),
    exportable: true
  })
  const plan = (
    ws: Workspace,
    entries: ReadonlyArray<ChangesetEntry>,
    siblings: ReadonlyArray<string> = [],
    labels?: MarkerLabels
  ): ChildPlanOutcome =>
    planChild({
      entries,
      live: stateOf(ws),
      postimage: (h) => posts.get(h),
      preimage: (h) => history.get(h),
      changedBySiblings: new Set(siblings.map(P)),
      ...(labels === undefined ? {} : { labels })
    })
  return { posts, history, add, update, del, move, plan }
}

// The engine's semantics for a plan (checkBaseline, then stepsOf): every `before` (and a
// move's `overwritten`) must be live, kinds must match their sides, a move's source goes
// away unless the plan rewrites it.
const applyInMemory = (ws: ReadonlyMap<string, Uint8Array>, plan: Plan): Map<string, Uint8Array> => {
  const holds = (p: string, b: Uint8Array | undefined) => {
    const cur = ws.get(p)
    return b === undefined ? cur === undefined : cur !== undefined && sameBytes(cur, b)
  }
  for (const f of plan.files) {
    if (!holds(f.moveFrom ?? f.path, f.before)) throw new Error(`stale ${f.moveFrom ?? f.path}`)
    if (f.moveFrom !== undefined && !holds(f.path, f.overwritten)) throw new Error(`stale destination ${f.path}`)
    const sides = [f.before !== undefined, f.after !== undefined]
    const expected = f.kind === "add" ? [false, true] : f.kind === "delete" ? [true, false] : [true, true]
    if (sides[0] !== expected[0] || sides[1] !== expected[1]) throw new Error(`${f.kind} ${f.path} has the wrong sides`)
    if ((f.kind === "move") !== (f.moveFrom !== undefined)) throw new Error(`${f.path}: moveFrom on a ${f.kind}`)
  }
  if (new Set(plan.files.map((f) => f.path)).size !== plan.files.length) throw new Error("a path is planned twice")
  const out = new Map(ws)
  const written = new Set(plan.files.map((f) => f.path))
  for (const f of plan.files) {
    if (f.after === undefined) out.delete(f.path)
    else out.set(f.path, f.after)
  }
  for (const f of plan.files) if (f.moveFrom !== undefined && !written.has(f.moveFrom)) out.delete(f.moveFrom)
  return out
}

const ready = (o: ChildPlanOutcome) => {
  if (o._tag !== "Ready") {
    const detail = o._tag === "Conflicted" ? o.conflicts.map((c) => `${c.path}: ${c.reason}`).join(", ") : JSON.stringify(o)
    throw new Error(`expected Ready, got ${o._tag} (${detail})`)
  }
  return o
}
const conflicted = (o: ChildPlanOutcome) => {
  if (o._tag !== "Conflicted") throw new Error(`expected Conflicted, got ${o._tag}`)
  return o.conflicts
}
const filesOf = (o: ChildPlanOutcome) =>
  ready(o).plan.files.map((f) => ({
    kind: f.kind,
    path: f.path,
    ...(f.moveFrom === undefined ? {} : { moveFrom: f.moveFrom }),
    before: dec(f.before),
    after: dec(f.after),
    ...(f.overwritten === undefined ? {} : { overwritten: dec(f.overwritten) })
  }))

const lines = (n: number, edit: Record<number, string> = {}) => Array.from({ length: n }, (_, i) => `${edit[i] ?? `line ${i}`}\n`).join("")

// -------------------------------------------------------------------------------------
// clean entries
// -------------------------------------------------------------------------------------

describe("planChild: clean entries", () => {
  it("plans every kind with live bytes before and postimage bytes after, and the A/M/D summary", () => {
    const f = fixture()
    const ws = { "a.txt": "a\n", "d.txt": "d\n", "r.bin": "r", "m/old.txt": "m\n" }
    const o = f.plan(ws, [
      f.update("a.txt", "a\n", "A\n"),
      f.add("b.txt", "b\n"),
      f.del("d.txt", "d\n"),
      f.move("m/old.txt", "m/new.txt", "m\n", "M\n"),
      f.update("r.bin", "r", new Uint8Array([0, 1, 2]), "replace")
    ])
    expect(filesOf(o)).toEqual([
      { kind: "update", path: "a.txt", before: "a\n", after: "A\n" },
      { kind: "add", path: "b.txt", before: undefined, after: "b\n" },
      { kind: "delete", path: "d.txt", before: "d\n", after: undefined },
      { kind: "move", path: "m/new.txt", moveFrom: "m/old.txt", before: "m\n", after: "M\n" },
      { kind: "replace", path: "r.bin", before: "r", after: "\u0000\u0001\u0002" }
    ])
    expect(ready(o).plan.summary).toEqual([
      { status: "A", path: "b.txt" },
      { status: "M", path: "a.txt" },
      { status: "M", path: "m/new.txt" },
      { status: "M", path: "r.bin" },
      { status: "D", path: "d.txt" }
    ])
    expect(ready(o).autoMerged).toEqual([])
    expect(ready(o).converged).toEqual([])
  })

  it("plans a move onto an existing destination with the live destination as overwritten", () => {
    const f = fixture()
    const o = f.plan({ "a": "x\n", "b": "old b\n" }, [f.move("a", "b", "x\n", "y\n", "old b\n")])
    expect(filesOf(o)).toEqual([{ kind: "move", path: "b", moveFrom: "a", before: "x\n", after: "y\n", overwritten: "old b\n" }])
  })

  it("plans a pure move without a blob: its after bytes are the live source", () => {
    const f = fixture()
    const entry = f.move("a", "b", "same\n", "same\n")
    expect(f.posts.size).toBe(0)
    const o = f.plan({ "a": "same\n" }, [entry])
    expect(filesOf(o)).toEqual([{ kind: "move", path: "b", moveFrom: "a", before: "same\n", after: "same\n" }])
  })

  it("drops an entry that writes a file's own bytes, and is Noop when nothing is left", () => {
    const f = fixture()
    expect(f.plan({ "a": "x" }, [f.update("a", "x", "x", "replace")])).toEqual({ _tag: "Noop", converged: [] })
    expect(f.plan({}, [])).toEqual({ _tag: "Noop", converged: [] })
  })

  it("plans a clean entry straight even when a sibling touched its path (live still equals the preimage)", () => {
    const f = fixture()
    const o = f.plan({ "a": "x\n", "s": "1\n" }, [f.update("a", "x\n", "y\n"), f.move("s", "t", "1\n", "1\n")], ["a", "s"])
    expect(filesOf(o)).toEqual([
      { kind: "update", path: "a", before: "x\n", after: "y\n" },
      { kind: "move", path: "t", moveFrom: "s", before: "1\n", after: "1\n" }
    ])
  })
})

// -------------------------------------------------------------------------------------
// drift, unverifiable, invalid
// -------------------------------------------------------------------------------------

describe("planChild: baseline drift", () => {
  it("names a changed file, a file that appeared, a file that vanished and a directory in the way", () => {
    const f = fixture()
    expect(f.plan({ "a": "edited\n" }, [f.update("a", "x\n", "y\n")])).toEqual({ _tag: "Drift", paths: ["a"] })
    expect(f.plan({ "n": "" }, [f.add("n", "new\n")])).toEqual({ _tag: "Drift", paths: ["n"] })
    expect(f.plan({}, [f.del("d", "d\n")])).toEqual({ _tag: "Drift", paths: ["d"] })
    // A directory is drift even at a path a sibling changed: nothing can be merged into it.
    expect(f.plan({ "a": DIR }, [f.update("a", "x\n", "y\n")], ["a"])).toEqual({ _tag: "Drift", paths: ["a"] })
  })

  it("is drift even when the live file already equals the postimage, if no sibling changed it", () => {
    const f = fixture()
    expect(f.plan({ "a": "y\n" }, [f.update("a", "x\n", "y\n")])).toEqual({ _tag: "Drift", paths: ["a"] })
  })

  it("checks a move's source and destination, and sorts every drifted path by code unit", () => {
    const f = fixture()
    const o = f.plan({ "src": "changed", "dst": "appeared", "Z": "z2", "ok": "1" }, [
      f.move("src", "dst", "s", "t"),
      f.update("Z", "z", "zz"),
      f.update("ok", "1", "2")
    ])
    expect(o).toEqual({ _tag: "Drift", paths: ["Z", "dst", "src"] })
    expect(f.plan({ "src": "s", "dst": "other" }, [f.move("src", "dst", "s", "t", "was")])).toEqual({ _tag: "Drift", paths: ["dst"] })
  })
})

describe("planChild: unverifiable", () => {
  it("is unverifiable when a sibling changed the path and the preimage bytes are unavailable or corrupt", () => {
    const f = fixture()
    const e = f.update("a", "x\n", "y\n")
    f.history.clear()
    const o = f.plan({ "a": "sibling\n" }, [e], ["a"])
    expect(o._tag === "Unverifiable" && o.paths).toEqual(["a"])
    expect(o._tag === "Unverifiable" && o.reason).toContain("unavailable")
    f.history.set(e.preimage!.hash, enc("not x\n"))
    const corrupt = f.plan({ "a": "sibling\n" }, [e], ["a"])
    expect(corrupt._tag === "Unverifiable" && corrupt.reason).toContain("corrupt")
  })

  it("is unverifiable when an entry is not exportable, naming it with its reason", () => {
    const f = fixture()
    const big: ChangesetEntry = {
      path: P("big.bin"),
      kind: "add",
      postimage: { path: P("big.bin"), ...factsOf(enc("huge")) },
      exportable: false,
      reason: { code: "postimage_too_large", message: "over 16 MiB" }
    }
    const o = f.plan({}, [big, f.add("ok", "1")])
    expect(o._tag).toBe("Unverifiable")
    expect(o._tag === "Unverifiable" && o.paths).toEqual(["big.bin"])
    expect(o._tag === "Unverifiable" && o.reason).toContain("over 16 MiB")
  })
})

describe("planChild: invalid changesets", () => {
  it("is invalid when a postimage blob is missing or does not hash to its name", () => {
    const f = fixture()
    const e = f.update("a", "x", "y")
    f.posts.clear()
    const missing = f.plan({ "a": "x" }, [e])
    expect(missing._tag === "Invalid" && missing.paths).toEqual(["a"])
    expect(missing._tag === "Invalid" && missing.reason).toContain("missing")
    f.posts.set(e.postimage!.hash, enc("z"))
    const wrong = f.plan({ "a": "x" }, [e])
    expect(wrong._tag === "Invalid" && wrong.reason).toContain("does not hold")
  })

  it("is invalid for an inconsistent entry or two entries touching one path", () => {
    const f = fixture()
    const addWithPre: ChangesetEntry = { ...f.add("a", "1"), preimage: { path: P("a"), ...factsOf(enc("0")) } }
    expect(f.plan({}, [addWithPre])._tag).toBe("Invalid")
    const twice = f.plan({ "a": "x", "b": "y" }, [f.update("a", "x", "1"), f.move("b", "a", "y", "y")])
    expect(twice._tag === "Invalid" && twice.paths).toEqual(["a"])
  })
})

describe("planChild: precedence Invalid > Unverifiable > Drift > Conflicted > Ready", () => {
  it("reports the strongest problem only", () => {
    const f = fixture()
    const drift = f.update("d", "d", "D")
    const conflict = f.update("c", "base\n", "theirs\n")
    const unverifiable = f.update("u", "u", "U")
    const invalid = f.update("i", "i", "I")
    const ws = { "d": "drifted", "c": "ours\n", "u": "sibling", "i": "i" }
    const siblings = ["c", "u"]
    f.history.delete(unverifiable.preimage!.hash)
    f.posts.delete(invalid.postimage!.hash)
    expect(f.plan(ws, [drift, conflict, unverifiable, invalid], siblings)._tag).toBe("Invalid")
    expect(f.plan(ws, [drift, conflict, unverifiable], siblings)._tag).toBe("Unverifiable")
    expect(f.plan(ws, [drift, conflict], siblings)._tag).toBe("Drift")
    expect(f.plan(ws, [conflict, f.add("new", "n")], siblings)._tag).toBe("Conflicted")
  })
})

// -------------------------------------------------------------------------------------
// paths an earlier sibling changed
// -------------------------------------------------------------------------------------

describe("planChild: merging with an earlier sibling's change", () => {
  it("drops a change the sibling already made (converged) and is Noop when nothing is left", () => {
    const f = fixture()
    expect(f.plan({ "a": "y\n" }, [f.update("a", "x\n", "y\n")], ["a"])).toEqual({ _tag: "Noop", converged: ["a"] })
    expect(f.plan({}, [f.del("d", "d\n")], ["d"])).toEqual({ _tag: "Noop", converged: ["d"] })
  })

  it("keeps converged paths beside a plan of the other entries", () => {
    const f = fixture()
    const o = ready(f.plan({ "a": "y\n", "b": "1" }, [f.update("a", "x\n", "y\n"), f.update("b", "1", "2")], ["a"]))
    expect(o.converged).toEqual(["a"])
    expect(o.plan.files.map((x) => x.path)).toEqual(["b"])
  })

  it("holds back overlapping edits as a conflict with the three sides, writing nothing", () => {
    const f = fixture()
    const o = f.plan({ "a": "ours\n", "b": "1" }, [f.update("a", "base\n", "theirs\n"), f.update("b", "1", "2")], ["a"])
    const [c, ...rest] = conflicted(o)
    expect(rest).toEqual([])
    expect(c!.path).toBe("a")
    expect(c!.reason).toBe("overlapping_edits")
    expect([dec(c!.base), dec(c!.ours), dec(c!.theirs)]).toEqual(["base\n", "ours\n", "theirs\n"])
  })

  it("a conflict's markers name the workspace, the baseline and the child with the join's labels (real merge)", () => {
    const f = fixture()
    const labels = joinMarkerLabels(TaskId.make("second"))
    const [c] = conflicted(f.plan({ "a": "ours\n" }, [f.update("a", "base\n", "theirs\n")], ["a"], labels))
    expect(c!.text).toBe("<<<<<<< workspace\nours\n||||||| baseline\nbase\n=======\ntheirs\n>>>>>>> second\n")
    // A moved file merged at its destination too.
    const [moved] = conflicted(f.plan({ "src": "s\n", "dst": "sibling\n" }, [f.move("src", "dst", "s\n", "t\n", "d\n")], ["dst"], labels))
    expect(moved!.text).toBe("<<<<<<< workspace\nsibling\n||||||| baseline\nd\n=======\nt\n>>>>>>> second\n")
    // Without labels, the library's own words.
    const [plain] = conflicted(f.plan({ "a": "ours\n" }, [f.update("a", "base\n", "theirs\n")], ["a"]))
    expect(plain!.text).toContain("<<<<<<< ours\n")
  })

  it("holds back a deletion of a file the sibling edited, and an add onto a file the sibling added", () => {
    const f = fixture()
    const [del] = conflicted(f.plan({ "a": "edited\n" }, [f.del("a", "a\n")], ["a"]))
    expect([del!.path, dec(del!.base), dec(del!.ours), del!.theirs]).toEqual(["a", "a\n", "edited\n", undefined])
    const [add] = conflicted(f.plan({ "n": "sibling's\n" }, [f.add("n", "mine\n")], ["n"]))
    expect([add!.path, add!.base, dec(add!.ours), dec(add!.theirs)]).toEqual(["n", undefined, "sibling's\n", "mine\n"])
  })

  it("auto-merges edits far apart in a 20-line file, planning the merged bytes over the live file (real merge)", () => {
    const f = fixture()
    const base = lines(20)
    const ours = lines(20, { 1: "sibling edit" })
    const theirs = lines(20, { 18: "child edit" })
    const o = ready(f.plan({ "a.txt": ours, "b": "1" }, [f.update("a.txt", base, theirs), f.update("b", "1", "2")], ["a.txt"]))
    expect(o.autoMerged).toEqual(["a.txt"])
    expect(filesOf(o)).toEqual([
      { kind: "update", path: "a.txt", before: ours, after: lines(20, { 1: "sibling edit", 18: "child edit" }) },
      { kind: "update", path: "b", before: "1", after: "2" }
    ])
  })

  it("auto-merges a replace entry too, planning an update of the merged text (real merge)", () => {
    const f = fixture()
    const o = ready(f.plan({ "a": lines(20, { 0: "s" }) }, [f.update("a", lines(20), lines(20, { 19: "c" }), "replace")], ["a"]))
    expect(filesOf(o)).toEqual([{ kind: "update", path: "a", before: lines(20, { 0: "s" }), after: lines(20, { 0: "s", 19: "c" }) }])
  })

  it("holds back a move whose source the sibling changed (move_vs_edit)", () => {
    const f = fixture()
    const [c, ...rest] = conflicted(f.plan({ "src": "edited\n" }, [f.move("src", "dst", "s\n", "t\n")], ["src"]))
    expect(rest).toEqual([])
    expect({ ...c, base: dec(c!.base), ours: dec(c!.ours), theirs: dec(c!.theirs) }).toEqual({
      path: "dst",
      moveFrom: "src",
      reason: "move_vs_edit",
      base: "s\n",
      ours: "edited\n",
      theirs: "t\n",
      hunks: [],
      text: expect.stringContaining("'src'")
    })
    // A pure move's other side is its preimage.
    const [pure] = conflicted(f.plan({}, [f.move("src", "dst", "s\n", "s\n")], ["src"]))
    expect([pure!.reason, dec(pure!.base), pure!.ours, dec(pure!.theirs)]).toEqual(["move_vs_edit", "s\n", undefined, "s\n"])
  })

  it("reduces a move to the source's deletion when the sibling already put the same content at the destination", () => {
    const f = fixture()
    const o = ready(f.plan({ "src": "s\n", "dst": "t\n" }, [f.move("src", "dst", "s\n", "t\n")], ["dst"]))
    expect(filesOf(o)).toEqual([{ kind: "delete", path: "src", before: "s\n", after: undefined }])
    expect(o.converged).toEqual(["dst"])
  })

  it("holds back a move onto a destination the sibling filled differently", () => {
    const f = fixture()
    const [c] = conflicted(f.plan({ "src": "s\n", "dst": "sibling\n" }, [f.move("src", "dst", "s\n", "t\n")], ["dst"]))
    expect([c!.path, c!.moveFrom, c!.base, dec(c!.ours), dec(c!.theirs)]).toEqual(["dst", "src", undefined, "sibling\n", "t\n"])
  })

  it("merges the destination of a move onto a file the sibling edited, keeping the move (real merge)", () => {
    const f = fixture()
    const old = lines(20)
    const sibling = lines(20, { 2: "sibling" })
    const moved = lines(20, { 17: "moved in" })
    const o = ready(f.plan({ "src": moved, "dst": sibling }, [f.move("src", "dst", moved, moved, old)], ["dst"]))
    expect(o.autoMerged).toEqual(["dst"])
    expect(filesOf(o)).toEqual([
      { kind: "move", path: "dst", moveFrom: "src", before: moved, after: lines(20, { 2: "sibling", 17: "moved in" }), overwritten: sibling }
    ])
  })

  it("holds back binary content both sides replaced", () => {
    const f = fixture()
    const [c, ...rest] = conflicted(f.plan({ "b.bin": "\u0000s" }, [f.update("b.bin", "\u0000x", "\u0000y", "replace")], ["b.bin"]))
    expect(rest).toEqual([])
    expect([c!.path, dec(c!.base), dec(c!.ours), dec(c!.theirs)]).toEqual(["b.bin", "\u0000x", "\u0000s", "\u0000y"])
  })
})

describe("planChild: how each path was merged", () => {
  it("lists each auto-merged path with its method, and its planned file records the merge (real merge)", () => {
    const f = fixture()
    const o = ready(f.plan({ "a.txt": lines(20, { 1: "s" }), "b": "1" }, [f.update("a.txt", lines(20), lines(20, { 18: "c" })), f.update("b", "1", "2")], ["a.txt"]))
    expect(o.mergedPaths).toEqual([{ path: "a.txt", method: "line" }])
    expect(o.plan.files.map((x) => x.merge)).toEqual([{ method: "line" }, undefined])
    const moved = lines(20, { 17: "moved in" })
    const m = ready(f.plan({ "src": moved, "dst": lines(20, { 2: "s" }) }, [f.move("src", "dst", moved, moved, lines(20))], ["dst"]))
    expect(m.mergedPaths).toEqual([{ path: "dst", method: "line" }])
    expect(m.plan.files.map((x) => x.merge)).toEqual([{ method: "line" }])
  })

  it("asks for a parser only for text both sides edited (real merge)", () => {
    const f = fixture()
    const asked: Array<string> = []
    const o = planChild({
      entries: [
        f.update("a.json", lines(20), lines(20, { 18: "c" })),
        f.update("taken.json", "x\n", "y\n"),
        f.update("same.json", "x\n", "z\n"),
        f.update("b.json", "1\n", "2\n")
      ],
      live: stateOf({ "a.json": lines(20, { 1: "s" }), "taken.json": "x\n", "same.json": "z\n", "b.json": "1\n" }),
      postimage: (h) => f.posts.get(h),
      preimage: (h) => f.history.get(h),
      changedBySiblings: new Set([P("a.json"), P("taken.json"), P("same.json")]),
      syntax: (path) => {
        asked.push(path)
        return { parser: { language: "json", parse: () => undefined }, expired: () => false }
      }
    })
    expect(asked).toEqual(["a.json"])
    expect(ready(o).mergedPaths).toEqual([{ path: "a.json", method: "line" }])
  })

  it("explains a conflict without hunks in terms of the workspace and this child", () => {
    const f = fixture()
    const [del] = conflicted(f.plan({ "a": "edited\n" }, [f.del("a", "a\n")], ["a"]))
    expect(del!.text).toMatch(/^the workspace edited this file and this child deleted it: apply to delete it, discard to keep the workspace's version/)
    const [bin] = conflicted(f.plan({ "b.bin": "\u0000s" }, [f.update("b.bin", "\u0000x", "\u0000y", "replace")], ["b.bin"]))
    expect(bin!.text).toMatch(/^the workspace and this child both changed this file/)
  })
})

describe("planOfFiles", () => {
  it("orders the summary as adds, modifications, deletions", () => {
    const p = planOfFiles([
      { kind: "delete", path: P("d"), before: enc("d"), after: undefined },
      { kind: "move", path: P("m"), moveFrom: P("s"), before: enc("s"), after: enc("s") },
      { kind: "add", path: P("a"), before: undefined, after: enc("a") }
    ])
    expect(p.summary).toEqual([{ status: "A", path: "a" }, { status: "M", path: "m" }, { status: "D", path: "d" }])
  })
})

// -------------------------------------------------------------------------------------
// properties
// -------------------------------------------------------------------------------------

const PATHS = ["a", "b", "c", "d/e", "d/f", "g.bin"].map(P)
const N = PATHS.length

interface Op {
  readonly op: number
  readonly target: number
  readonly dest: number
  readonly content: Uint8Array
  readonly pure: boolean
  readonly replace: boolean
}

const arbOp: fc.Arbitrary<Op> = fc.record({
  op: fc.nat(3),
  target: fc.nat(N - 1),
  dest: fc.nat(N - 1),
  content: fc.uint8Array({ maxLength: 8 }),
  pure: fc.boolean(),
  replace: fc.boolean()
})
const arbCase = fc.record({
  initial: fc.array(fc.option(fc.uint8Array({ maxLength: 8 }), { nil: undefined }), { minLength: N, maxLength: N }),
  ops: fc.array(arbOp, { maxLength: 6 }),
  siblings: fc.array(fc.boolean(), { minLength: N, maxLength: N }),
  pick: fc.nat(),
  at: fc.nat()
})

// A random changeset over a random workspace with no drift: entries touch distinct paths, and
// `expected` is the workspace once every entry has landed.
type Case = typeof arbCase extends fc.Arbitrary<infer A> ? A : never

const generate = (c: Case) => {
  const f = fixture()
  const ws = new Map<string, Uint8Array>()
  c.initial.forEach((b, i) => b !== undefined && ws.set(PATHS[i]!, b))
  const expected = new Map(ws)
  const claimed = new Set<string>()
  const entries: Array<ChangesetEntry> = []
  for (const o of c.ops) {
    const p = PATHS[o.target]!
    const q = PATHS[o.dest]!
    if (claimed.has(p)) continue
    const cur = ws.get(p)
    if (o.op === 0 && cur === undefined) {
      entries.push(f.add(p, o.content))
      expected.set(p, o.content)
    } else if (o.op === 1 && cur !== undefined) {
      entries.push(f.update(p, cur, o.content, o.replace ? "replace" : "update"))
      expected.set(p, o.content)
    } else if (o.op === 2 && cur !== undefined) {
      entries.push(f.del(p, cur))
      expected.delete(p)
    } else if (o.op === 3 && cur !== undefined && q !== p && !claimed.has(q)) {
      const after = o.pure ? cur : o.content
      entries.push(f.move(p, q, cur, after, ws.get(q)))
      expected.delete(p)
      expected.set(q, after)
      claimed.add(q)
    } else continue
    claimed.add(p)
  }
  const siblings = new Set(PATHS.filter((_, i) => c.siblings[i]))
  return { f, ws, expected, entries, siblings }
}

const liveFrom = (ws: ReadonlyMap<string, Uint8Array>) => (p: RelativePath): FileState => {
  const b = ws.get(p)
  return b === undefined ? { _tag: "Missing" } : { _tag: "File", bytes: b }
}
const asRecord = (m: ReadonlyMap<string, Uint8Array>) => Object.fromEntries([...m].map(([k, v]) => [k, [...v]]))

describe("planChild properties", () => {
  it("with no drift, is Ready or Noop and applying the plan gives exactly the child's postimages", () => {
    fc.assert(
      fc.property(arbCase, (c) => {
        const { entries, expected, f, siblings, ws } = generate(c)
        const o = planChild({ entries, live: liveFrom(ws), postimage: (h) => f.posts.get(h), preimage: () => undefined, changedBySiblings: siblings })
        const landed = o._tag === "Noop" ? ws : applyInMemory(ws, ready(o).plan)
        expect(asRecord(landed)).toEqual(asRecord(expected))
      }),
      { numRuns: 300 }
    )
  })

  it("any single-byte drift of a touched path gives Drift naming exactly that path", () => {
    fc.assert(
      fc.property(arbCase, (c) => {
        const { entries, f, siblings, ws } = generate(c)
        const touched = entries.flatMap((e) => (e.moveFrom === undefined ? [e.path] : [e.path, e.moveFrom]))
        fc.pre(touched.length > 0)
        const p = touched[c.pick % touched.length]!
        const cur = ws.get(p)
        const drifted = new Map(ws)
        if (cur === undefined || cur.length === 0) drifted.set(p, new Uint8Array([c.at % 256]))
        else {
          const b = new Uint8Array(cur)
          const i = c.at % b.length
          b[i] = b[i]! ^ 1
          drifted.set(p, b)
        }
        const others = new Set([...siblings].filter((s) => s !== p))
        const o = planChild({ entries, live: liveFrom(drifted), postimage: (h) => f.posts.get(h), preimage: (h) => f.history.get(h), changedBySiblings: others })
        expect(o).toEqual({ _tag: "Drift", paths: [p] })
      }),
      { numRuns: 300 }
    )
  })
})
