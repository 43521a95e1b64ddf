/**
 * The rollback plan (SPEC §6.8): every kind undone, net effects of several changes, drift and
 * missing content refusing to plan (strict), a drifted path merged with the later work or held
 * as a conflict, a held rollback planned with its resolutions, and properties over random
 * transactions.
 */
import { planRollback, rollbackMarkerLabels, type RollbackPlanInput, type RollbackPlanOutcome, type RollbackResolution } from "@forkjoin/merge/RollbackPlan"
import { sameBytes, sha256 } from "@forkjoin/patch/Bytes"
import type { FileState, Plan } from "@forkjoin/patch/Plan"
import { snapshotOf } from "@forkjoin/patch/Snapshot"
import { RelativePath, TransactionId } from "@forkjoin/schema/Ids"
import type { FileChange } from "@forkjoin/schema/PatchHistoryRecord"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

// -------------------------------------------------------------------------------------
// fixtures
// -------------------------------------------------------------------------------------

const P = (p: string) => RelativePath.make(p)
const enc = (s: string | Uint8Array): Uint8Array => (typeof s === "string" ? new TextEncoder().encode(s) : s)
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b))
type Workspace = ReadonlyMap<string, Uint8Array>

// One test's blob store, filled by the change builders as the engine stores every side.
const fixture = () => {
  const blobs = new Map<string, Uint8Array>()
  const snap = (c: string | Uint8Array) => {
    const bytes = enc(c)
    blobs.set(sha256(bytes), bytes)
    return snapshotOf(bytes, 0o644)
  }
  const add = (path: string, after: string, overwritten?: string): FileChange => ({
    kind: "add",
    path: P(path),
    after: snap(after),
    ...(overwritten === undefined ? {} : { overwritten: snap(overwritten) })
  })
  const update = (path: string, before: string, after: string, kind: "update" | "replace" = "update"): FileChange => ({
    kind,
    path: P(path),
    before: snap(before),
    after: snap(after)
  })
  const del = (path: string, before: string): FileChange => ({ kind: "delete", path: P(path), before: snap(before) })
  const move = (from: string, to: string, before: string, after: string, overwritten?: string): FileChange => ({
    kind: "move",
    path: P(to),
    moveFrom: P(from),
    before: snap(before),
    after: snap(after),
    ...(overwritten === undefined ? {} : { overwritten: snap(overwritten) })
  })
  // Strict unless told: the refusals below are today's; the merge has its own examples.
  const plan = (
    live: Readonly<Record<string, string | FileState>>,
    changes: ReadonlyArray<FileChange>,
    options: Pick<RollbackPlanInput, "strict" | "resolved" | "labels"> = { strict: true }
  ): RollbackPlanOutcome =>
    planRollback({
      ...options,
      changes,
      live: (p) => {
        const c = live[p]
        return c === undefined ? { _tag: "Missing" } : typeof c === "string" ? { _tag: "File", bytes: enc(c) } : c
      },
      blob: (h) => blobs.get(h)
    })
  return { blobs, add, update, del, move, plan }
}

