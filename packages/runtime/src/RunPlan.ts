/**
 * The plan file of `forkjoin run` (schemaVersion 1): the tasks of an orchestration run, each a
 * child with a mode, a write scope, attempts, a timeout and one of: scripted actions, a
 * changeset produced elsewhere, or a prompt for a model-driven child.
 * Plan files are untrusted: `decode` is strict (excess properties are errors) and every
 * problem names its JSON path (`$.tasks[1].writeScope[0]`). Later issues extend the format.
 *
 * Owns the plan's shape and its validation. Does not own running it (`Children`).
 *
 * @since 0.1.0
 */
import { TaskId } from "@forkjoin/schema"
import { VerifyCommand } from "@forkjoin/schema/MergeRun"
import { describeSyntaxError, parseJson } from "@forkjoin/schema/JsonText"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { posix } from "node:path"
import { decodeAction, type ParsedAction } from "./Action.ts"
import { firstProblem, jsonPath } from "@forkjoin/schema/SchemaProblems"
import * as WriteScope from "./WriteScope.ts"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * One task as written in the file (actions still raw: they are decoded one by one so an
 * unknown action name gets its own message).
 *
 * @category models
 * @since 0.1.0
 */
export const TaskInput = Schema.Struct({
  id: TaskId,
  mode: Schema.Literals(["transactional_write", "read_only"]),
  writeScope: Schema.optionalKey(Schema.Array(Schema.String)),
  maxAttempts: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 3 }))),
  timeoutMs: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThan(0))),
  actions: Schema.optionalKey(Schema.Array(Schema.Unknown)),
  /** What a model-driven child is asked to do (driven by the configured model). */
  prompt: Schema.optionalKey(Schema.String.check(Schema.isNonEmpty())),
  /** A changeset produced elsewhere (relative to the plan file), its blobs in `blobs/sha256/<hex>` beside it. */
  changesetFile: Schema.optionalKey(Schema.String.check(Schema.isNonEmpty())),
  /** A check run after each attempt in a throwaway copy of the workspace with the child's changes; failing fails the attempt. */
  childVerify: Schema.optionalKey(VerifyCommand)
})

/**
 * An edit made directly to the workspace files (not through the engine) after the children
 * finish and before the join: how a plan exercises drift.
 *
 * @category models
 * @since 0.1.0
 */
export const BetweenEdit = Schema.Union([
  Schema.Struct({ write: Schema.Struct({ path: Schema.String, content: Schema.String }) }),
  Schema.Struct({ delete: Schema.Struct({ path: Schema.String }) })
])

/**
 * @category models
 * @since 0.1.0
 */
export type BetweenEdit = typeof BetweenEdit.Type

/**
 * A conflict resolution decided in the plan: for a child (and optionally one path), apply its
 * version, discard it, or write `content`.
 *
 * @category models
 * @since 0.1.0
 */
export const PlannedResolution = Schema.Struct({
  childId: TaskId,
  path: Schema.optionalKey(Schema.String),
  resolution: Schema.Literals(["apply", "discard", "content"]),
  content: Schema.optionalKey(Schema.String)
})

/**
 * @category models
 * @since 0.1.0
 */
export type PlannedResolution = typeof PlannedResolution.Type

/**
 * The plan file as written (schemaVersion 1).
 *
 * @category models
 * @since 0.1.0
 */
export const RunPlanInput = Schema.Struct({
  /** Where an editor finds this file's JSON Schema (`forkjoin schema plan`); ignored when running. */
  $schema: Schema.optionalKey(Schema.String),
  schemaVersion: Schema.Literal(1),
  autonomy: Schema.optionalKey(Schema.Literals(["off", "supervised", "safe", "bold"])),
  tasks: Schema.Array(TaskInput),
  between: Schema.optionalKey(Schema.Array(BetweenEdit)),
  resolve: Schema.optionalKey(Schema.Array(PlannedResolution)),
  /** All children or none, as one transaction. */
  atomic: Schema.optionalKey(Schema.Boolean),
  verify: Schema.optionalKey(VerifyCommand)
})

/**
 * A validated task: the file's id and mode, the scope normalized (mutating tasks only), defaults
 * filled, actions decoded.
 *
 * @category models
 * @since 0.1.0
 */
