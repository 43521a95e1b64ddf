/**
 * A request's write scope (`RequestContext.writeScope`, see
 * adrs/20261202-scope-under-lock.md): every path the request writes, deletes or moves from or
 * to must land, links followed inside the workspace, at the very path it names and inside one
 * of the scope's entries. Checked on stage 3's resolution (at stage 4, before any lock) and
 * again on stage 6's under the workspace lock, so a link swapped in after the caller resolved
 * its paths is refused before anything is written. Pure; owns no resolution.
 */
import { normalizePath, relativeUnder } from "@forkjoin/patch/RelativePath"
import { scopeCovers } from "@forkjoin/schema"
import { EngineError } from "@forkjoin/schema/EngineError"
import { Stage } from "@forkjoin/schema/ErrorCode"
import * as Result from "effect/Result"
import type { ResolveContext, ResolvedTarget } from "./resolve.ts"

/** Refuses a scope entry that is not a normalized relative path (`src/api`, not `./src/` or `/src`). */
export const checkScopeForm = (scope: ReadonlyArray<string> | undefined): EngineError | undefined => {
  for (const entry of scope ?? []) {
    const normal = normalizePath(entry)
    if (Result.isFailure(normal) || normal.success !== entry || entry === "") {
      return new EngineError({
        code: "request_invalid",
        stage: Stage.normalize,
        paths: [entry],
        message: `The write scope entry ${JSON.stringify(entry)} is not a normalized relative path; give it like 'src/api'.`
      })
    }
  }
  return undefined
}

/**
 * The first target that does not land at its own path inside `scope`: `path_outside_scope`
 * when it lands outside the scope (or outside the workspace), `path_redirected` when a link on
 * its way leads elsewhere inside the scope. `paths` are the named path and, inside the
 * workspace, where it leads. No scope: nothing to check.
 */
export const checkScope = (
  ctx: ResolveContext,
  scope: ReadonlyArray<string> | undefined,
  targets: Iterable<ResolvedTarget>,
  stage: typeof Stage.authorize | typeof Stage.lock
): EngineError | undefined => {
  if (scope === undefined) return undefined
  const fold = (p: string) => (ctx.caseInsensitive ? p.toLowerCase() : p)
  const folded = scope.map(fold)
  const when = stage === Stage.lock ? "under the workspace lock" : "when it was resolved"
  for (const t of targets) {
    const landing = relativeUnder(ctx.root, t.absolute)
    if (landing === undefined) {
      return new EngineError({
        code: "path_outside_scope",
        stage,
        paths: [t.path],
        message: `'${t.path}' leads through a link out of the workspace ${when}, outside this request's write scope ` +
          `${JSON.stringify(scope)}; nothing was written. Remove the link, or write only real paths inside the scope.`
      })
    }
    if (!scopeCovers(folded, fold(landing))) {
      return new EngineError({
        code: "path_outside_scope",
        stage,
        paths: [t.path, landing],
        message: `'${t.path}' leads through a link to '${landing}' ${when}, outside this request's write scope ` +
          `${JSON.stringify(scope)}; nothing was written. Remove the link, or write only real paths inside the scope.`
      })
    }
    if (fold(landing) !== fold(t.path)) {
      return new EngineError({
        code: "path_redirected",
        stage,
        paths: [t.path, landing],
        message: `'${t.path}' leads through a link to '${landing}' ${when}: a folder on its path is a link the request ` +
          "did not name, so the write would change another file than the one named; nothing was written. " +
          "Resolve where the path lands now and name that path."
      })
    }
  }
  return undefined
}