// The engine's semantics for a plan (checkBaseline, then stepsOf).
const applyInMemory = (ws: Workspace, plan: Plan): Map<string, Uint8Array> => {
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

const filesOf = (o: RollbackPlanOutcome) => {
  if (o._tag !== "Ready") throw new Error(`expected Ready, got ${JSON.stringify(o)}`)
  return o.plan.files.map((f) => ({
    kind: f.kind,
    path: f.path,
    ...(f.moveFrom === undefined ? {} : { moveFrom: f.moveFrom }),
    before: dec(f.before),
    after: dec(f.after),
    ...(f.overwritten === undefined ? {} : { overwritten: dec(f.overwritten) })
  }))
}

// -------------------------------------------------------------------------------------
// examples
// -------------------------------------------------------------------------------------

describe("planRollback: one change of each kind", () => {
  it("deletes an add, re-creates a delete, and puts updates and replacements back", () => {
    const f = fixture()
    const o = f.plan({ "n": "new\n", "u": "U\n", "r": "R" }, [
      f.add("n", "new\n"),
      f.del("d", "gone\n"),
      f.update("u", "u\n", "U\n"),
      f.update("r", "r", "R", "replace")
    ])
    expect(filesOf(o)).toEqual([
      { kind: "add", path: "d", before: undefined, after: "gone\n" },
      { kind: "delete", path: "n", before: "new\n", after: undefined },
      { kind: "replace", path: "r", before: "R", after: "r" },
      { kind: "update", path: "u", before: "U\n", after: "u\n" }
    ])
    expect(o._tag === "Ready" && o.plan.summary).toEqual([
      { status: "A", path: "d" },
      { status: "M", path: "r" },
      { status: "M", path: "u" },
      { status: "D", path: "n" }
    ])
  })

  it("moves a moved file back, with its original content", () => {
    const f = fixture()
    expect(filesOf(f.plan({ "b": "B\n" }, [f.move("a", "b", "A\n", "B\n")]))).toEqual([
      { kind: "move", path: "a", moveFrom: "b", before: "B\n", after: "A\n" }
    ])
  })

  it("moves a file back and restores the destination it had replaced, in one plan", () => {
    const f = fixture()
    const o = f.plan({ "b": "moved\n" }, [f.move("a", "b", "moved\n", "moved\n", "old b\n")])
    expect(filesOf(o)).toEqual([
      { kind: "move", path: "a", moveFrom: "b", before: "moved\n", after: "moved\n" },
      { kind: "replace", path: "b", before: "moved\n", after: "old b\n" }
    ])
    const ws = new Map([["b", enc("moved\n")]])
    const back = applyInMemory(ws, o._tag === "Ready" ? o.plan : { files: [], summary: [] })
    expect([...back].map(([k, v]) => [k, dec(v)])).toEqual([["b", "old b\n"], ["a", "moved\n"]])
  })

  it("restores a file an add had overwritten", () => {
    const f = fixture()
    expect(filesOf(f.plan({ "a": "new" }, [f.add("a", "new", "old")]))).toEqual([{ kind: "replace", path: "a", before: "new", after: "old" }])
  })
})

describe("planRollback: several changes in one transaction", () => {
  it("undoes the net effect: first before, last after per path", () => {
    const f = fixture()
    const o = f.plan({ "a": "3" }, [f.update("a", "1", "2"), f.update("a", "2", "3", "replace")])
    expect(filesOf(o)).toEqual([{ kind: "replace", path: "a", before: "3", after: "1" }])
  })

  it("follows a file through a move and a later edit", () => {
    const f = fixture()
    const o = f.plan({ "c": "edited" }, [f.move("a", "b", "x", "x"), f.move("b", "c", "x", "x"), f.update("c", "x", "edited")])
    expect(filesOf(o)).toEqual([{ kind: "move", path: "a", moveFrom: "c", before: "edited", after: "x" }])
  })

  it("plans nothing for changes that cancel out, and does not check their paths", () => {
    const f = fixture()
    const o = f.plan({ "t": "someone else's" }, [f.add("t", "tmp"), f.del("t", "tmp")])
    expect(o).toEqual({ _tag: "Ready", plan: { files: [], summary: [] }, merged: [] })
  })
})

describe("planRollback: refusals", () => {
  it("is drift, naming every path, when a path no longer holds the postimage or absence", () => {
    const f = fixture()
    const changes = [f.update("u", "1", "2"), f.add("n", "new"), f.del("d", "old"), f.move("m", "mm", "x", "x")]
    expect(f.plan({ "u": "2", "n": "new", "mm": "x" }, changes)._tag).toBe("Ready")
    expect(f.plan({ "u": "edited", "n": "new", "mm": "x" }, changes)).toEqual({ _tag: "Drift", paths: ["u"] })
    expect(f.plan({ "u": "2", "mm": "x" }, changes)).toEqual({ _tag: "Drift", paths: ["n"] })
    expect(f.plan({ "u": "2", "n": "new", "d": "back", "mm": "x" }, changes)).toEqual({ _tag: "Drift", paths: ["d"] })
    expect(f.plan({ "u": "2", "n": "new", "mm": "x", "m": "re-created" }, changes)).toEqual({ _tag: "Drift", paths: ["m"] })
    expect(f.plan({ "u": { _tag: "Directory" }, "n": "new", "mm": "x" }, changes)).toEqual({ _tag: "Drift", paths: ["u"] })
    expect(f.plan({ "u": "3" }, changes)).toEqual({ _tag: "Drift", paths: ["mm", "n", "u"] })
  })

  it("is unavailable, naming the hashes and paths, when a blob to restore is missing or corrupt", () => {
    const f = fixture()
    const changes = [f.update("u", "1", "2"), f.del("d", "old")]
    f.blobs.delete(sha256("1"))
    expect(f.plan({ "u": "2" }, changes)).toEqual({ _tag: "Unavailable", hashes: [sha256("1")], paths: ["u"] })
    f.blobs.set(sha256("1"), enc("1"))
    f.blobs.set(sha256("old"), enc("not old"))
    expect(f.plan({ "u": "2" }, changes)).toEqual({ _tag: "Unavailable", hashes: [sha256("old")], paths: ["d"] })
  })

  it("needs no blob of the postimage: the live bytes are the before side", () => {
    const f = fixture()
    const changes = [f.update("u", "1", "2")]
    f.blobs.delete(sha256("2"))
    expect(filesOf(f.plan({ "u": "2" }, changes))).toEqual([{ kind: "update", path: "u", before: "2", after: "1" }])
  })

  it("is unavailable when a record lacks a snapshot it needs (an inexact record)", () => {
    const f = fixture()
    const { before: _, ...noBefore } = f.update("u", "1", "2")
    expect(f.plan({ "u": "2" }, [noBefore])).toEqual({ _tag: "Unavailable", hashes: [], paths: ["u"] })
    const { after: __, ...noAfter } = f.move("a", "b", "x", "y")
    expect(f.plan({ "b": "y" }, [noAfter])).toEqual({ _tag: "Unavailable", hashes: [], paths: ["b"] })
  })

  it("reports drift before missing content", () => {
    const f = fixture()
    const changes = [f.update("u", "1", "2")]
    f.blobs.clear()
    expect(f.plan({ "u": "edited" }, changes)._tag).toBe("Drift")
  })
})

// -------------------------------------------------------------------------------------
// properties
// -------------------------------------------------------------------------------------

const PATHS = ["a", "b", "c", "d/e", "d/f"].map(P)
const N = PATHS.length

const arbOp = fc.record({
  op: fc.nat(5),
  target: fc.nat(N - 1),
  dest: fc.nat(N - 1),
  content: fc.uint8Array({ maxLength: 6 }),
  keep: fc.boolean()
})
const arbCase = fc.record({
  initial: fc.array(fc.option(fc.uint8Array({ maxLength: 6 }), { nil: undefined }), { minLength: N, maxLength: N }),
  ops: fc.array(arbOp, { minLength: 1, maxLength: 8 }),
  pick: fc.nat(),
  at: fc.nat()
})
type Case = typeof arbCase extends fc.Arbitrary<infer A> ? A : never

// Runs random engine-like changes over a random workspace, recording each as the engine does
// (every side's blob stored); returns the workspace before and after, the changes and blobs.
const transact = (c: Case) => {
  const blobs = new Map<string, Uint8Array>()
  const snap = (b: Uint8Array) => {
    blobs.set(sha256(b), b)
    return snapshotOf(b, 0o644)
  }
  const before = new Map<string, Uint8Array>()
  c.initial.forEach((b, i) => b !== undefined && before.set(PATHS[i]!, b))
  const ws = new Map(before)
  const changes: Array<FileChange> = []
  for (const o of c.ops) {
    const p = PATHS[o.target]!
    const q = PATHS[o.dest]!
    const cur = ws.get(p)
    const after = o.keep && cur !== undefined ? cur : o.content
    switch (o.op) {
      case 0:
        if (cur === undefined) changes.push({ kind: "add", path: p, after: snap(after) })
        else changes.push({ kind: "add", path: p, overwritten: snap(cur), after: snap(after) })
        ws.set(p, after)
        break
      case 1:
      case 2:
        if (cur === undefined) break
        changes.push({ kind: o.op === 1 ? "update" : "replace", path: p, before: snap(cur), after: snap(after) })
        ws.set(p, after)
        break
      case 3:
        if (cur === undefined) break
        changes.push({ kind: "delete", path: p, before: snap(cur) })
        ws.delete(p)
        break
      default: {
        if (cur === undefined || q === p) break
        const over = ws.get(q)
        changes.push({ kind: "move", path: q, moveFrom: p, before: snap(cur), after: snap(after), ...(over === undefined ? {} : { overwritten: snap(over) }) })
        ws.delete(p)
        ws.set(q, after)
      }
    }
  }
  return { before, after: ws, changes, blobs }
}

const liveFrom = (ws: Workspace) => (p: RelativePath): FileState => {
  const b = ws.get(p)
  return b === undefined ? { _tag: "Missing" } : { _tag: "File", bytes: b }
}
const asRecord = (m: Workspace) => Object.fromEntries([...m].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, [...v]]))

