/**
 * `JsonText.parseJson`: the value of valid JSON (a leading BOM ignored); for broken JSON the
 * line, column and problem of the first error, and whether the text was cut off.
 */
import { assert, describe, it } from "@effect/vitest"
import { describeSyntaxError, parseJson } from "../src/JsonText.ts"

const errorOf = (text: string) => {
  const r = parseJson(text)
  if (r.ok) throw new Error(`parsed: ${text}`)
  return r.error
}

describe("parseJson", () => {
  it("parses JSON, ignoring a leading BOM", () => {
    assert.deepStrictEqual(parseJson("\uFEFF{\"a\": [1, true, null, \"x\"]}"), { ok: true, value: { a: [1, true, null, "x"] } })
  })

  it("a missing comma at line 3, column 5", () => {
    const e = errorOf("{\n  \"a\": 1\n    \"b\": 2\n}\n")
    assert.deepStrictEqual({ line: e.line, column: e.column, truncated: e.truncated }, { line: 3, column: 5, truncated: false })
    assert.strictEqual(describeSyntaxError(e), "line 3, column 5: expected ',' or '}', found '\"'")
  })

  it("names what JSON does not allow, in objects and arrays alike", () => {
    const problems: ReadonlyArray<[string, string]> = [
      ["{\"a\": 1,}", "line 1, column 9: a trailing comma before '}' is not allowed in JSON"],
      ["[1, 2,\n]", "line 2, column 1: a trailing comma before ']' is not allowed in JSON"],
      ["[1 2]", "line 1, column 4: expected ',' or ']', found '2'"],
      ["{'a': 1}", "line 1, column 2: expected a key in double quotes, found '''"],
      ["['a']", "line 1, column 2: strings need double quotes in JSON, not single quotes"],
      ["// x\n{}", "line 1, column 1: comments are not allowed in JSON"],
      ["{\"a\" 1}", "line 1, column 6: expected ':' after the key, found '1'"],
      ["\"a\\q\"", "line 1, column 3: '\\q' is not a JSON escape"],
      ["{} x", "line 1, column 4: unexpected 'x' after the end of the JSON value"]
    ]
    for (const [text, said] of problems) assert.strictEqual(describeSyntaxError(errorOf(text)), said, text)
  })

  it("a text that ends early is truncated; an empty one says so", () => {
    const cut = errorOf("{\"a\": [1, ")
    assert.isTrue(cut.truncated)
    assert.include(cut.problem, "the text ends where a value was expected")
    assert.deepStrictEqual([errorOf("  \n").problem, errorOf("").truncated], ["the file is empty", true])
  })
})
