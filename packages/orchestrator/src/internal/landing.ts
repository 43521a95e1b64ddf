/**
 * Where a child's writes really land. A changeset names paths lexically, but a folder on a
 * path may be a link inside the workspace (`sub/link -> ../docs`), made before the export or
 * swapped in after it. Every path an entry writes or moves from is resolved by the engine
 * (its `Inspection.landing`, links followed inside the workspace) and checked against the
 * task's write scope after resolution; the entries are rewritten to the real paths, so the
 * plan, the engine's `before` checks and history all name the file that changes. Admission
 * runs before the engine's lock: the engine checks the same scope again under it
 * (`writeScope`), so a link swapped in between is refused too (adrs/20261202-scope-under-lock.md).
 */
import { Engine } from "@forkjoin/engine/Engine"
import { normalizePath } from "@forkjoin/patch/RelativePath"
import { type Changeset, type ChangesetEntry, type RelativePath, scopeCovers } from "@forkjoin/schema"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { revalidate } from "../Revalidate.ts"
import type { JoinChild } from "./model.ts"

/** Why a child is refused before anything of it is read or written: its status and a message. */
export interface Refused {
  readonly status: "invalid_changeset" | "invalid_changeset_path" | "scope_violation" | "path_refused" | "missing_changeset"
  readonly reason: string
}

/**
 * The child's changeset, revalidated as untrusted input and landed: every path resolved
 * through the engine and inside the task's write scope where it lands, the entries naming
 * those real paths. A path the engine refuses for safety, or where a link, a named pipe or
 * a device is now (never written through or replaced), is `path_refused`; one landing
 * outside the scope (or outside the workspace) is `scope_violation`; two paths landing on one
 * file are `invalid_changeset_path`.
 */
export const admitChangeset = (child: JoinChild): Effect.Effect<Result.Result<Changeset, Refused>, never, Engine> =>
  Effect.gen(function*() {
    if (child.changeset === undefined) {
      return Result.fail(child.unread ?? { status: "missing_changeset", reason: "the child exported no changeset (it did not finish cleanly)" })
    }
    const scope = child.writeScope ?? []
    const checked = revalidate(child.changeset, { id: child.id, writeScope: scope })
    if (Result.isFailure(checked)) return Result.fail({ status: checked.failure.status, reason: checked.failure.reason })
    const changeset = checked.success
    const paths = [...new Set(changeset.entries.flatMap((e) => (e.moveFrom === undefined ? [e.path] : [e.moveFrom, e.path])))]
    const engine = yield* Engine
    const inspected = yield* engine.inspect(paths).pipe(Effect.result)
    if (Result.isFailure(inspected)) {
      return Result.fail({ status: "invalid_changeset_path", reason: `${inspected.failure.code}: ${inspected.failure.message}` })
    }
    const landing = new Map<string, RelativePath>()
    for (const p of paths) {
      const one = inspected.success.get(p)
      if (one === undefined) return Result.fail({ status: "path_refused", reason: `${p} could not be resolved in the workspace` })
      if (Result.isFailure(one)) {
        return Result.fail({
          status: "path_refused",
          reason: `${p} is refused by the workspace's safety rules (${one.failure.code}: ${one.failure.message}); nothing of the child was applied`
        })
      }
      const state = one.success.state
      if (state._tag === "Other") {
        return Result.fail({
          status: "path_refused",
          reason: `${p} is ${state.description}, which the join never writes through or replaces; nothing of the child was applied`
        })
      }
      const landed = one.success.landing
      if (landed === undefined) {
        return Result.fail({ status: "scope_violation", reason: `${p} leads through a link out of the workspace; a child writes only inside its writeScope` })
      }
      if (!scopeCovers(scope, landed)) {
        return Result.fail({
          status: "scope_violation",
          reason: `${p} leads through a link to ${landed}, outside the task's writeScope ${JSON.stringify(scope)}; nothing of the child was applied. ` +
            "Remove the link or name the real folder in the writeScope"
        })
      }
      const normal = normalizePath(landed)
      if (Result.isFailure(normal)) return Result.fail({ status: "path_refused", reason: `${p} lands at ${JSON.stringify(landed)}, which is not a workspace path` })
      landing.set(p, normal.success)
    }
    const real = (p: RelativePath): RelativePath => landing.get(p) ?? p
    const entries = changeset.entries.map((e): ChangesetEntry => ({
      ...e,
      path: real(e.path),
      ...(e.moveFrom === undefined ? {} : { moveFrom: real(e.moveFrom) }),
      ...(e.preimage === undefined ? {} : { preimage: { ...e.preimage, path: real(e.preimage.path) } }),
      ...(e.postimage === undefined ? {} : { postimage: { ...e.postimage, path: real(e.postimage.path) } }),
      ...(e.overwritten === undefined ? {} : { overwritten: { ...e.overwritten, path: real(e.overwritten.path) } })
    }))
    return Result.succeed({ ...changeset, entries })
  })