describe("planRollback properties", () => {
  it("rolling back a random transaction in memory restores the original workspace exactly", () => {
    fc.assert(
      fc.property(arbCase, (c) => {
        const t = transact(c)
        const o = planRollback({ changes: t.changes, live: liveFrom(t.after), blob: (h) => t.blobs.get(h) })
        if (o._tag !== "Ready") throw new Error(`expected Ready, got ${JSON.stringify(o)}`)
        expect(asRecord(applyInMemory(t.after, o.plan))).toEqual(asRecord(t.before))
      }),
      { numRuns: 500 }
    )
  })

  it("any single-byte drift of a path the transaction changed gives Drift naming exactly that path", () => {
    fc.assert(
      fc.property(arbCase, (c) => {
        const t = transact(c)
        const changed = PATHS.filter((p) => {
          const a = t.before.get(p)
          const b = t.after.get(p)
          return a === undefined ? b !== undefined : b === undefined || !sameBytes(a, b)
        })
        fc.pre(changed.length > 0)
        const p = changed[c.pick % changed.length]!
        const cur = t.after.get(p)
        const drifted = new Map(t.after)
        if (cur === undefined || cur.length === 0) drifted.set(p, new Uint8Array([c.at % 256]))
        else {
          const b = new Uint8Array(cur)
          const i = c.at % b.length
          b[i] = b[i]! ^ 1
          drifted.set(p, b)
        }
        const o = planRollback({ changes: t.changes, live: liveFrom(drifted), blob: (h) => t.blobs.get(h), strict: true })
        expect(o).toEqual({ _tag: "Drift", paths: [p] })
      }),
      { numRuns: 500 }
    )
  })
})

