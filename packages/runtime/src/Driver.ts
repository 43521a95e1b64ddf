/**
 * Drivers produce a session's actions, one at a time, from the steps so far (SPEC §5). A
 * driver's output is untrusted: the session decodes it (`Action.decodeAction`), so a model
 * that invents an action gets an `unknown_action` observation instead of crashing anything.
 * `ScriptedDriver` (a list of actions, or a pure function of the steps) is deterministic and
 * is what tests, probes and plan files use; model-backed drivers implement the same service
 * (`@forkjoin/drivers/ModelDriver`) and may keep a transcript. `PromptDriver` is the seam that
 * turns a plan task's `prompt` into such a driver: whoever runs prompt tasks provides it.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { Observation } from "./Action.ts"
import type { Task } from "./RunPlan.ts"

/**
 * One action as the driver issued it (wire form, possibly invalid) and what it returned.
 *
 * @category models
 * @since 0.1.0
 */
export interface Step {
  readonly action: unknown
  readonly observation: Observation
}

/**
 * The driver service: the next action, or `undefined` when it has nothing more to do (a
 * session whose driver stops without a clean `finish` exports nothing). A model-backed driver
 * also gives its conversation (`transcript`), kept in the child's artifact namespace.
 *
 * @category services
 * @since 0.1.0
 */
export class Driver extends Context.Service<Driver, {
  readonly next: (steps: ReadonlyArray<Step>) => Effect.Effect<unknown>
  readonly transcript?: (() => unknown) | undefined
}>()("forkjoin/runtime/Driver") {}

/**
 * Drives the tasks that carry a `prompt` (one fresh driver per attempt): provided by whoever
 * runs such tasks with a configured model (`forkjoin agent`, `forkjoin mcp`).
 *
 * @category services
 * @since 0.1.0
 */
export class PromptDriver extends Context.Service<PromptDriver, {
  readonly forTask: (task: Task, attempt: number) => Driver["Service"]
}>()("forkjoin/runtime/PromptDriver") {}

/**
 * A plan has `prompt` tasks but no model is configured to drive them: nothing was started.
 *
 * @category errors
 * @since 0.1.0
 */
export class DriverUnavailable extends Schema.TaggedError<DriverUnavailable>()("DriverUnavailable", {
  taskIds: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `task(s) ${this.taskIds.join(", ")} have a prompt but no model is configured to drive them; configure one ` +
      "(forkjoin.config.json \"models\", or OPENAI_BASE_URL/OPENAI_API_KEY) and run them with 'forkjoin agent' or 'forkjoin mcp'"
  }
}

/**
 * A script: a fixed list of actions, or a pure function of the steps so far.
 *
 * @category models
 * @since 0.1.0
 */
export type Script = ReadonlyArray<unknown> | ((steps: ReadonlyArray<Step>) => unknown)

/**
 * A deterministic driver over a script: a list yields its actions in order (one per step,
 * whatever their outcome) and then `undefined`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const scripted = (script: Script): Driver["Service"] =>
  Driver.of({
    next: (steps) => Effect.sync(() => (typeof script === "function" ? script(steps) : script[steps.length]))
  })

/**
 * `scripted` as a layer.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerScripted = (script: Script): Layer.Layer<Driver> => Layer.succeed(Driver, scripted(script))
