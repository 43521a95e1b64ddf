/**
 * The plan file of `forkjoin run` (schemaVersion 1): the tasks of a scripted orchestration
 * run, each a child with a mode, a write scope, attempts, a timeout and its scripted actions.
 * Plan files are untrusted: `decode` is strict (excess properties are errors) and every
 * problem names its JSON path (`$.tasks[1].writeScope[0]`). Later issues extend the format.
 *
 * Owns the plan's shape and its validation. Does not own running it (`Children`).
 *
 * @since 0.1.0
 */
import { TaskId } from "@forkjoin/schema"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { decodeAction, type ParsedAction } from "./Action.ts"
import { firstProblem, jsonPath } from "./internal/schemaProblem.ts"
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
  actions: Schema.Array(Schema.Unknown)
})

/**
 * The plan file as written (schemaVersion 1).
 *
 * @category models
 * @since 0.1.0
 */
export const RunPlanInput = Schema.Struct({
  schemaVersion: Schema.Literal(1),
  autonomy: Schema.optionalKey(Schema.Literals(["off", "supervised", "safe", "bold"])),
  tasks: Schema.Array(TaskInput)
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
  readonly actions: ReadonlyArray<ParsedAction>
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
 * absolute, escaping or empty on a mutating task; forbidden on a read-only task) and every
 * action's name and argument.
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
    const actions: Array<ParsedAction> = []
    for (const [j, a] of t.actions.entries()) {
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
      actions
    })
  }
  return Result.succeed({
    schemaVersion: 1,
    ...(decoded.success.autonomy === undefined ? {} : { autonomy: decoded.success.autonomy }),
    tasks
  })
}

/**
 * `decode` for plan file text; invalid JSON is a `PlanError` at `$`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const decodeJson = (text: string): Result.Result<RunPlan, PlanError> => {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (e) {
    return Result.fail(new PlanError({ path: "$", detail: `not valid JSON (${e instanceof Error ? e.message : String(e)}).` }))
  }
  return decode(raw)
}
