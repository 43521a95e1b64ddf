/**
 * Tampered changesets (SPEC §6.6 step 1): a changeset is untrusted input, so one exported by a
 * real child and then edited — an entry whose image names another path, no write scope, an
 * entry outside the scope — is refused with the SPEC's status before anything is written,
 * while an honest sibling is applied.
 *
 * Owns the scenarios' fixtures and expectations, not the revalidation.
 */
import * as Effect from "effect/Effect"
import * as path from "node:path"
import {
  changesetTask,
  childTransaction,
  editJson,
  editTask,
  exportChild,
  inWorkspace,
  makeDirectory,
  planOf,
  records,
  removeAt,
  runPlan,
  type Scenario,
  setAt,
  transactionsOf,
  writeFiles
} from "../internal/harness.ts"

const FILES = { "m/a.txt": "a1\na2\n", "m/b.txt": "b1\n", "other/o.txt": "o\n" }

/** Child t's edit; its changeset's entries in path order: update m/a.txt, delete m/b.txt, add m/new.txt. */
const EXPORTED = editTask("t", ["m"], ["*** Update File: m/a.txt", "@@", " a1", "-a2", "+A2", "*** Delete File: m/b.txt", "*** Add File: m/new.txt", "+new"])

/**
 * Exports child t, edits its changeset with `tamper`, joins it beside sibling s, and checks
 * that t ends `status` (and `reason` starts with `reasonCode`, when given) with nothing of it
 * written, while s is applied.
 */
const tamperedScenario = (tamper: (changeset: unknown) => void, status: string, reasonCode?: string): Scenario => ({ dir, checks }) =>
  Effect.gen(function*() {
    const ws = yield* makeDirectory(path.join(dir, "ws"))
    const input = path.join(dir, "input")
    yield* writeFiles(ws, FILES)
    yield* inWorkspace(ws, Effect.gen(function*() {
      const exported = yield* exportChild(EXPORTED, input)
      yield* editJson(path.join(exported, "changeset.json"), tamper)
      const outcome = yield* runPlan(planOf([
        changesetTask("t", ["m"], "subagents/t/changeset.json"),
        editTask("s", ["other"], ["*** Update File: other/o.txt", "@@", "-o", "+O"])
      ]), input)
      const t = outcome.run.outcomes.find((o) => o.childId === "t")
      checks.equal(`child t ends ${status}`, t?.status ?? "no outcome", status)
      if (reasonCode !== undefined) {
        checks.that(`child t's reason is ${reasonCode}`, t?.reason?.startsWith(reasonCode) === true, () => `got ${JSON.stringify(t?.reason ?? "no reason")}`)
      }
      checks.files("child t's paths are untouched", ws, { "m/a.txt": "a1\na2\n", "m/b.txt": "b1\n", "m/new.txt": undefined, "other/new.txt": undefined })
      checks.equal("child s ends applied", outcome.run.outcomes.find((o) => o.childId === "s")?.status ?? "no outcome", "applied")
      checks.files("child s's file is written byte-exact", ws, { "other/o.txt": "O\n" })
      checks.equal("history has a record of child s only", transactionsOf(yield* records), [childTransaction(outcome.runId, "s")])
      checks.equal("finish is refused", outcome.finish.ok, false)
    }))
  })

/**
 * `tampered_path_mismatch_refused`: the first entry's postimage names another path.
 *
 * @category constants
 * @since 0.1.0
 */
export const tamperedPathMismatchRefused: Scenario = tamperedScenario(
  (cs) => setAt(cs, ["entries", 0, "postimage"], "path", "m/b.txt"),
  "invalid_changeset_path"
)

/**
 * `tampered_missing_scope_refused`: the changeset has no `writeScope`.
 *
 * @category constants
 * @since 0.1.0
 */
export const tamperedMissingScopeRefused: Scenario = tamperedScenario(
  (cs) => removeAt(cs, [], "writeScope"),
  "scope_violation",
  "missing_or_invalid_write_scope"
)

/**
 * `tampered_outside_scope_refused`: the added file is moved outside the scope (`other/new.txt`).
 *
 * @category constants
 * @since 0.1.0
 */
export const tamperedOutsideScopeRefused: Scenario = tamperedScenario(
  (cs) => {
    setAt(cs, ["entries", 2], "path", "other/new.txt")
    setAt(cs, ["entries", 2, "postimage"], "path", "other/new.txt")
  },
  "scope_violation"
)
