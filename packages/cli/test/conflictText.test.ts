/** The CLI's excerpt of a conflict's text: the marker regions with context, whatever the markers' labels. */
import { describe, expect, it } from "vitest"
import { conflictExcerpt } from "../src/internal/conflictText.ts"

const file = (open: string, base: string, close: string): string =>
  ["l1", "l2", "l3", "l4", "l5", open, "ours", base, "was", "=======", "theirs", close, "r1", "r2", "r3", "r4", "r5", ""].join("\n")

describe("conflictExcerpt", () => {
  it("keeps each marker region with 3 lines around it, for a join's labels, the old labels and bare markers alike", () => {
    const region = (open: string, base: string, close: string) =>
      ["…", "l3", "l4", "l5", open, "ours", base, "was", "=======", "theirs", close, "r1", "r2", "r3", "…"]
    for (const [open, base, close] of [
      ["<<<<<<< workspace", "||||||| baseline", ">>>>>>> second"],
      ["<<<<<<< ours", "||||||| base", ">>>>>>> theirs"],
      ["<<<<<<<", "|||||||", ">>>>>>>"]
    ] as const) {
      expect(conflictExcerpt(file(open, base, close))).toEqual(region(open, base, close))
    }
  })

  it("a line that only starts like a marker is content, and text without markers is shown whole", () => {
    const lines = ["a", "b", "c", "d", "e", "<<<<<<<<not a marker", "=======x", "f", "g"]
    expect(conflictExcerpt(`${lines.join("\n")}\n`)).toEqual(lines)
  })
})
