/**
 * Plan files decoded directly (not only through the CLI): a good plan with its defaults and
 * normalized scopes, and every kind of bad plan with the JSON path of its first problem.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Result from "effect/Result"
import * as Action from "../src/Action.ts"
import * as RunPlan from "../src/RunPlan.ts"

const edit = (extra: Record<string, unknown> = {}) => ({
  id: "t",
  mode: "transactional_write",
  writeScope: ["src"],
  actions: [],
  ...extra
})

const problem = (raw: unknown) => {
  const r = RunPlan.decode(raw)
  return Result.isFailure(r) ? { path: r.failure.path, detail: r.failure.detail } : { decoded: r.success }
}

describe("RunPlan.decode", () => {
  it("validates a good plan: scopes normalized, defaults filled, actions decoded", () => {
    const r = RunPlan.decode({
      schemaVersion: 1,
      autonomy: "safe",
      tasks: [
        edit({ writeScope: ["src/b", "src\\a\\..\\a", "src/b/"], maxAttempts: 2, actions: [{ read_file: { path: "x" } }, { finish: {} }] }),
        { id: "r", mode: "read_only", timeoutMs: 5, actions: [{ list_dir: { path: "." } }] }
      ]
    })
    assert.isTrue(Result.isSuccess(r))
    if (Result.isFailure(r)) return
    assert.deepStrictEqual(JSON.parse(JSON.stringify(r.success)), {
      schemaVersion: 1,
      autonomy: "safe",
      tasks: [
        {
          id: "t",
          mode: "transactional_write",
          writeScope: ["src/a", "src/b"],
          maxAttempts: 2,
          timeoutMs: RunPlan.DEFAULT_TIMEOUT_MS,
          actions: [{ name: "read_file", args: { path: "x" } }, { name: "finish", args: {} }]
        },
        { id: "r", mode: "read_only", maxAttempts: 1, timeoutMs: 5, actions: [{ name: "list_dir", args: { path: "." } }] }
      ]
    })
    assert.isUndefined(r.success.tasks[1]!.writeScope)
  })

  it("names the JSON path of schema problems, from the root down to array indices and excess keys", () => {
    const cases: ReadonlyArray<readonly [unknown, string, string]> = [
      [null, "$", "Expected object"],
      [{ schemaVersion: 2, tasks: [] }, "$.schemaVersion", "Expected 1"],
      [{ schemaVersion: 1 }, "$.tasks", "Missing key"],
      [{ schemaVersion: 1, tasks: [], extra: 1 }, "$.extra", "Expected no excess property"],
      [{ schemaVersion: 1, autonomy: "wild", tasks: [] }, "$.autonomy", "Expected \"off\" | \"supervised\" | \"safe\" | \"bold\""],
      [{ schemaVersion: 1, tasks: [edit(), edit({ mode: "rw" })] }, "$.tasks[1].mode", "Expected \"transactional_write\" | \"read_only\""],
      [{ schemaVersion: 1, tasks: [edit({ maxAttempts: 4 })] }, "$.tasks[0].maxAttempts", "Expected a value between 1 and 3"],
      [{ schemaVersion: 1, tasks: [edit({ maxAttempts: 1.5 })] }, "$.tasks[0].maxAttempts", "Expected an integer"],
      [{ schemaVersion: 1, tasks: [edit({ timeoutMs: 0 })] }, "$.tasks[0].timeoutMs", "Expected a value greater than 0"],
      [{ schemaVersion: 1, tasks: [edit({ writeScope: ["a", 3] })] }, "$.tasks[0].writeScope[1]", "Expected string"],
      [{ schemaVersion: 1, tasks: [edit({ extra: true })] }, "$.tasks[0].extra", "Expected no excess property"],
      [{ schemaVersion: 1, tasks: [edit({ "we\"ird": 1 })] }, "$.tasks[0][\"we\\\"ird\"]", "Expected no excess property"],
      [{ schemaVersion: 1, tasks: [edit()], atomic: "yes" }, "$.atomic", "Expected boolean"],
      [{ schemaVersion: 1, tasks: [edit()], verify: { command: [], timeoutMs: 5 } }, "$.verify.command[0]", "Missing key"],
      [{ schemaVersion: 1, tasks: [edit()], between: [{ move: { path: "a" } }] }, "$.between[0].move", "Expected no excess property"]
    ]
    for (const [raw, path, detail] of cases) assert.deepStrictEqual(problem(raw), { path, detail })
    const badId = problem({ schemaVersion: 1, tasks: [edit({ id: "bad/id" })] })
    assert.strictEqual("path" in badId ? badId.path : undefined, "$.tasks[0].id")
  })

  it("names the task, scope entry or action of plan-level problems", () => {
    const cases: ReadonlyArray<readonly [unknown, string, RegExp]> = [
      [{ schemaVersion: 1, tasks: [edit(), edit()] }, "$.tasks[1].id", /^duplicate task id "t"/],
      [{ schemaVersion: 1, tasks: [edit({ writeScope: [] })] }, "$.tasks[0].writeScope", /non-empty writeScope/],
      [{ schemaVersion: 1, tasks: [{ id: "t", mode: "transactional_write", actions: [] }] }, "$.tasks[0].writeScope", /non-empty writeScope/],
      [{ schemaVersion: 1, tasks: [edit({ mode: "read_only" })] }, "$.tasks[0].writeScope", /a read_only task has no write scope/],
      [{ schemaVersion: 1, tasks: [edit({ writeScope: ["src", "../x"] })] }, "$.tasks[0].writeScope[1]", /escapes the workspace/],
      [{ schemaVersion: 1, tasks: [edit({ writeScope: ["/etc"] })] }, "$.tasks[0].writeScope[0]", /is absolute/],
      [{ schemaVersion: 1, tasks: [edit({ writeScope: ["."] })] }, "$.tasks[0].writeScope[0]", /names no file or directory/],
      [{ schemaVersion: 1, tasks: [edit({ writeScope: ["a\u0001"] })] }, "$.tasks[0].writeScope[0]", /control character/],
      [{ schemaVersion: 1, tasks: [edit({ actions: [{}] })] }, "$.tasks[0].actions[0]", /exactly one key/],
      [{ schemaVersion: 1, tasks: [edit({ actions: [{ nope: {} }] })] }, "$.tasks[0].actions[0]", /^unknown action "nope"/],
      [{ schemaVersion: 1, tasks: [edit({ actions: [{ finish: {} }, { read_file: {} }] })] }, "$.tasks[0].actions[1].read_file.path", /^read_file: Missing key$/],
      [{ schemaVersion: 1, tasks: [edit({ actions: [{ read_file: { path: 1 } }] })] }, "$.tasks[0].actions[0].read_file.path", /^read_file: Expected string$/],
      [{ schemaVersion: 1, tasks: [edit({ actions: [{ read_file: { path: "a", x: 1 } }] })] }, "$.tasks[0].actions[0].read_file.x", /^read_file: Expected no excess property$/],
      [{ schemaVersion: 1, tasks: [edit({ actions: [{ apply_patch: "x" }] })] }, "$.tasks[0].actions[0].apply_patch", /^apply_patch: Expected object$/],
      [{ schemaVersion: 1, tasks: [{ id: "x", mode: "read_only" }] }, "$.tasks[0]", /exactly one of "actions" .* or "changesetFile"/],
      [{ schemaVersion: 1, tasks: [edit({ changesetFile: "c.json" })] }, "$.tasks[0]", /exactly one of "actions"/],
      [{ schemaVersion: 1, tasks: [{ id: "r", mode: "read_only", changesetFile: "c.json" }] }, "$.tasks[0].changesetFile", /only a transactional_write task/],
      [{ schemaVersion: 1, tasks: [edit()], resolve: [{ childId: "nobody", resolution: "apply" }] }, "$.resolve[0].childId", /no task has the id "nobody"/],
      [{ schemaVersion: 1, tasks: [edit()], resolve: [{ childId: "t", resolution: "content" }] }, "$.resolve[0].content", /"content" is required/],
      [{ schemaVersion: 1, tasks: [edit()], resolve: [{ childId: "t", resolution: "apply", content: "x" }] }, "$.resolve[0].content", /not allowed with the others/],
      [{ schemaVersion: 1, tasks: [edit()], between: [{ write: { path: "../x", content: "" } }] }, "$.between[0].write.path", /escapes the workspace/]
    ]
    for (const [raw, path, detail] of cases) {
      const p = problem(raw)
      assert.strictEqual("path" in p ? p.path : undefined, path)
      assert.match("detail" in p ? p.detail : "", detail)
    }
  })

  it("decodeJson: invalid JSON is a problem at $", () => {
    const r = RunPlan.decodeJson("{ nope")
    assert.isTrue(Result.isFailure(r))
    if (Result.isSuccess(r)) return
    assert.strictEqual(r.failure.path, "$")
    assert.match(r.failure.message, /^invalid plan at \$: not valid JSON/)
    assert.include(r.failure.message, "not valid JSON (line 1, column 3: expected a key in double quotes, found 'n').")
  })

  it("decodeJson: a syntax error says its line and column", () => {
    const r = RunPlan.decodeJson("{\n  \"schemaVersion\": 1\n    \"tasks\": []\n}\n")
    assert.isTrue(Result.isFailure(r))
    if (Result.isSuccess(r)) return
    assert.strictEqual(r.failure.path, "$")
    assert.include(r.failure.message, "not valid JSON (line 3, column 5: expected ',' or '}', found '\"')")
  })
})

describe("Action.decodeAction", () => {
  it("paths are relative to where decoding started", () => {
    assert.deepStrictEqual(Action.decodeAction({ list_dir: {} }, "$.x"), Result.fail({ code: "invalid_action", path: "$.x.list_dir.path", message: "list_dir: Missing key" }))
    assert.deepStrictEqual(
      Action.decodeAction({ apply_patch: { patch: "p", extra: 1 } }),
      Result.fail({ code: "invalid_action", path: "$.apply_patch.extra", message: "apply_patch: Expected no excess property" })
    )
  })
})
