/**
 * Branded identifiers and value strings shared by every forkjoin package (SPEC §1, §4): the
 * ids of threads, turns, invocations, environments, transactions, records, conflicts, merge
 * runs, tasks and runs, plus `Sha256Hash` and `RelativePath`. Each is a `string` at runtime
 * and in JSON; the brand only exists in the type system, so `X.make(s)` (throws) or
 * `Schema.decodeUnknown*(X)` is the one way to obtain one.
 *
 * Owns validation of the *form* of these strings. Does not own generating them (the engine
 * and orchestrator do) nor normalizing paths: `RelativePath` rejects anything that is not
 * already normalized; the engine's resolve stage normalizes and applies policy (control
 * characters, denied globs, symlinks) before a path reaches a record.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

const MAX_ID_LENGTH = 256

const hasControlCharacter = (s: string): boolean => /[\u0000-\u001f\u007f]/.test(s)

// The looser opaque form: generated ids (environments, records, conflicts, invocations) and stored
// thread, turn, run and merge run ids, which older versions accepted under this rule.
const idProblem = (s: string): string | undefined => {
  if (s.length === 0) return "must not be empty"
  if (s.length > MAX_ID_LENGTH) return `must be at most ${MAX_ID_LENGTH} characters`
  if (hasControlCharacter(s)) return "must not contain control characters"
  if (s.trim() !== s) return "must not start or end with whitespace"
  return undefined
}

const opaqueId = (name: string, description: string) =>
  Schema.String.check(
    Schema.makeFilter((s: string) => {
      const problem = idProblem(s)
      return problem === undefined ? undefined : `${name} ${problem}, got ${JSON.stringify(s)}`
    }, { expected: description })
  )

/**
 * The id rule in words, for messages and help: what every thread, turn, task and run id must be.
 *
 * @category models
 * @since 0.1.0
 */
export const ID_RULE =
  "ids are 1-256 characters of letters, digits and _ . - : /, with no empty, \".\" or \"..\" segment between slashes"

const ID_CHARACTERS = /^[A-Za-z0-9_.:/-]*$/

/**
 * What is wrong with `s` as an id (see `ID_RULE`), or undefined when it is one (pure).
 *
 * @category combinators
 * @since 0.1.0
 */
export const idRuleProblem = (s: string): string | undefined => {
  if (s.length === 0) return "it is empty"
  if (s.length > MAX_ID_LENGTH) return `it has ${s.length} characters`
  if (!ID_CHARACTERS.test(s)) {
    const bad = [...s].find((c) => !ID_CHARACTERS.test(c)) ?? ""
    return `it contains ${JSON.stringify(bad)}`
  }
  for (const segment of s.split("/")) {
    if (segment === "") return "it has an empty segment"
    if (segment === "." || segment === "..") return `it has a "${segment}" segment`
  }
  return undefined
}

/**
 * The one id rule (`ID_RULE`) as a schema, for ids as they come in: the `*Input` schemas and
 * `TaskId` are built on it, so a CLI flag, a plan, a gateway body and an MCP call all refuse the
 * same ids the same way. The message names the offending id and the rule.
 *
 * @category models
 * @since 0.1.0
 */
export const Id = Schema.String.check(
  Schema.makeFilter((s: string) => {
    const problem = idRuleProblem(s)
    return problem === undefined ? undefined : `the id ${JSON.stringify(s)} is refused (${problem}): ${ID_RULE}`
  }, { expected: "an id" })
)

/**
 * One agent session's conversation (a child session has its own thread), as records store it
 * (non-empty, at most 256 characters, no control characters or surrounding whitespace).
 *
 * @category models
 * @since 0.1.0
 */
export const ThreadId = opaqueId("ThreadId", "a thread id").pipe(Schema.brand("ThreadId"))

/**
 * A thread id as it comes in (flag, plan, request, tool argument): the id rule (`Id`). Stored
 * records decode with `ThreadId`, which keeps the ids older versions accepted.
 *
 * @category models
 * @since 0.1.0
 */
export const ThreadIdInput = Id.pipe(Schema.brand("ThreadId"))

/**
 * @category models
 * @since 0.1.0
 */
export type ThreadId = typeof ThreadId.Type

/**
 * One model turn inside a thread.
 *
 * @category models
 * @since 0.1.0
 */
export const TurnId = opaqueId("TurnId", "a turn id").pipe(Schema.brand("TurnId"))

/**
 * A turn id as it comes in (flag, plan, request, tool argument): the id rule (`Id`). Stored
 * records decode with `TurnId`, which keeps the ids older versions accepted.
 *
 * @category models
 * @since 0.1.0
 */
