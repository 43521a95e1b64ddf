/**
 * Short ids against ids whose path holds UUIDs too (pure): only an id's own UUID, its first, is
 * shortened and may be typed short; a UUID in a conflict's path stays as it is, in the text and
 * in what is typed, so a crafted file name neither changes how a path reads nor slows matching.
 */
import { describe, expect, it } from "vitest"
import * as ShortIds from "../src/internal/shortIds.ts"

const RUN = "1234abcd-1111-4111-8111-111111111111"
const U = "00000000-0000-0000-0000-000000000000"
const many = (part: string) => Array.from({ length: 40 }, () => part).join("-")
const conflict = `run-${RUN}/t:d/${many(U)}.txt`
const ids = ShortIds.make({ run: [`run-${RUN}`], transaction: [], conflict: [conflict], record: [], thread: [], transactionOf: new Map() })

describe("an id whose path holds 40 UUIDs joined by '-'", () => {
  it("is shown with its run's UUID shortened and its path whole", () => {
    expect(ids.short(conflict)).toBe(`run-1234abcd/t:d/${many(U)}.txt`)
    expect(ids.shortIn(`open: ${conflict} (run-${RUN})`)).toBe(`open: run-1234abcd/t:d/${many(U)}.txt (run-1234abcd)`)
  })

  it("is named by that short form, and not by one that cuts a UUID of its path", () => {
    expect(ids.match("conflict", `run-1234/t:d/${many(U)}.txt`)).toEqual({ _tag: "Unique", id: conflict })
    expect(ids.match("conflict", `run-1234abcd/t:d/${many("0000")}.txt`)).toEqual({ _tag: "None" })
    expect(ids.match("conflict", `run-1234abcd/t:d/${many("00000000-0000-0000-0000-0000")}-nope.txt`)).toEqual({ _tag: "None" })
  })
})