export type Task = Pick<typeof TaskInput.Type, "id" | "mode"> & {
  readonly writeScope?: WriteScope.WriteScope
  readonly maxAttempts: number
  readonly timeoutMs: number
  /** Scripted actions; empty when the task names a `changesetFile` or a `prompt`. */
  readonly actions: ReadonlyArray<ParsedAction>
  /** A model-driven child's task text. */
  readonly prompt?: string
  /** As written in the plan (relative to the plan file). */
  readonly changesetFile?: string
  /** The child's own check (`ChildVerify`), mutating scripted and prompt tasks only. */
  readonly childVerify?: VerifyCommand
}

/**
 * A validated plan: the file's version and autonomy, its tasks validated.
 *
 * @category models
 * @since 0.1.0
 */
export type RunPlan = Omit<typeof RunPlanInput.Type, "tasks"> & {
  readonly tasks: ReadonlyArray<Task>
}

/**
 * Default per-child timeout when a task gives none: 10 minutes.
 *
 * @category models
 * @since 0.1.0
 */
export const DEFAULT_TIMEOUT_MS = 600_000

// -------------------------------------------------------------------------------------
// errors
// -------------------------------------------------------------------------------------

/**
 * A plan file that cannot be run; `path` is the JSON path of the first problem.
 *
 * @category errors
 * @since 0.1.0
 */
export class PlanError extends Schema.TaggedError<PlanError>()("PlanError", {
  path: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `invalid plan at ${this.path}: ${this.detail}`
  }
}

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

/**
 * Validates an untrusted plan value: schema, unique task ids, write scopes (refused when
 * absolute, escaping, a glob, inside a `.git` or `.forkjoin` folder, or empty on a mutating
 * task; forbidden on a read-only task), every action's name and argument, `resolve` entries
 * naming mutating tasks, and `between` paths (the same path rules as scopes).
 *
 * @category constructors
 * @since 0.1.0
 */
