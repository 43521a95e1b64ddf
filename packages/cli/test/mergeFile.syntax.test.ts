/**
 * `merge-file` and `merge-driver` with the syntax-aware merge, in process with a `Grammars`
 * that records what it is asked for: a grammar is loaded only when both sides changed a file in
 * a known language (never for a one-sided change or an unknown extension); `--language` beats
 * the extension; a grammar that fails to load gives one warning naming it and a line merge.
 */
import { assert, describe, it } from "@effect/vitest"
import { Grammars } from "@forkjoin/merge/Grammars"
import type { Language } from "@forkjoin/merge/Syntax"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll } from "vitest"
import { runDriver } from "../src/MergeDriver.ts"
import { mergeFiles } from "../src/MergeFile.ts"
import { makeSandbox, removeSandboxes } from "./helpers.ts"
import { text, writeSides } from "./mergeHelpers.ts"

afterAll(removeSandboxes)

/** Both sides add an import at the same place: a line conflict, merged by syntax. */
const IMPORTS = {
  base: text(`import { a } from "./a"`, "", "export const x = 1"),
  ours: text(`import { a } from "./a"`, `import { b } from "./b"`, "", "export const x = 1"),
  theirs: text(`import { a } from "./a"`, `import { c } from "./c"`, "", "export const x = 1")
}
const IMPORTS_MERGED = text(`import { a } from "./a"`, `import { b } from "./b"`, `import { c } from "./c"`, "", "export const x = 1")

/** The installed grammars, with every request recorded in `asked`. */
const recording = (asked: Array<Language>) =>
  Layer.effect(
    Grammars,
    Effect.gen(function*() {
      const real = yield* Grammars
      return Grammars.of({ parser: (language) => Effect.sync(() => asked.push(language)).pipe(Effect.andThen(real.parser(language))), loaded: real.loaded })
    })
  ).pipe(Layer.provide(Grammars.layer))

const sidesIn = (sides: typeof IMPORTS, ext: string) => {
  const { dir } = makeSandbox()
  return writeSides(dir, sides, { ours: `ours.${ext}`, base: `base.${ext}`, theirs: `theirs.${ext}` })
}

describe("merge-file by syntax", () => {
  it.effect("both sides changed a .ts file: the typescript grammar is loaded and the line conflict merges", () =>
    Effect.gen(function*() {
      const asked: Array<Language> = []
      const at = sidesIn(IMPORTS, "ts")
      const result = yield* mergeFiles({ ...at, toStdout: false, labels: [] }).pipe(Effect.provide(recording(asked)))
      assert.deepStrictEqual(result.report, { ok: true, path: at.ours, clean: true, conflicts: 0, method: "structured", language: "typescript" })
      assert.deepStrictEqual(asked, ["typescript"])
      assert.strictEqual(fs.readFileSync(at.ours, "utf8"), IMPORTS_MERGED)
    }))

  it.effect("a one-sided change and a file in no known language load no grammar", () =>
    Effect.gen(function*() {
      const asked: Array<Language> = []
      const oneSided = sidesIn({ ...IMPORTS, theirs: IMPORTS.base }, "ts")
      const r1 = yield* mergeFiles({ ...oneSided, toStdout: true, labels: [] }).pipe(Effect.provide(recording(asked)))
      assert.strictEqual(r1.report.method, "line")
      const unknown = sidesIn(IMPORTS, "txt")
      const r2 = yield* mergeFiles({ ...unknown, toStdout: true, labels: [] }).pipe(Effect.provide(recording(asked)))
      assert.deepStrictEqual([r2.report.clean, r2.report.conflicts, r2.report.method], [false, 1, "line"])
      assert.deepStrictEqual(asked, [])
    }))

  it.effect("--language merges a file its extension does not name", () =>
    Effect.gen(function*() {
      const asked: Array<Language> = []
      const at = sidesIn(IMPORTS, "txt")
      const result = yield* mergeFiles({ ...at, toStdout: true, labels: [], language: "typescript" }).pipe(Effect.provide(recording(asked)))
      assert.strictEqual(result.report.method, "structured")
      assert.deepStrictEqual(asked, ["typescript"])
      assert.strictEqual(new TextDecoder().decode(result.printed), IMPORTS_MERGED)
    }))

  it.effect("a grammar that fails to load: one warning naming it, and the line merge's conflict", () =>
    Effect.gen(function*() {
      const at = sidesIn(IMPORTS, "ts")
      const result = yield* mergeFiles({ ...at, toStdout: false, labels: [] }).pipe(Effect.provide(Grammars.none))
      assert.deepStrictEqual([result.report.method, result.report.conflicts], ["line", 1])
      assert.strictEqual(result.warnings.length, 1)
      assert.match(result.warnings[0]!, /^the typescript grammar could not be loaded: .*; this file was merged by lines only$/)
      assert.match(fs.readFileSync(at.ours, "utf8"), /^<<<<<<< /m)
    }))

  it.effect("a key both sides add in different places is held (duplicate_member), the line merge written", () =>
    Effect.gen(function*() {
      const base = text("{", `  "a": 1,`, `  "b": 2,`, `  "c": 3`, "}")
      const ours = text("{", `  "x": 0,`, `  "a": 1,`, `  "b": 2,`, `  "c": 3`, "}")
      const theirs = text("{", `  "a": 1,`, `  "b": 2,`, `  "c": 3,`, `  "x": 1`, "}")
      const at = sidesIn({ base, ours, theirs }, "json")
      const result = yield* mergeFiles({ ...at, toStdout: false, labels: [] }).pipe(Effect.provide(Grammars.layer))
      assert.deepStrictEqual(result.report, { ok: true, path: at.ours, clean: false, conflicts: 1, method: "line", reason: "duplicate_member" })
      assert.strictEqual(fs.readFileSync(at.ours, "utf8"), text("{", `  "x": 0,`, `  "a": 1,`, `  "b": 2,`, `  "c": 3,`, `  "x": 1`, "}"))
    }))
})

describe("merge-driver by syntax", () => {
  it.effect("%P's extension chooses the grammar (git's temp files have none)", () =>
    Effect.gen(function*() {
      const asked: Array<Language> = []
      const { dir } = makeSandbox()
      const at = writeSides(dir, IMPORTS, { base: ".merge_file_O", ours: ".merge_file_A", theirs: ".merge_file_B" })
      const outcome = yield* runDriver({ base: at.base, current: at.ours, other: at.theirs, pathName: "src/index.ts" }).pipe(Effect.provide(recording(asked)))
      assert.deepStrictEqual(outcome, { _tag: "Clean", warnings: [] })
      assert.deepStrictEqual(asked, ["typescript"])
      assert.strictEqual(fs.readFileSync(path.join(dir, ".merge_file_A"), "utf8"), IMPORTS_MERGED)
    }))
})
