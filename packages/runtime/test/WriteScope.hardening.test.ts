/**
 * Hardening (issue 9 item 6, and item 4 for scopes): write scopes that can never work are
 * refused when the scope is made and when a plan is validated: globs (taken literally they
 * match nothing), `.git` and `.forkjoin` at any depth, NUL bytes. Literal names that merely
 * look special (`app/[id]`, `.github`) stay valid, and coverage of real file names is unchanged.
 */
import * as Result from "effect/Result"
import { describe, expect, it } from "vitest"
import * as RunPlan from "../src/RunPlan.ts"
import * as WriteScope from "../src/WriteScope.ts"

const reason = (raw: string) => {
  const r = WriteScope.normalizePath(raw)
  return Result.isSuccess(r) ? r.success : r.failure.reason
}

const planWith = (writeScope: ReadonlyArray<string>) => ({
  schemaVersion: 1,
  tasks: [{ id: "t", mode: "transactional_write", writeScope, actions: [{ finish: {} }] }]
})

describe("WriteScope: scopes are directory or file paths, not globs", () => {
  it.each(["*", "**", "src/*", "src/**", "src/**/*.ts", "*.ts", "src/?", "lib/a?.ts"])("refuses the glob %j", (raw) => {
    expect(reason(raw)).toBe("glob_pattern")
  })

  it("the message says scopes are paths, not globs, and what to write instead", () => {
    const sub = WriteScope.normalizePath("src/api/*")
    expect(Result.isFailure(sub) && sub.failure.message).toMatch(/not globs/)
    expect(Result.isFailure(sub) && sub.failure.message).toMatch(/"src\/api"/)
    const all = WriteScope.normalizePath("**")
    expect(Result.isFailure(all) && all.failure.message).toMatch(/directory or file paths, not globs/)
  })

  it("make refuses a glob anywhere in the list", () => {
    const r = WriteScope.make(["src/a", "docs/*"])
    expect(Result.isFailure(r) && r.failure).toMatchObject({ reason: "glob_pattern", path: "docs/*" })
  })

  it("literal names with brackets or braces stay valid (Next.js routes, templates)", () => {
    expect(reason("app/[id]/page.tsx")).toBe("app/[id]/page.tsx")
    expect(reason("app/[...slug]")).toBe("app/[...slug]")
    expect(reason("tpl/{{name}}")).toBe("tpl/{{name}}")
  })
})

describe("WriteScope: .git and .forkjoin can never be in a scope, at any depth", () => {
  it.each([".git", ".git/hooks", "src/.git", "vendor/lib/.git/config", ".forkjoin", ".forkjoin/runs", "a/.forkjoin", ".GIT/config", "src/.Forkjoin"])(
    "refuses %j",
    (raw) => {
      expect(reason(raw)).toBe("reserved_path")
    }
  )

  it("the message names the folder and says why", () => {
    const r = WriteScope.normalizePath("vendor/lib/.git/hooks")
    expect(Result.isFailure(r) && r.failure.message).toMatch(/"vendor\/lib\/\.git\/hooks".*\.git/)
    expect(Result.isFailure(r) && r.failure.message).toMatch(/hooks|config/)
  })

  it("names that only look alike stay valid", () => {
    for (const p of [".github", ".github/workflows", ".gitignore", "src/x.git", "git", ".forkjoinrc", "a/.gitkeep"]) expect(reason(p), p).toBe(p)
  })

  it("NUL bytes stay refused", () => {
    expect(reason("src/\u0000")).toBe("invalid_character")
  })
})

describe("WriteScope.covers: the scope rules do not change which real file names a scope covers", () => {
  it("a file whose name holds '*' or '?' is covered by its directory's scope", () => {
    const scope = WriteScope.makeUnsafe(["src"])
    expect(WriteScope.covers(scope, "src/what?.md")).toBe(true)
    expect(WriteScope.covers(scope, "src/a*b.txt")).toBe(true)
    expect(WriteScope.violations(scope, ["src/a*b.txt", "docs/x"])).toEqual(["docs/x"])
  })
})

describe("RunPlan validation refuses scopes that can never work (exit 2 at the CLI)", () => {
  it.each([
    ["*", /not globs/],
    ["**", /not globs/],
    ["src/*", /not globs/],
    [".git", /\.git/],
    [".forkjoin", /\.forkjoin/],
    ["src/.git/hooks", /\.git/],
    [".forkjoin/runs", /\.forkjoin/],
    ["src/\u0000", /NUL/]
  ])("writeScope %j", (scope, message) => {
    const r = RunPlan.decode(planWith(["docs", scope]))
    expect(Result.isFailure(r)).toBe(true)
    if (Result.isFailure(r)) {
      expect(r.failure.path).toBe("$.tasks[0].writeScope[1]")
      expect(r.failure.detail).toMatch(message)
    }
  })

  it("a plan with literal bracketed scopes still validates", () => {
    const r = RunPlan.decode(planWith(["app/[id]", ".github"]))
    expect(Result.isSuccess(r) && r.success.tasks[0]!.writeScope).toEqual([".github", "app/[id]"])
  })
})
