/**
 * The provider input schemas accept what the parser has always accepted (the events the
 * ingest tests use, hook keys it ignores, its lenient `replace_all` / response reading) and
 * refuse what it refuses; the parser, decoding with them, names the JSON path of a problem.
 */
import { ClaudeToolEvent, CodexTurnDiff } from "@forkjoin/history/ProviderInputs"
import { assert, describe, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import { parseEvent, type ParsedEvent, type PathRefused } from "../src/internal/providerFormats.ts"

const isCodexTurnDiff = Schema.is(CodexTurnDiff)
const isClaudeToolEvent = Schema.is(ClaudeToolEvent)
const anyPath = (raw: string) => ({ path: raw })

const parsed = (result: ParsedEvent | string | PathRefused): ParsedEvent => {
  if (typeof result === "string") return assert.fail(result)
  if ("refused" in result) return assert.fail(result.refused)
  return result
}

// The events of ProviderAggregates.test.ts and the CLI's history / friction tests.
const CODEX_DIFFS = [
  "diff --git a/src/app.ts b/src/app.ts\nindex 1111111..2222222 100644\n--- a/src/app.ts\n+++ b/src/app.ts\n" +
  "@@ -1,3 +1,3 @@\n const a = 1\n-const b = 2\n+const b = 3\n export { a, b }\n" +
  "diff --git a/x/from.txt b/y/to.txt\nsimilarity index 100%\nrename from x/from.txt\nrename to y/to.txt\n",
  "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n",
  "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n"
]

const CLAUDE_EVENTS: ReadonlyArray<unknown> = [
  {
    session_id: "s",
    tool_name: "Edit",
    tool_input: { file_path: "/ws/src/a.ts", old_string: "one", new_string: "two" },
    tool_response: { filePath: "/ws/src/a.ts", originalFile: "x one y\n" }
  },
  {
    type: "tool_use",
    name: "MultiEdit",
    id: "toolu_1",
    input: { file_path: "b.ts", edits: [{ old_string: "a", new_string: "b" }, { old_string: "c", new_string: "d" }] }
  },
  { tool_name: "Write", tool_input: { file_path: "w.txt", content: "w\n" }, tool_response: { type: "create" } },
  { tool_name: "Edit", tool_input: { file_path: "b.ts", old_string: "x", new_string: "d", replace_all: true } },
  { tool_name: "Write", tool_input: { file_path: "c.txt", content: "c\n" } }
]

describe("ProviderInputs", () => {
  it("the ingest tests' turn diffs are CodexTurnDiff values and parse", () => {
    for (const diff of CODEX_DIFFS) {
      assert.isTrue(isCodexTurnDiff(diff), diff)
      assert.isAbove(parsed(parseEvent("codex-turn-diff", diff, anyPath)).changes.length, 0)
    }
  })

  it("text that does not start a file section is refused by the schema and the parser alike", () => {
    for (const text of ["", "  \n", "hello\nworld\n", "garbage", "\ndiff --git a/x b/x\n", "+++ b/x\n"]) {
      assert.isFalse(isCodexTurnDiff(text), JSON.stringify(text))
      assert.isString(parseEvent("codex-turn-diff", text, anyPath), JSON.stringify(text))
    }
    assert.strictEqual(parseEvent("codex-turn-diff", "", anyPath), "the turn diff is empty")
    assert.match(String(parseEvent("codex-turn-diff", "hello\n", anyPath)), /^line 1 is not part of a unified diff/)
  })

  it("the ingest tests' Claude events are ClaudeToolEvent values and parse", () => {
    for (const event of CLAUDE_EVENTS) {
      assert.isTrue(isClaudeToolEvent(event), JSON.stringify(event))
      assert.strictEqual(parsed(parseEvent("claude-tool-event", JSON.stringify(event), anyPath)).changes.length, 1)
    }
  })

  it("broken Claude events are refused by the schema and the parser, which names the JSON path", () => {
    const broken: ReadonlyArray<readonly [unknown, RegExp]> = [
      [{ tool_name: "Bash", tool_input: { command: "ls" } }, /^tool "Bash" does not change files/],
      [{ tool_input: { file_path: "a", content: "" } }, /names no tool/],
      [{ tool_name: "Edit", tool_input: { file_path: "a.txt" } }, /^the Edit event is not valid at \$\.tool_input\.old_string: /],
      [{ tool_name: "Edit" }, /^the Edit event is not valid at \$\.tool_input: /],
      [{ tool_name: "Write", tool_input: { file_path: "a", content: 5 } }, /at \$\.tool_input\.content: .*string/],
      [{ tool_name: "MultiEdit", tool_input: { file_path: "a", edits: [] } }, /at \$\.tool_input\.edits: /],
      [
        { type: "tool_use", name: "MultiEdit", input: { file_path: "a", edits: [{ old_string: "a", new_string: "b" }, { old_string: "c" }] } },
        /^the MultiEdit event is not valid at \$\.input\.edits\[1\]\.new_string: /
      ],
      [{ tool_name: "Write", tool_input: [] }, /at \$\.tool_input: /],
      [{ type: "tool_result", name: "Edit", input: { file_path: "a", old_string: "a", new_string: "b" } }, /names no tool/]
    ]
    for (const [event, message] of broken) {
      assert.isFalse(isClaudeToolEvent(event), JSON.stringify(event))
      assert.match(String(parseEvent("claude-tool-event", JSON.stringify(event), anyPath)), message)
    }
  })

  it("what the parser has always tolerated still parses: odd replace_all, any response, extra input keys", () => {
    const edit = (extra: object, response?: unknown) =>
      parsed(parseEvent(
        "claude-tool-event",
        JSON.stringify({
          tool_name: "Edit",
          tool_input: { file_path: "a.txt", old_string: "x", new_string: "y", ...extra },
          ...(response === undefined ? {} : { tool_response: response })
        }),
        anyPath
      )).changes[0]!
    const first = edit({ replace_all: "yes" }, { originalFile: "x x\n" })
    assert.deepStrictEqual([first.kind, first.after, first.hunks[0]!.all], ["update", "y x\n", false])
    assert.strictEqual(edit({ replace_all: true }, { originalFile: "x x\n" }).after, "y y\n")
    // A stray `content` does not make an Edit a Write.
    assert.strictEqual(edit({ content: "whole" }).kind, "update")
    // A response that is not an object, or an originalFile that is not a string, is ignored.
    for (const response of ["The file was updated", { originalFile: 5 }]) {
      const change = edit({}, response)
      assert.deepStrictEqual([change.before, change.after], [undefined, undefined])
      assert.isTrue(isClaudeToolEvent({
        tool_name: "Edit",
        tool_input: { file_path: "a.txt", old_string: "x", new_string: "y" },
        tool_response: response
      }))
    }
    // `tool_input` null falls back to `input`, as it always has.
    const fallback = parseEvent(
      "claude-tool-event",
      JSON.stringify({ tool_name: "Write", tool_input: null, input: { file_path: "w", content: "w" } }),
      anyPath
    )
    assert.strictEqual(parsed(fallback).changes[0]!.after, "w")
  })
})
