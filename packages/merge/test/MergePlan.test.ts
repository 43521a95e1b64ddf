/** The merge plan (SPEC §6.5): strategy, id lists, scopes and the actual overlaps of changesets. */
import { type MergePlanChild, mergePlanOf } from "@forkjoin/merge/MergePlan"
import { sha256 } from "@forkjoin/patch/Bytes"
import { byCodeUnit } from "@forkjoin/patch/RelativePath"
import { Changeset, type ChangesetEncoded } from "@forkjoin/schema/Changeset"
import { RelativePath, TaskId } from "@forkjoin/schema/Ids"
import { MergePlan } from "@forkjoin/schema/MergeRun"
import * as Schema from "effect/Schema"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"

const facts = (c: string) => ({ hash: sha256(c), bytes: c.length, encoding: "utf8", lineEnding: "none", finalNewline: false }) as const

// A touched path: `"x"` is an update of x, `"y<-x"` a move from x to y.
const entryOf = (spec: string): ChangesetEncoded["entries"][number] => {
  const [path, from] = spec.split("<-") as [string, string | undefined]
  return from === undefined
    ? { path, kind: "update", preimage: { path, ...facts("old") }, postimage: { path, ...facts("new") }, exportable: true }
    : { path, kind: "move", moveFrom: from, preimage: { path: from, ...facts("old") }, postimage: { path, ...facts("old") }, exportable: true }
}

const changeset = (id: string, touched: ReadonlyArray<string>, scope: ReadonlyArray<string> = ["src"]): Changeset =>
  Schema.decodeUnknownSync(Changeset)({
    schemaVersion: 1,
    childId: id,
    taskId: id,
    threadId: `run/${id}`,
    writeScope: scope,
    exportable: true,
    limits: { maxFileBytes: 16 * 1024 * 1024 },
    blobs: { addressing: "sha256", hashes: touched.some((t) => !t.includes("<-")) ? [sha256("new")] : [] },
    entries: touched.map(entryOf)
  })

const ro = (id: string, cs?: Changeset): MergePlanChild => ({ id: TaskId.make(id), mode: "read_only", ...(cs === undefined ? {} : { changeset: cs }) })
const rw = (id: string, cs?: Changeset, scope?: ReadonlyArray<string>): MergePlanChild => ({
  id: TaskId.make(id),
  mode: "transactional_write",
  ...(scope === undefined ? {} : { writeScope: scope.map((s) => RelativePath.make(s)) }),
  ...(cs === undefined ? {} : { changeset: cs })
})

