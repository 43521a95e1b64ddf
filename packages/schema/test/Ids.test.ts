import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import {
  ConflictId,
  ID_RULE,
  idRuleProblem,
  EnvironmentId,
  InvocationId,
  MergeRunId,
  MergeRunIdInput,
  RecordId,
  RelativePath,
  RunId,
  RunIdInput,
  Sha256Hash,
  TaskId,
  ThreadId,
  ThreadIdInput,
  TransactionId,
  transactionKind,
  TurnId,
  TurnIdInput
} from "../src/Ids.ts"
import { accepts, decodeFailure } from "./helpers.ts"

const UUID = "0f8fad5b-d9cb-469f-a165-70867728950e"
const HEX = "0123456789abcdef".repeat(4)

describe("the id rule (threads, turns, runs as they come in)", () => {
  const ids = { ThreadIdInput, TurnIdInput, MergeRunIdInput, RunIdInput }
  for (const [name, schema] of Object.entries(ids)) {
    it(`${name} accepts letters, digits and _ . - : / in non-empty segments`, () => {
      for (const ok of ["parent/child-1:turn.2", "a", UUID, "run-1/task_2", "x".repeat(256), "a.b", "...", ":x:"]) {
        expect(accepts(schema, ok)).toBe(true)
      }
    })
    it(`${name} refuses ids that break the rule, naming the id and the rule`, () => {
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["", "it is empty"],
        ["../x", "\"..\" segment"],
        ["a//b", "empty segment"],
        ["a/./b", "\".\" segment"],
        ["/a", "empty segment"],
        ["a/", "empty segment"],
        ["x".repeat(257), "257 characters"],
        ["caf\u00e9", "contains \"\u00e9\""],
        ["a b", "contains \" \""],
        ["a\nb", "contains \"\\n\""],
        ["a\\b", "contains \"\\\\\""]
      ]
      for (const [bad, problem] of cases) {
        const message = decodeFailure(schema, bad)
        expect(message).toContain(`the id ${JSON.stringify(bad)} is refused`)
        expect(message).toContain(problem)
        expect(message).toContain(ID_RULE)
      }
    })
  }
  it("the rule is one function, shared by every id schema", () => {
    expect(idRuleProblem("parent/child-1:turn.2")).toBeUndefined()
    expect(idRuleProblem("a/../b")).toBe("it has a \"..\" segment")
    expect(decodeFailure(TaskId, "a/b")).toContain("TaskId must be")
  })
})

describe("opaque ids", () => {
  // Stored thread, turn and run ids keep this looser form, so records older versions wrote still decode.
  const ids = { ThreadId, TurnId, MergeRunId, RunId, InvocationId, EnvironmentId, RecordId, ConflictId }
  for (const [name, schema] of Object.entries(ids)) {
    it(`${name} accepts ordinary ids and rejects empty, control characters and padding`, () => {
      expect(accepts(schema, "thread-1")).toBe(true)
      expect(accepts(schema, UUID)).toBe(true)
      expect(decodeFailure(schema, "")).toContain(`${name} must not be empty`)
      expect(decodeFailure(schema, "a\nb")).toContain("control characters")
      expect(decodeFailure(schema, " a")).toContain("whitespace")
      expect(decodeFailure(schema, "x".repeat(257))).toContain("at most 256")
      expect(decodeFailure(schema, 42)).toContain("Expected string")
    })
  }

  it("stored thread, turn and run ids accept what older versions did, which the input rule refuses", () => {
    for (const [stored, input] of [[ThreadId, ThreadIdInput], [TurnId, TurnIdInput], [MergeRunId, MergeRunIdInput], [RunId, RunIdInput]] as const) {
      for (const old of ["my thread", "bob@laptop", "caf\u00e9", "../x"]) {
        expect(accepts(stored, old)).toBe(true)
        expect(decodeFailure(input, old)).toContain(ID_RULE)
      }
    }
  })

  it("decodes to the same string and encodes back", () => {
    const id = Schema.decodeUnknownSync(ThreadId)("t-1")
    expect(id).toBe("t-1")
    expect(Schema.encodeSync(ThreadId)(id)).toBe("t-1")
    expect(ThreadId.make("t-2")).toBe("t-2")
    expect(() => ThreadId.make("")).toThrow()
  })
})