// -------------------------------------------------------------------------------------
// reverse merge
// -------------------------------------------------------------------------------------

const TEN = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
const TX = TransactionId.make("patch:0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9")

describe("planRollback: merging a path changed since", () => {
  it("undoes only the transaction's lines when later work edited elsewhere in the file", () => {
    const f = fixture()
    const changes = [f.update("u", TEN, TEN.replace("2\n", "two\n")), f.update("v", "a\n", "b\n")]
    const live = { "u": TEN.replace("2\n", "two\n").replace("9\n", "nine\n"), "v": "b\n" }
    const o = f.plan(live, changes, {})
    expect(filesOf(o)).toEqual([
      { kind: "update", path: "u", before: live.u, after: TEN.replace("9\n", "nine\n") },
      { kind: "update", path: "v", before: "b\n", after: "a\n" }
    ])
    expect(o._tag === "Ready" && o.merged).toEqual(["u"])
    // The merged write says how it was made; the plain restore does not.
    expect(o._tag === "Ready" && o.plan.files.map((x) => x.merge)).toEqual([{ method: "line" }, undefined])
    // --strict keeps refusing it.
    expect(f.plan(live, changes)).toEqual({ _tag: "Drift", paths: ["u"] })
  })

  it("holds an overlapping later edit as a conflict, labelled, with nothing planned", () => {
    const f = fixture()
    const post = TEN.replace("2\n", "two\n")
    const live = { "u": TEN.replace("2\n", "TWO\n"), "v": "b\n" }
    const o = f.plan(live, [f.update("u", TEN, post), f.update("v", "a\n", "b\n")], { labels: rollbackMarkerLabels(TX) })
    if (o._tag !== "Conflicted") throw new Error(`expected Conflicted, got ${o._tag}`)
    expect(o.conflicts.map((c) => [c.path, c.reason, dec(c.base), dec(c.ours), dec(c.theirs)])).toEqual([
      ["u", "overlapping_edits", post, live.u, TEN]
    ])
    expect(o.conflicts[0]!.hunks).toEqual([{ baseStart: 2, base: ["two\n"], ours: ["TWO\n"], theirs: ["2\n"] }])
    expect(o.conflicts[0]!.text).toContain("<<<<<<< workspace\nTWO\n||||||| rolled back patch:0f1e2d3c\ntwo\n=======\n2\n>>>>>>> before patch:0f1e2d3c\n")
  })

  it("holds an added file edited since, and a deleted file re-created differently; leaves a path already back alone", () => {
    const f = fixture()
    const changes = [f.add("n", "new\n"), f.del("d", "old\n"), f.update("u", "1\n", "2\n")]
    const o = f.plan({ "n": "new, edited\n", "d": "other\n", "u": "1\n" }, changes, {})
    if (o._tag !== "Conflicted") throw new Error(`expected Conflicted, got ${o._tag}`)
    expect(o.conflicts.map((c) => [c.path, c.reason])).toEqual([["d", "add_vs_add"], ["n", "edit_vs_delete"]])
    expect(filesOf(f.plan({ "n": "new\n", "u": "1\n" }, changes, {}))).toEqual([
      { kind: "add", path: "d", before: undefined, after: "old\n" },
      { kind: "delete", path: "n", before: "new\n", after: undefined }
    ])
  })

  it("plans no write, and no merged path, where the merge gives back the live bytes (the transaction's lines are gone already)", () => {
    const f = fixture()
    const changes = [f.update("u", TEN, TEN.replace("2\n", "two\n")), f.update("v", "a\n", "b\n")]
    // Later work put line 2 back and edited line 9: merging the rollback in changes nothing.
    const o = f.plan({ "u": TEN.replace("9\n", "nine\n"), "v": "b\n" }, changes, {})
    expect(filesOf(o)).toEqual([{ kind: "update", path: "v", before: "b\n", after: "a\n" }])
    expect(o._tag === "Ready" && o.merged).toEqual([])
    expect(f.plan({ "u": TEN.replace("9\n", "nine\n"), "v": "a\n" }, changes, {})).toEqual({ _tag: "Ready", plan: { files: [], summary: [] }, merged: [] })
  })

  it("never merges a moved file or a path that is no longer a file: drift, strict or not", () => {
    const f = fixture()
    expect(f.plan({ "b": "edited" }, [f.move("a", "b", "x", "x")], {})).toEqual({ _tag: "Drift", paths: ["b"] })
    expect(f.plan({ "u": { _tag: "Directory" } }, [f.update("u", "1", "2")], {})).toEqual({ _tag: "Drift", paths: ["u"] })
  })

  it("needs the postimage's blob of a drifted path, the merge's base", () => {
    const f = fixture()
    const changes = [f.update("u", TEN, TEN.replace("2\n", "two\n"))]
    f.blobs.delete(sha256(TEN.replace("2\n", "two\n")))
    expect(f.plan({ "u": TEN.replace("2\n", "two\n").replace("9\n", "nine\n") }, changes, {})).toEqual({
      _tag: "Unavailable",
      hashes: [sha256(TEN.replace("2\n", "two\n"))],
      paths: ["u"]
    })
  })
})