describe("mergePlanOf", () => {
  it("is read_only with nothing to merge when no child mutates", () => {
    expect(mergePlanOf([ro("r1"), ro("r2")])).toEqual({
      strategy: "read_only",
      requiresParentMerge: false,
      readOnlyResultIds: ["r1", "r2"],
      mutatingResultIds: [],
      changesetResultIds: [],
      missingChangesetResultIds: [],
      writeScopes: {},
      overlaps: []
    })
    expect(mergePlanOf([]).strategy).toBe("read_only")
  })

  it("lists ids in task order, keys scopes by mutating child and names missing changesets", () => {
    const plan = mergePlanOf([
      rw("w2", changeset("w2", ["src/b"]), ["src/b"]),
      ro("r1"),
      rw("w1", undefined, ["src/a", "docs"]),
      rw("w3", changeset("w3", ["src/c"], ["src"]))
    ])
    expect(plan).toEqual({
      strategy: "transactional_parent_merge",
      requiresParentMerge: true,
      readOnlyResultIds: ["r1"],
      mutatingResultIds: ["w2", "w1", "w3"],
      changesetResultIds: ["w2", "w3"],
      missingChangesetResultIds: ["w1"],
      // w3 declared no scope: its changeset's scope stands in.
      writeScopes: { w2: ["src/b"], w1: ["src/a", "docs"], w3: ["src"] },
      overlaps: []
    })
    expect(Object.keys(plan.writeScopes)).toEqual(["w2", "w1", "w3"])
  })

  it("needs a parent merge only when some changeset has entries", () => {
    const plan = mergePlanOf([rw("w1", changeset("w1", []), ["src"]), rw("w2", undefined, ["src"])])
    expect(plan.strategy).toBe("transactional_parent_merge")
    expect(plan.requiresParentMerge).toBe(false)
    expect(mergePlanOf([rw("w1", changeset("w1", []), ["src"]), rw("w2", changeset("w2", ["src/x"]), ["src"])]).requiresParentMerge).toBe(true)
  })

  it("computes overlaps from touched paths (entry paths and moveFrom), sorted by code unit, ids in task order", () => {
    const plan = mergePlanOf([
      rw("c", changeset("c", ["src/é", "src/a", "src/Z<-src/m"])),
      rw("a", changeset("a", ["src/m", "src/a"])),
      rw("b", changeset("b", ["src/é", "src/b", "src/Z"]))
    ])
    expect(plan.overlaps).toEqual([
      { path: "src/Z", resultIds: ["c", "b"] },
      { path: "src/a", resultIds: ["c", "a"] },
      { path: "src/m", resultIds: ["c", "a"] },
      { path: "src/é", resultIds: ["c", "b"] }
    ])
  })

  it("ignores declared scopes and read-only children's changesets when computing overlaps", () => {
    const plan = mergePlanOf([
      rw("w1", changeset("w1", ["src/a"]), ["src"]),
      rw("w2", changeset("w2", ["src/b"]), ["src"]),
      ro("r1", changeset("r1", ["src/a"]))
    ])
    expect(plan.overlaps).toEqual([])
    expect(plan.changesetResultIds).toEqual(["w1", "w2"])
    expect(plan.writeScopes).toEqual({ w1: ["src"], w2: ["src"] })
  })

  it("produces a value the MergePlan schema accepts", () => {
    const plan = mergePlanOf([rw("w1", changeset("w1", ["src/a"])), rw("w2", changeset("w2", ["src/a"])), ro("r")])
    expect(Schema.decodeUnknownSync(MergePlan)(plan)).toEqual(plan)
  })
})

// Random joins over a few paths; each child touches a distinct set (as a changeset must).
const PATHS = ["src/a", "src/b", "src/B", "src/é", "src/d/e", "src/f"]
const arbChild = fc.record({
  mode: fc.constantFrom("read_only" as const, "transactional_write" as const),
  touched: fc.option(fc.subarray(PATHS), { nil: undefined }),
  move: fc.boolean(),
  scope: fc.option(fc.constantFrom(["src"], ["src/a", "src/b"]), { nil: undefined })
})
const arbChildren = fc.array(arbChild, { maxLength: 5 }).map((cs) =>
  cs.map((c, i): MergePlanChild => {
    const id = `t${i}`
    const touched = c.touched === undefined
      ? undefined
      : c.move && c.touched.length >= 2
      ? [`${c.touched[0]}<-${c.touched[1]}`, ...c.touched.slice(2)]
      : c.touched
    return c.mode === "read_only" ? ro(id, touched && changeset(id, touched)) : rw(id, touched && changeset(id, touched), c.scope)
  })
)

// The same values rebuilt with every object's keys in reverse order and fresh arrays.
const rebuilt = <A>(a: A): A =>
  Array.isArray(a)
    ? (a.map(rebuilt) as A)
    : typeof a === "object" && a !== null
    ? (Object.fromEntries(Object.entries(a).reverse().map(([k, v]) => [k, rebuilt(v)])) as A)
    : a

describe("mergePlanOf properties", () => {
  it("depends only on the children's values, not on identities or key order", () => {
    fc.assert(
      fc.property(arbChildren, (children) => {
        const plan = mergePlanOf(children)
        const again = mergePlanOf(rebuilt(children))
        expect(JSON.stringify(again)).toBe(JSON.stringify(plan))
        expect(Schema.decodeUnknownSync(MergePlan)(plan)).toEqual(plan)
      })
    )
  })

  it("lists exactly the paths two or more mutating changesets touch", () => {
    fc.assert(
      fc.property(arbChildren, (children) => {
        const expected = PATHS.slice().sort(byCodeUnit).flatMap((p) => {
          const ids = children
            .filter((c) => c.mode === "transactional_write" && c.changeset?.entries.some((e) => e.path === p || e.moveFrom === p))
            .map((c) => c.id)
          return ids.length > 1 ? [{ path: p, resultIds: ids }] : []
        })
        expect(mergePlanOf(children).overlaps).toEqual(expected)
      })
    )
  })
})
