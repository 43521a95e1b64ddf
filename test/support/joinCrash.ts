/**
 * A seeded join case for the crash tests (`test/crash/join.crash.test.ts`): a workspace and a
 * plan of four mutating scripted children in task order — `alpha` (an update and an add under
 * `src/`), `top` (the top of `shared/s.txt`), `beta` (a delete and a move with an edit under
 * `lib/`) and `bottom` (the bottom of `shared/s.txt`, which the join auto-merges with `top`) —
 * with a model of the files after the first k children are applied.
 *
 * Owns nothing forkjoin does; it only writes plan values and computes expected file maps.
 */
import { prng } from "./random.ts"

/** One scripted child: its task id, scope, patches (one `apply_patch` each), and what it does to the files. */
export interface CrashChild {
  readonly id: string
  readonly writeScope: ReadonlyArray<string>
  readonly patches: ReadonlyArray<string>
  /** Renames its join transaction makes: with more than one, a crash after the first leaves a mix. */
  readonly renames: number
  readonly apply: (files: Map<string, string>) => void
}

/** A generated workspace (relative path → text) and its four children in task order. */
export interface CrashCase {
  readonly seed: number
  readonly files: Readonly<Record<string, string>>
  readonly children: ReadonlyArray<CrashChild>
}

const patchOf = (...body: ReadonlyArray<string>): string => ["*** Begin Patch", ...body, "*** End Patch"].join("\n")

const lines = (text: string): Array<string> => text.split("\n").slice(0, -1)
const text = (ls: ReadonlyArray<string>): string => ls.map((l) => `${l}\n`).join("")

/** `files[path]` with line `at` replaced by `to`. */
const replaceLine = (files: Map<string, string>, p: string, at: number, to: string): void => {
  const ls = lines(files.get(p)!)
  ls[at] = to
  files.set(p, text(ls))
}

/** The case of `seed`: file contents, and which lines the children edit, come from the seed. */
export const crashCase = (seed: number): CrashCase => {
  const r = prng(seed)
  const fileOf = (name: string, n: number) => text(Array.from({ length: n }, (_, i) => `s${seed} ${name} line ${i} ${r.int(1e9)}`))
  const files: Record<string, string> = {
    "src/alpha.txt": fileOf("alpha", 4 + r.int(6)),
    "lib/beta.txt": fileOf("beta", 2 + r.int(4)),
    "lib/gamma.txt": fileOf("gamma", 3 + r.int(4)),
    "shared/s.txt": fileOf("shared", 10 + r.int(8)),
    "notes/readme.txt": fileOf("readme", 2)
  }
  const alphaAt = r.int(lines(files["src/alpha.txt"]!).length)
  const alphaOld = lines(files["src/alpha.txt"]!)[alphaAt]!
  const added = `src/added-${seed}.txt`
  const addedText = text([`added by alpha`, `seed ${seed} ${r.int(1e9)}`])
  const shared = lines(files["shared/s.txt"]!)
  // Top and bottom edits stay at least four lines apart, so diff3 merges them without a conflict.
  const topAt = r.int(3)
  const bottomAt = shared.length - 1 - r.int(3)
  const gammaFirst = lines(files["lib/gamma.txt"]!)[0]!
  const children: Array<CrashChild> = [
    {
      id: "alpha",
      writeScope: ["src"],
      patches: [patchOf(
        "*** Update File: src/alpha.txt", "@@", `-${alphaOld}`, `+${alphaOld} edited by alpha`,
        `*** Add File: ${added}`, ...lines(addedText).map((l) => `+${l}`)
      )],
      renames: 2,
      apply: (f) => {
        replaceLine(f, "src/alpha.txt", alphaAt, `${alphaOld} edited by alpha`)
        f.set(added, addedText)
      }
    },
    {
      id: "top",
      writeScope: ["shared/s.txt"],
      patches: [patchOf("*** Update File: shared/s.txt", "@@", `-${shared[topAt]}`, `+${shared[topAt]} edited by top`)],
      renames: 1,
      apply: (f) => replaceLine(f, "shared/s.txt", topAt, `${shared[topAt]} edited by top`)
    },
    {
      id: "beta",
      writeScope: ["lib"],
      patches: [
        patchOf("*** Delete File: lib/beta.txt"),
        patchOf("*** Update File: lib/gamma.txt", "*** Move to: lib/moved/gamma.txt", "@@", `-${gammaFirst}`, `+${gammaFirst} moved by beta`)
      ],
      renames: 2,
      apply: (f) => {
        f.delete("lib/beta.txt")
        const g = f.get("lib/gamma.txt")!
        f.delete("lib/gamma.txt")
        f.set("lib/moved/gamma.txt", g)
        replaceLine(f, "lib/moved/gamma.txt", 0, `${gammaFirst} moved by beta`)
      }
    },
    {
      id: "bottom",
      writeScope: ["shared/s.txt"],
      patches: [patchOf("*** Update File: shared/s.txt", "@@", `-${shared[bottomAt]}`, `+${shared[bottomAt]} edited by bottom`)],
      renames: 1,
      apply: (f) => replaceLine(f, "shared/s.txt", bottomAt, `${shared[bottomAt]} edited by bottom`)
    }
  ]
  return { seed, files, children }
}

/** The plan file (schemaVersion 1) that runs the case's first `children` children (all by default), atomically or not. */
export const crashPlan = (c: CrashCase, options: { readonly atomic?: boolean; readonly children?: number } = {}): unknown => ({
  schemaVersion: 1,
  ...(options.atomic === true ? { atomic: true } : {}),
  tasks: c.children.slice(0, options.children ?? c.children.length).map((child) => ({
    id: child.id,
    mode: "transactional_write",
    writeScope: child.writeScope,
    actions: [...child.patches.map((patch) => ({ apply_patch: { patch } })), { finish: {} }]
  }))
})

/** The workspace files once the first `applied` children (task order) are joined. */
export const filesAfter = (c: CrashCase, applied: number): Record<string, string> => {
  const files = new Map(Object.entries(c.files))
  for (const child of c.children.slice(0, applied)) child.apply(files)
  return Object.fromEntries(files)
}