describe("planRollback: a held rollback with its resolutions", () => {
  const post = TEN.replace("2\n", "two\n").replace("9\n", "nine\n")
  const liveU = TEN.replace("2\n", "TWO\n").replace("9\n", "nine\n").replace("5\n", "five\n")
  const setup = () => {
    const f = fixture()
    const changes = [f.update("u", TEN, post), f.update("w", "w\n", "W\n"), f.add("n", "n\n")]
    const held = f.plan({ "u": liveU, "w": "W\n", "n": "n, edited\n" }, changes, {})
    if (held._tag !== "Conflicted") throw new Error(`expected Conflicted, got ${held._tag}`)
    const hunks = held.conflicts.find((c) => c.path === "u")!.hunks
    return { f, changes, hunks }
  }

  it("plans the whole rollback: apply takes the earlier side of the held hunks only, discard keeps, content writes", () => {
    const { changes, f, hunks } = setup()
    const resolved = new Map<RelativePath, RollbackResolution>([
      [P("u"), { kind: "apply" as const, hunks, ours: sha256(liveU) }],
      [P("n"), { kind: "discard" as const }]
    ])
    const live = { "u": liveU, "w": "W\n", "n": "n, edited\n" }
    expect(filesOf(f.plan(live, changes, { resolved }))).toEqual([
      // Line 2 back as it was; the transaction's line 9 undone; the later line 5 kept.
      { kind: "update", path: "u", before: liveU, after: TEN.replace("5\n", "five\n") },
      { kind: "update", path: "w", before: "W\n", after: "w\n" }
    ])
    const content = new Map<RelativePath, RollbackResolution>([...resolved, [P("n"), { kind: "content" as const, bytes: enc("mine\n"), ours: sha256("n, edited\n") }]])
    expect(filesOf(f.plan(live, changes, { resolved: content })).find((x) => x.path === "n")).toEqual({
      kind: "update",
      path: "n",
      before: "n, edited\n",
      after: "mine\n"
    })
  })

  it("is stale when the live file moved on since a resolution was given, and conflicted while one is missing", () => {
    const { changes, f, hunks } = setup()
    const content = new Map([
      [P("u"), { kind: "apply" as const, hunks, ours: sha256(liveU) }],
      [P("n"), { kind: "content" as const, bytes: enc("mine\n"), ours: sha256("n, edited\n") }]
    ])
    expect(f.plan({ "u": liveU, "w": "W\n", "n": "edited again\n" }, changes, { resolved: content })).toMatchObject({ _tag: "Stale", path: "n" })
    const open = f.plan({ "u": liveU, "w": "W\n", "n": "n, edited\n" }, changes, { resolved: new Map([[P("u"), content.get(P("u"))!]]) })
    expect(open._tag === "Conflicted" && open.conflicts.map((c) => c.path)).toEqual(["n"])
  })
})

