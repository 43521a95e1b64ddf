/**
 * Fault injection for crash tests (SPEC §3, §4.5): `FORKJOIN_FAULT=stage:<N>` kills the
 * process with SIGKILL right after engine stage N; `FORKJOIN_FAULT=commit:after-rename:<k>`
 * right after the k-th rename of a commit. Read once at start-up; nothing else depends on it.
 */

/** The parsed fault plan of this process. */
export interface FaultPlan {
  readonly afterStage: number | undefined
  readonly afterRename: number | undefined
}

/** Parses `FORKJOIN_FAULT`; an unparsable value is a start-up error naming the variable. */
export const parseFault = (value: string | undefined): FaultPlan => {
  if (value === undefined || value === "") return { afterStage: undefined, afterRename: undefined }
  const stage = /^stage:(\d+)$/.exec(value)
  if (stage !== null) return { afterStage: Number(stage[1]), afterRename: undefined }
  const rename = /^commit:after-rename:(\d+)$/.exec(value)
  if (rename !== null) return { afterStage: undefined, afterRename: Number(rename[1]) }
  throw new Error(`FORKJOIN_FAULT='${value}' is not 'stage:<N>' or 'commit:after-rename:<k>'`)
}

const plan = parseFault(process.env["FORKJOIN_FAULT"])

const die = (): never => {
  process.kill(process.pid, "SIGKILL")
  // SIGKILL is not catchable; this only satisfies the type checker.
  throw new Error("unreachable")
}

/** Called by the engine after each stage. */
export const afterStage = (stage: number): void => {
  if (plan.afterStage === stage) die()
}

/** Called by the commit step after each rename (1-based). */
export const afterRename = (k: number): void => {
  if (plan.afterRename === k) die()
}
