/**
 * The session action protocol (SPEC §5): the actions a driver (a script or a model) may issue
 * and the observation every action returns. On the wire an action is a one-key object,
 * `{ "read_file": { "path": "src/a.ts" } }`, the form plan files use. Actions are untrusted
 * input, so `decodeAction` dispatches on the one key and decodes its argument strictly
 * (excess properties are errors), naming the JSON path of the first problem.
 *
 * Owns the protocol's shapes and their decoding. Does not own what an action does (the
 * session runtime) nor plan files (`RunPlan`).
 *
 * @since 0.1.0
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { firstProblem, jsonPath } from "@forkjoin/schema/SchemaProblems"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

const Empty = Schema.Struct({})

/**
 * The argument schema of each action name. `rollback_transaction`, `run_subagents` and
 * `resolve_conflict` are parent tools (host tools of `forkjoin agent` and `forkjoin mcp`): in a
 * session they decode with any argument and are refused with `not_available`.
 *
 * @category models
 * @since 0.1.0
 */
export const ActionArguments = {
  read_file: Schema.Struct({ path: Schema.String }),
  list_dir: Schema.Struct({ path: Schema.String }),
  apply_patch: Schema.Struct({ patch: Schema.String }),
  begin_batch: Empty,
  commit_batch: Empty,
  abort_batch: Empty,
  finish: Empty,
  rollback_transaction: Schema.Unknown,
  run_subagents: Schema.Unknown,
  resolve_conflict: Schema.Unknown
} as const

/**
 * Every action name the protocol knows, implemented or reserved.
 *
 * @category models
 * @since 0.1.0
 */
export type ActionName = keyof typeof ActionArguments

/**
 * The action names, in protocol order.
 *
 * @category models
 * @since 0.1.0
 */
export const actionNames = Object.keys(ActionArguments) as ReadonlyArray<ActionName>

/**
 * Parent-only action names and why a session refuses each (what to use instead).
 *
 * @category models
 * @since 0.1.0
 */
export const reservedActions = {
  rollback_transaction: "only a parent undoes transactions ('forkjoin rollback', or the parent's tool in 'forkjoin agent' and 'forkjoin mcp')",
  run_subagents: "only a parent forks children (the parent's tool in 'forkjoin agent' and 'forkjoin mcp'; a plan lists its children as tasks)",
  resolve_conflict: "only a parent resolves conflicts ('forkjoin resolve', or the parent's tool in 'forkjoin agent' and 'forkjoin mcp')"
} as const satisfies Partial<Record<ActionName, string>>

/**
 * One action in its wire form: an object with exactly one known action name as key.
 *
 * @category models
 * @since 0.1.0
 */
export const Action = Schema.Union([
  Schema.Struct({ read_file: ActionArguments.read_file }),
  Schema.Struct({ list_dir: ActionArguments.list_dir }),
  Schema.Struct({ apply_patch: ActionArguments.apply_patch }),
  Schema.Struct({ begin_batch: Empty }),
  Schema.Struct({ commit_batch: Empty }),
  Schema.Struct({ abort_batch: Empty }),
  Schema.Struct({ finish: Empty }),
  Schema.Struct({ rollback_transaction: Schema.Unknown }),
  Schema.Struct({ run_subagents: Schema.Unknown }),
  Schema.Struct({ resolve_conflict: Schema.Unknown })
])

/**
 * @category models
 * @since 0.1.0
 */
export type Action = typeof Action.Type

/**
 * A decoded action: its name and its decoded argument.
 *
 * @category models
 * @since 0.1.0
 */
export type ParsedAction = {
  readonly [K in ActionName]: { readonly name: K; readonly args: (typeof ActionArguments)[K]["Type"] }
}[ActionName]

/**
 * What every action returns: `ok`, a stable `code` when refused, a message a model can act
 * on, and action-specific `data`.
 *
 * @category models
 * @since 0.1.0
 */
export const Observation = Schema.Struct({
  ok: Schema.Boolean,
  code: Schema.optionalKey(Schema.String),
  message: Schema.String,
  data: Schema.Unknown
})

/**
 * @category models
 * @since 0.1.0
 */
export type Observation = typeof Observation.Type

/**
 * Why an action could not be decoded: an unknown name, or a known name with a bad argument.
 * `path` is the JSON path of the problem relative to where decoding started.
 *
 * @category models
 * @since 0.1.0
 */
export interface ActionProblem {
  readonly code: "unknown_action" | "invalid_action"
  readonly path: string
  readonly message: string
}

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

/** The strict options every untrusted value is decoded with. */
const strict = { onExcessProperty: "error", errors: "first" } as const

const isKnown = (name: string): name is ActionName => Object.hasOwn(ActionArguments, name)

/**
 * Decodes an untrusted value as an action; `at` is the JSON path used in messages.
 *
 * @category constructors
 * @since 0.1.0
 */
export const decodeAction = (raw: unknown, at = "$"): Result.Result<ParsedAction, ActionProblem> => {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return Result.fail({
      code: "invalid_action",
      path: at,
      message: `an action is an object with one key, the action name, e.g. {"read_file":{"path":"src/a.ts"}}.`
    })
  }
  const keys = Object.keys(raw)
  if (keys.length !== 1) {
    return Result.fail({
      code: "invalid_action",
      path: at,
      message: `an action has exactly one key (the action name), got ${keys.length === 0 ? "none" : keys.map((k) => JSON.stringify(k)).join(", ")}.`
    })
  }
  const name = keys[0]!
  if (!isKnown(name)) {
    return Result.fail({
      code: "unknown_action",
      path: at,
      message: `unknown action ${JSON.stringify(name)}; known actions: ${actionNames.join(", ")}.`
    })
  }
  const args = (raw as Record<string, unknown>)[name]
  const decoded = Schema.decodeUnknownResult(ActionArguments[name] as Schema.Codec<unknown>, strict)(args)
  if (Result.isFailure(decoded)) {
    const problem = firstProblem(decoded.failure.issue)
    return Result.fail({
      code: "invalid_action",
      path: `${at}.${name}${jsonPath(problem.path)}`,
      message: `${name}: ${problem.message}`
    })
  }
  return Result.succeed({ name, args: decoded.success } as ParsedAction)
}

/**
 * The wire form of a decoded action (what traces record).
 *
 * @category constructors
 * @since 0.1.0
 */
export const encodeAction = (action: ParsedAction): Record<string, unknown> => ({ [action.name]: action.args })

/**
 * A successful observation.
 *
 * @category constructors
 * @since 0.1.0
 */
export const ok = (message: string, data: unknown = null): Observation => ({ ok: true, message, data })

/**
 * A refused observation with its stable code.
 *
 * @category constructors
 * @since 0.1.0
 */
export const refused = (code: string, message: string, data: unknown = null): Observation => ({ ok: false, code, message, data })
