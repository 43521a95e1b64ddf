/**
 * Run artifacts on disk: the run's directory (default `<workspace>/.forkjoin/runs/<run-id>/`)
 * and each child's own namespace `subagents/<task-id>/` (SPEC §6.4) holding its trace, its
 * exported changeset and its blobs. Task ids are `TaskId`-validated and every write is
 * checked to land inside the child's namespace, so no child can overwrite the parent's or a
 * sibling's artifacts.
 *
 * @since 0.1.0
 */
import { isInside } from "@forkjoin/patch"
import { TaskId } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * An artifact could not be written, or a write would leave its namespace. `reason`
 * `Unserializable`: the value itself cannot be written as JSON (nested too deeply, too large),
 * which no retry or permission fixes.
 *
 * @category errors
 * @since 0.1.0
 */
export class ArtifactError extends Schema.TaggedError<ArtifactError>()("ArtifactError", {
  operation: Schema.String,
  path: Schema.String,
  detail: Schema.String,
  reason: Schema.optional(Schema.Literals(["Unserializable"])),
  cause: Schema.optional(Schema.Defect())
}) {
  override get message(): string {
    return `${this.operation} failed for '${this.path}': ${this.detail}`
  }
}

/**
 * The default artifact directory of a run: `<workspace>/.forkjoin/runs/<run-id>`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const defaultRunDirectory = (workspace: string, runId: string): string => path.join(workspace, ".forkjoin", "runs", runId)

const isTaskId = Schema.is(TaskId)

/**
 * A child's namespace `<runDir>/subagents/<task-id>`; an invalid task id is an `ArtifactError`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const childDirectory = (runDir: string, taskId: string): Effect.Effect<string, ArtifactError> => {
  const base = path.resolve(runDir, "subagents")
  const dir = path.resolve(base, taskId)
  // TaskId already excludes separators, "." and ".."; the containment check is the backstop.
  // A namespace is strictly below `subagents/`: the directory itself is nobody's namespace.
  return isTaskId(taskId) && dir !== base && isInside(base, dir)
    ? Effect.succeed(dir)
    : Effect.fail(new ArtifactError({ operation: "Artifacts.childDirectory", path: taskId, detail: "not a valid task id for an artifact namespace" }))
}

/**
 * Writes `value` as JSON to `<namespace>/<name>` (temp file then rename, so a reader never
 * sees half a file); `name` must be a plain file name.
 *
 * @category constructors
 * @since 0.1.0
 */
export const writeJson = (namespace: string, name: string, value: unknown): Effect.Effect<string, ArtifactError> =>
  Effect.try({
    try: () => JSON.stringify(value, null, 2),
    // A stack overflow or a string past the engine's limit: the value, not the folder, is the problem.
    catch: (e) =>
      new ArtifactError({ operation: "Artifacts.writeJson", path: path.join(namespace, name), detail: e instanceof Error ? e.message : String(e), reason: "Unserializable", cause: e })
  }).pipe(Effect.flatMap((json) => writeText(namespace, name, json)))

const writeText = (namespace: string, name: string, json: string): Effect.Effect<string, ArtifactError> =>
  Effect.try({
    try: () => {
      const target = path.resolve(namespace, name)
      if (path.dirname(target) !== path.resolve(namespace) || name.startsWith(".")) throw new Error("file name leaves the namespace")
      fs.mkdirSync(namespace, { recursive: true })
      const temp = `${target}.${process.pid}.tmp`
      fs.writeFileSync(temp, json + "\n")
      fs.renameSync(temp, target)
      return target
    },
    catch: (e) => new ArtifactError({ operation: "Artifacts.writeJson", path: path.join(namespace, name), detail: e instanceof Error ? e.message : String(e), cause: e })
  })
