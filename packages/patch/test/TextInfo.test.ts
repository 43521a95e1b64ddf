import * as fc from "fast-check"
import { isUtf8 } from "node:buffer"
import { describe, expect, it } from "vitest"
import { describeText } from "../src/index.ts"
import { enc } from "./helpers.ts"

describe("describeText", () => {
  it("classifies encodings, line endings and the final newline", () => {
    expect(describeText(enc("a\nb\n"))).toEqual({ encoding: "utf8", lineEnding: "lf", finalNewline: true })
    expect(describeText(enc("a\r\nb"))).toEqual({ encoding: "utf8", lineEnding: "crlf", finalNewline: false })
    expect(describeText(enc("a\r\nb\n"))).toEqual({ encoding: "utf8", lineEnding: "mixed", finalNewline: true })
    expect(describeText(enc("a\rb\r"))).toEqual({ encoding: "utf8", lineEnding: "mixed", finalNewline: true })
    expect(describeText(enc("no newline"))).toEqual({ encoding: "utf8", lineEnding: "none", finalNewline: false })
    expect(describeText(enc(""))).toEqual({ encoding: "utf8", lineEnding: "none", finalNewline: false })
    expect(describeText(enc("\uFEFFx\n"))).toEqual({ encoding: "utf8-bom", lineEnding: "lf", finalNewline: true })
    expect(describeText(new Uint8Array([0x61, 0, 0x0a])).encoding).toBe("binary")
    expect(describeText(new Uint8Array([0xff, 0xfe, 0x0a])).encoding).toBe("binary")
  })

  it("a platform UTF-8 check gives the same answers as the strict decoder", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        expect(describeText(bytes, (b) => isUtf8(b))).toEqual(describeText(bytes))
      }),
      { numRuns: 2000 }
    )
  })
})