describe("planRollback: merge properties", () => {
  it("without drift, merging plans exactly what the strict rollback plans", () => {
    fc.assert(
      fc.property(arbCase, (c) => {
        const t = transact(c)
        const input = { changes: t.changes, live: liveFrom(t.after), blob: (h: string) => t.blobs.get(h) }
        expect(planRollback(input)).toEqual(planRollback({ ...input, strict: true }))
      }),
      { numRuns: 300 }
    )
  })

  it("a later edit on other lines survives the rollback; the transaction's lines come back", () => {
    const arbLines = fc.array(fc.constantFrom("x", "y", "z"), { minLength: 6, maxLength: 12 })
    fc.assert(
      fc.property(arbLines, fc.nat(), fc.nat(), (base, i, j) => {
        const n = base.length
        const mine = i % (n / 2 | 0)
        const later = (n / 2 | 0) + 1 + (j % (n - (n / 2 | 0) - 1))
        const text = (ls: ReadonlyArray<string>) => ls.map((l) => `${l}\n`).join("")
        const edit = (ls: ReadonlyArray<string>, at: number, v: string) => ls.map((l, k) => (k === at ? v : l))
        const f = fixture()
        const o = f.plan({ "u": text(edit(edit(base, mine, "TX"), later, "LATER")) }, [f.update("u", text(base), text(edit(base, mine, "TX")))], {})
        expect(filesOf(o)[0]?.after).toBe(text(edit(base, later, "LATER")))
      }),
      { numRuns: 200 }
    )
  })
})

describe("rollbackMarkerLabels", () => {
  it("names the workspace, the transaction rolled back and what was before it, its first UUID cut to 8 digits", () => {
    expect(rollbackMarkerLabels(TransactionId.make("subagent_merge:run-1/child"))).toEqual({
      ours: "workspace",
      base: "rolled back subagent_merge:run-1/child",
      theirs: "before subagent_merge:run-1/child"
    })
    expect(rollbackMarkerLabels(TX).base).toBe("rolled back patch:0f1e2d3c")
  })
})
