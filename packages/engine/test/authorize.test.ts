/** Stage 4: the write grant, overwrite authorization of plans, and missing directories. */
import { RelativePath } from "@forkjoin/schema/Ids"
import type { Plan } from "@forkjoin/patch"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { Grants } from "../src/Grant.ts"
import { authorizePlan, checkDirectories, checkWriteGrant, missingDirectories } from "../src/internal/authorize.ts"
import { makeWorkspace, removeSandboxes } from "./helpers.ts"

afterAll(removeSandboxes)

const b = (s: string): Uint8Array => new TextEncoder().encode(s)

describe("authorize", () => {
  it("a read-only grant refuses every change", () => {
    expect(checkWriteGrant(Grants.write, ["a"])).toBeUndefined()
    expect(checkWriteGrant(Grants.readOnly, ["a", "b"])).toMatchObject({ code: "permission_denied", stage: 4, paths: ["a", "b"] })
  })

  it("replacing a file needs the overwrite grant: target_exists, or unsafe_move for a move", () => {
    const replace: Plan = { files: [{ kind: "replace", path: RelativePath.make("a"), before: b("1"), after: b("2") }], summary: [] }
    const move: Plan = {
      files: [{ kind: "move", path: RelativePath.make("d"), moveFrom: RelativePath.make("s"), before: b("1"), after: b("1"), overwritten: b("old") }],
      summary: []
    }
    const update: Plan = { files: [{ kind: "update", path: RelativePath.make("a"), before: b("1"), after: b("2") }], summary: [] }
    expect(authorizePlan(replace, Grants.writeCreateDirs)).toMatchObject({ code: "target_exists", stage: 4, paths: ["a"] })
    expect(authorizePlan(move, Grants.writeCreateDirs)).toMatchObject({ code: "unsafe_move", stage: 4, paths: ["d"] })
    expect(authorizePlan(update, Grants.writeCreateDirs)).toBeUndefined()
    expect(authorizePlan(replace, Grants.full)).toBeUndefined()
    expect(authorizePlan(move, Grants.full)).toBeUndefined()
  })

  it("finds the missing directories parents first, once each, and needs create-dirs for them", () => {
    const ws = makeWorkspace({ "have/x": "x" })
    const dirs = missingDirectories([
      path.join(ws, "new/deep/a.txt"),
      path.join(ws, "new/deep/b.txt"),
      path.join(ws, "have/c.txt"),
      path.join(ws, "new/other/d.txt")
    ])
    expect(dirs).toEqual([path.join(ws, "new"), path.join(ws, "new/deep"), path.join(ws, "new/other")])
    expect(fs.existsSync(path.join(ws, "new"))).toBe(false)
    expect(checkDirectories(dirs, Grants.writeCreateDirs, ws)).toBeUndefined()
    expect(checkDirectories([], Grants.write, ws)).toBeUndefined()
    expect(checkDirectories(dirs, Grants.write, ws)).toMatchObject({
      code: "directory_create_denied",
      stage: 4,
      paths: ["new", "new/deep", "new/other"]
    })
  })
})