export const TurnIdInput = Id.pipe(Schema.brand("TurnId"))

/**
 * @category models
 * @since 0.1.0
 */
export type TurnId = typeof TurnId.Type

/**
 * One tool call inside a turn (e.g. one `apply_patch` call).
 *
 * @category models
 * @since 0.1.0
 */
export const InvocationId = opaqueId("InvocationId", "an invocation id").pipe(Schema.brand("InvocationId"))

/**
 * @category models
 * @since 0.1.0
 */
export type InvocationId = typeof InvocationId.Type

/**
 * One workspace as seen by one host; stable per workspace root.
 *
 * @category models
 * @since 0.1.0
 */
export const EnvironmentId = opaqueId("EnvironmentId", "an environment id").pipe(Schema.brand("EnvironmentId"))

/**
 * @category models
 * @since 0.1.0
 */
export type EnvironmentId = typeof EnvironmentId.Type

/**
 * One `PatchHistoryRecord`.
 *
 * @category models
 * @since 0.1.0
 */
export const RecordId = opaqueId("RecordId", "a record id").pipe(Schema.brand("RecordId"))

/**
 * @category models
 * @since 0.1.0
 */
export type RecordId = typeof RecordId.Type

/**
 * One `ConflictRecord` (SPEC §6.7).
 *
 * @category models
 * @since 0.1.0
 */
export const ConflictId = opaqueId("ConflictId", "a conflict id").pipe(Schema.brand("ConflictId"))

/**
 * @category models
 * @since 0.1.0
 */
export type ConflictId = typeof ConflictId.Type

/**
 * One join of a parent's children (SPEC §6.6).
 *
 * @category models
 * @since 0.1.0
 */
export const MergeRunId = opaqueId("MergeRunId", "a merge run id").pipe(Schema.brand("MergeRunId"))

/**
 * A merge run id as it comes in (flag, plan, request, tool argument): the id rule (`Id`). Stored
 * records decode with `MergeRunId`, which keeps the ids older versions accepted.
 *
 * @category models
 * @since 0.1.0
 */
export const MergeRunIdInput = Id.pipe(Schema.brand("MergeRunId"))

/**
 * @category models
 * @since 0.1.0
 */
export type MergeRunId = typeof MergeRunId.Type

/**
 * One orchestration or probe run.
 *
 * @category models
 * @since 0.1.0
 */
export const RunId = opaqueId("RunId", "a run id").pipe(Schema.brand("RunId"))

/**
 * A run id as it comes in (flag, plan, request, tool argument): the id rule (`Id`). Stored
 * records decode with `RunId`, which keeps the ids older versions accepted.
 *
 * @category models
 * @since 0.1.0
 */
export const RunIdInput = Id.pipe(Schema.brand("RunId"))

/**
 * @category models
 * @since 0.1.0
 */
export type RunId = typeof RunId.Type

/**
 * A `run_subagents` task id (SPEC §6.4): an `Id`, narrowed because it names one directory
 * (`artifacts/subagents/<task-id>/`) and ends a child's thread id (`<run-id>/<task-id>`, itself
 * an `Id`): 1–128 characters of `[A-Za-z0-9._-]`, starting with a letter, digit or `_`.
 *
 * @category models
 * @since 0.1.0
 */
export const TaskId = Id.pipe(
  Schema.check(
    Schema.makeFilter(
      (s: string) =>
        /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/.test(s)
          ? undefined
          : `TaskId must be 1-128 characters of [A-Za-z0-9._-] starting with a letter, digit or "_", got ${
            JSON.stringify(s)
          }`,
      { expected: "a task id" }
    )
  ),
  Schema.brand("TaskId")
)

/**
 * @category models
 * @since 0.1.0
 */
export type TaskId = typeof TaskId.Type

/**
 * The kinds of transaction, i.e. the prefixes of a `TransactionId`. SPEC §1 names `patch`,
 * `subagent_merge`, `rollback` and `conflict_resolution`; `gap` (changes found on disk with
 * no intent, §4.5), `provider_aggregate` (an ingested provider event, §4.6) and
 * `verification` (a record verifying one, §4.6) complete the list so every record has a
 * transaction.
 *
 * @category models
 * @since 0.1.0
 */
export const TransactionKind = Schema.Literals([
  "patch",
  "subagent_merge",
  "rollback",
  "conflict_resolution",
  "gap",
  "provider_aggregate",
  "verification"
])

/**
 * @category models
 * @since 0.1.0
 */