describe("TaskId", () => {
  it("accepts safe directory names", () => {
    for (const ok of ["a", "child-1", "task_2.retry", "_x", "A.B-c_9"]) expect(accepts(TaskId, ok)).toBe(true)
  })
  it("rejects names that are not a single safe path segment", () => {
    for (const bad of ["", ".", "..", ".hidden", "-flag", "a/b", "a b", "a\\b", "x".repeat(129)]) {
      expect(decodeFailure(TaskId, bad)).toContain("TaskId must be")
    }
  })
})

describe("TransactionId", () => {
  it("accepts every documented form", () => {
    const ok = [
      `patch:${UUID}`,
      "subagent_merge:child-a",
      `rollback:patch:${UUID}`,
      `rollback:rollback:subagent_merge:child-a`,
      "conflict_resolution:c-1",
      "gap:g-1",
      "provider_aggregate:codex-turn-7",
      "verification:v-1"
    ]
    for (const id of ok) expect(accepts(TransactionId, id), id).toBe(true)
  })

  it("rejects unknown prefixes, naming the kind", () => {
    expect(decodeFailure(TransactionId, `merge:${UUID}`)).toContain(`unknown kind "merge"`)
    expect(decodeFailure(TransactionId, `PATCH:${UUID}`)).toContain(`unknown kind "PATCH"`)
    expect(decodeFailure(TransactionId, `${UUID}`)).toContain("must have the form patch:<uuid>")
  })

  it("rejects malformed payloads", () => {
    expect(decodeFailure(TransactionId, "patch:123")).toContain("lowercase UUID")
    expect(decodeFailure(TransactionId, `patch:${UUID.toUpperCase()}`)).toContain("lowercase UUID")
    expect(decodeFailure(TransactionId, "rollback:nonsense")).toContain("needs a transaction id after \"rollback:\"")
    expect(decodeFailure(TransactionId, "rollback:")).toContain("rollback:")
    expect(decodeFailure(TransactionId, "subagent_merge:")).toContain("must not be empty")
    expect(decodeFailure(TransactionId, "subagent_merge:a\u0000b")).toContain("control characters")
  })

  it("transactionKind reads the prefix", () => {
    expect(transactionKind(TransactionId.make(`rollback:patch:${UUID}`))).toBe("rollback")
    expect(transactionKind(TransactionId.make("subagent_merge:c"))).toBe("subagent_merge")
  })
})

describe("Sha256Hash", () => {
  it("accepts sha256: plus 64 lowercase hex digits", () => {
    expect(accepts(Sha256Hash, `sha256:${HEX}`)).toBe(true)
  })
  it("rejects other forms", () => {
    for (const bad of [HEX, `sha256:${HEX.toUpperCase()}`, `sha256:${HEX.slice(1)}`, `sha256:${HEX}0`, `sha1:${HEX}`, `sha256:${"g".repeat(64)}`]) {
      expect(decodeFailure(Sha256Hash, bad)).toContain("Sha256Hash must be \"sha256:\" followed by 64 lowercase hex digits")
    }
  })
})

describe("RelativePath", () => {
  it("accepts normalized relative POSIX paths", () => {
    for (const ok of ["a", "src/api/x.ts", ".gitignore", "..foo/bar", "a/.b/c..", "dir with space/é.txt"]) {
      expect(accepts(RelativePath, ok), ok).toBe(true)
    }
  })
  it("rejects each kind of non-normalized or escaping path with a reason", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["", "must not be empty"],
      ["/etc/passwd", "must be relative, not absolute"],
      ["a\\b", "backslashes"],
      ["C:\\x", "backslashes"],
      ["a\u0000b", "NUL"],
      ["../x", "\"..\" segments"],
      ["a/../b", "\"..\" segments"],
      ["./a", "\".\" segments"],
      ["a/.", "\".\" segments"],
      ["a//b", "empty segments"],
      ["a/", "empty segments"]
    ]
    for (const [input, reason] of cases) expect(decodeFailure(RelativePath, input), input).toContain(reason)
  })
})