export const decode = (raw: unknown): Result.Result<RunPlan, PlanError> => {
  const decoded = Schema.decodeUnknownResult(RunPlanInput, { onExcessProperty: "error", errors: "first" })(raw)
  if (Result.isFailure(decoded)) {
    const problem = firstProblem(decoded.failure.issue)
    return Result.fail(new PlanError({ path: `$${jsonPath(problem.path)}`, detail: problem.message }))
  }
  const seen = new Set<string>()
  const tasks: Array<Task> = []
  for (const [i, t] of decoded.success.tasks.entries()) {
    const at = `$.tasks[${i}]`
    if (seen.has(t.id)) return Result.fail(new PlanError({ path: `${at}.id`, detail: `duplicate task id ${JSON.stringify(t.id)}; task ids name artifact directories and must be unique.` }))
    seen.add(t.id)
    let writeScope: WriteScope.WriteScope | undefined
    if (t.mode === "read_only") {
      if (t.writeScope !== undefined) {
        return Result.fail(new PlanError({ path: `${at}.writeScope`, detail: `a read_only task has no write scope; remove "writeScope" or make the task "transactional_write".` }))
      }
    } else {
      if (t.writeScope === undefined || t.writeScope.length === 0) {
        return Result.fail(new PlanError({ path: `${at}.writeScope`, detail: "a transactional_write task needs a non-empty writeScope: list the files or directories it may change." }))
      }
      for (const [j, p] of t.writeScope.entries()) {
        const n = WriteScope.normalizePath(p)
        if (Result.isFailure(n)) return Result.fail(new PlanError({ path: `${at}.writeScope[${j}]`, detail: n.failure.message }))
      }
      writeScope = WriteScope.makeUnsafe(t.writeScope)
    }
    if ([t.actions, t.changesetFile, t.prompt].filter((x) => x !== undefined).length !== 1) {
      return Result.fail(new PlanError({
        path: at,
        detail: "a task has exactly one of \"actions\" (a scripted child), \"prompt\" (a child driven by the configured model) or " +
          "\"changesetFile\" (a changeset produced elsewhere)."
      }))
    }
    if (t.changesetFile !== undefined && t.mode !== "transactional_write") {
      return Result.fail(new PlanError({ path: `${at}.changesetFile`, detail: "only a transactional_write task can bring a changeset; make the task \"transactional_write\" with a writeScope." }))
    }
    if (t.childVerify !== undefined) {
      const refused = childVerifyProblem(t)
      if (refused !== undefined) return Result.fail(new PlanError({ path: `${at}.${refused.path}`, detail: refused.detail }))
    }
    const actions: Array<ParsedAction> = []
    for (const [j, a] of (t.actions ?? []).entries()) {
      const r = decodeAction(a, `${at}.actions[${j}]`)
      if (Result.isFailure(r)) return Result.fail(new PlanError({ path: r.failure.path, detail: r.failure.message }))
      actions.push(r.success)
    }
    tasks.push({
      id: t.id,
      mode: t.mode,
      ...(writeScope === undefined ? {} : { writeScope }),
      maxAttempts: t.maxAttempts ?? 1,
      timeoutMs: t.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      actions,
      ...(t.changesetFile === undefined ? {} : { changesetFile: t.changesetFile }),
      ...(t.prompt === undefined ? {} : { prompt: t.prompt }),
      ...(t.childVerify === undefined ? {} : { childVerify: t.childVerify })
    })
  }
  const plan = decoded.success
  for (const [i, r] of (plan.resolve ?? []).entries()) {
    const at = `$.resolve[${i}]`
    const task = tasks.find((t) => t.id === r.childId)
    if (task === undefined) return Result.fail(new PlanError({ path: `${at}.childId`, detail: `no task has the id ${JSON.stringify(r.childId)}; a resolve entry names one of the plan's tasks.` }))
    if (task.mode !== "transactional_write") return Result.fail(new PlanError({ path: `${at}.childId`, detail: `task ${JSON.stringify(r.childId)} is read_only and cannot conflict.` }))
    if ((r.resolution === "content") !== (r.content !== undefined)) {
      return Result.fail(new PlanError({ path: `${at}.content`, detail: "\"content\" is required with the resolution \"content\" and not allowed with the others." }))
    }
  }
  for (const [i, b] of (plan.between ?? []).entries()) {
    const p = "write" in b ? b.write.path : b.delete.path
    const n = WriteScope.normalizePath(p)
    if (Result.isFailure(n)) return Result.fail(new PlanError({ path: `$.between[${i}].${"write" in b ? "write" : "delete"}.path`, detail: n.failure.message }))
  }
  return Result.succeed({
    schemaVersion: 1,
    ...(plan.autonomy === undefined ? {} : { autonomy: plan.autonomy }),
    tasks,
    ...(plan.between === undefined ? {} : { between: plan.between }),
    ...(plan.resolve === undefined ? {} : { resolve: plan.resolve }),
    ...(plan.atomic === undefined ? {} : { atomic: plan.atomic }),
    ...(plan.verify === undefined ? {} : { verify: plan.verify })
  })
}

/**
 * Why a task's `childVerify` cannot run (its JSON path below the task, and what to do): only a
 * child that makes its changes here has any to check, and a command given as a relative path
 * runs from the copy's root, so one leading out of it (`../x`) is refused.
 */
const childVerifyProblem = (t: typeof TaskInput.Type): { readonly path: string; readonly detail: string } | undefined => {
  if (t.mode !== "transactional_write") {
    return { path: "childVerify", detail: "a read_only task changes nothing to check; remove \"childVerify\" or make the task \"transactional_write\"." }
  }
  if (t.changesetFile !== undefined) {
    return { path: "childVerify", detail: "a changesetFile was produced elsewhere: check it where it was made, or use the plan's \"verify\" to check it after the join." }
  }
  const command = t.childVerify?.command[0] ?? ""
  if (command.includes("/") && !command.startsWith("/")) {
    const normal = posix.normalize(command)
    if (normal === ".." || normal.startsWith("../")) {
      return {
        path: "childVerify.command[0]",
        detail: `the command ${JSON.stringify(command)} leads out of the workspace; name a program on PATH, an absolute path, or a path inside the workspace.`
      }
    }
  }
  return undefined
}

/**
 * `decode` for plan file text; invalid JSON is a `PlanError` at `$` saying at which line and column.
 *
 * @category constructors
 * @since 0.1.0
 */
export const decodeJson = (text: string): Result.Result<RunPlan, PlanError> => {
  const parsed = parseJson(text)
  if (!parsed.ok) return Result.fail(new PlanError({ path: "$", detail: `not valid JSON (${describeSyntaxError(parsed.error)}).` }))
  return decode(parsed.value)
}