export type TransactionKind = typeof TransactionKind.Type

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const MAX_TRANSACTION_ID_LENGTH = 1024
const TRANSACTION_FORMS =
  "patch:<uuid>, subagent_merge:<child-id>, rollback:<transaction-id>, conflict_resolution:<conflict-id>, gap:<id>, provider_aggregate:<id> or verification:<id>"

const transactionProblem = (s: string): string | undefined => {
  if (s.length > MAX_TRANSACTION_ID_LENGTH) return `must be at most ${MAX_TRANSACTION_ID_LENGTH} characters`
  const colon = s.indexOf(":")
  if (colon < 0) return `must have the form ${TRANSACTION_FORMS}`
  const kind = s.slice(0, colon)
  const rest = s.slice(colon + 1)
  switch (kind) {
    case "patch":
      return UUID.test(rest) ? undefined : "patch:<uuid> needs a lowercase UUID after \"patch:\""
    case "rollback": {
      const inner = transactionProblem(rest)
      return inner === undefined ? undefined : `rollback:<transaction-id> needs a transaction id after "rollback:" (${inner})`
    }
    case "subagent_merge":
    case "conflict_resolution":
    case "gap":
    case "provider_aggregate":
    case "verification": {
      const inner = idProblem(rest)
      return inner === undefined ? undefined : `the part after "${kind}:" ${inner}`
    }
    default:
      return `has unknown kind ${JSON.stringify(kind)}; expected ${TRANSACTION_FORMS}`
  }
}

/**
 * A set of file changes committed atomically, named `<kind>:<ref>` (see `TransactionKind`).
 * `patch:` takes a lowercase UUID; `rollback:` takes another transaction id (so rolling
 * back a rollback is `rollback:rollback:patch:<uuid>`); the others take an opaque id.
 *
 * @category models
 * @since 0.1.0
 */
export const TransactionId = Schema.String.pipe(
  Schema.check(
    Schema.makeFilter((s: string) => {
      const problem = transactionProblem(s)
      return problem === undefined ? undefined : `TransactionId ${problem}, got ${JSON.stringify(s)}`
    }, { expected: "a transaction id" })
  ),
  Schema.brand("TransactionId")
)

/**
 * @category models
 * @since 0.1.0
 */
export type TransactionId = typeof TransactionId.Type

/**
 * The kind (prefix) of a valid transaction id.
 *
 * @category combinators
 * @since 0.1.0
 */
export const transactionKind = (id: TransactionId): TransactionKind =>
  id.slice(0, id.indexOf(":")) as TransactionKind

/**
 * A content address: `sha256:` followed by 64 lowercase hex digits.
 *
 * @category models
 * @since 0.1.0
 */
export const Sha256Hash = Schema.String.pipe(
  Schema.check(
    Schema.makeFilter(
      (s: string) =>
        /^sha256:[0-9a-f]{64}$/.test(s)
          ? undefined
          : `Sha256Hash must be "sha256:" followed by 64 lowercase hex digits, got ${JSON.stringify(s)}`,
      { expected: "a sha256 hash" }
    )
  ),
  Schema.brand("Sha256Hash")
)

/**
 * @category models
 * @since 0.1.0
 */
export type Sha256Hash = typeof Sha256Hash.Type

const relativePathProblem = (s: string): string | undefined => {
  if (s.length === 0) return "must not be empty"
  if (s.includes("\u0000")) return "must not contain NUL"
  if (s.includes("\\")) return "must use \"/\" separators, not backslashes"
  if (s.startsWith("/")) return "must be relative, not absolute"
  for (const segment of s.split("/")) {
    if (segment === "") return "must not contain empty segments (\"//\" or a trailing \"/\")"
    if (segment === "." || segment === "..") return `must not contain "${segment}" segments`
  }
  return undefined
}

/**
 * A normalized workspace-relative POSIX path, the stable user-facing name of a file
 * (SPEC §4.1): non-empty, not absolute, `/`-separated, no empty, `.` or `..` segments, no
 * NUL, no backslash. Other control characters are left to the engine's policy so history can
 * still name any file that exists on disk.
 *
 * @category models
 * @since 0.1.0
 */
export const RelativePath = Schema.String.pipe(
  Schema.check(
    Schema.makeFilter((s: string) => {
      const problem = relativePathProblem(s)
      return problem === undefined ? undefined : `RelativePath ${problem}, got ${JSON.stringify(s)}`
    }, { expected: "a normalized relative POSIX path" })
  ),
  Schema.brand("RelativePath")
)

/**
 * @category models
 * @since 0.1.0
 */
export type RelativePath = typeof RelativePath.Type
