/**
 * Deterministic workload of the `join` bench: a repository of `size` source files (3-7 KB,
 * nested as `packages/pkg-NNN/src/mod-NN/file-NN.ts`), the work of `children` children that
 * each make a one-line update in `filesPerChild` different files spread over the whole tree,
 * each child's one multi-file patch, and the `forkjoin run` plan that runs them.
 *
 * Owns the content and the edits. Does not own running them (`join.bench.ts`) nor git.
 */
import * as fs from "node:fs"
import path from "node:path"
import { sha256 } from "../../packages/patch/src/Bytes.ts"
import { mulberry32 } from "./fixture.ts"

const FILES_PER_DIR = 20
const MODS_PER_PKG = 10
const SEED = 0x5eed_7017
const WORDS = ["alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "lambda", "theta", "zeta", "rho", "tau"]

/** `packages/pkg-NNN/src/mod-NN/file-NN.ts` of file `i` (20 files per module, 10 modules per package). */
export const relPathOf = (i: number): string => {
  const f = i % FILES_PER_DIR
  const m = Math.floor(i / FILES_PER_DIR) % MODS_PER_PKG
  const p = Math.floor(i / (FILES_PER_DIR * MODS_PER_PKG))
  return `packages/pkg-${String(p).padStart(3, "0")}/src/mod-${String(m).padStart(2, "0")}/file-${String(f).padStart(2, "0")}.ts`
}

/** The lines of file `i`: 40-99 lines, each unique in the file (it names the file and the line). */
export const linesOf = (i: number): Array<string> => {
  const r = mulberry32(SEED ^ Math.imul(i + 1, 0x9e3779b1))
  const count = 40 + Math.floor(r() * 60)
  const out: Array<string> = []
  for (let l = 0; l < count; l++) {
    const w1 = WORDS[Math.floor(r() * WORDS.length)]!
    const w2 = WORDS[Math.floor(r() * WORDS.length)]!
    out.push(`export const v${i}_${l} = ${Math.floor(r() * 1_000_000)} // ${w1} ${w2} of file ${i} line ${l}`)
  }
  return out
}

const textOf = (lines: ReadonlyArray<string>): string => `${lines.join("\n")}\n`

/** Writes the `size` files of the repository below `dir`; returns their total bytes. */
export const writeRepoFiles = (dir: string, size: number): number => {
  let bytes = 0
  let lastDir = ""
  for (let i = 0; i < size; i++) {
    const abs = path.join(dir, relPathOf(i))
    const d = path.dirname(abs)
    if (d !== lastDir) {
      fs.mkdirSync(d, { recursive: true })
      lastDir = d
    }
    const text = textOf(linesOf(i))
    fs.writeFileSync(abs, text)
    bytes += Buffer.byteLength(text)
  }
  return bytes
}

/** One file a child edits: its bytes before and after, and its section of the child's patch. */
export interface FileEdit {
  readonly path: string
  readonly original: string
  readonly expected: string
  readonly originalHash: string
  readonly expectedHash: string
  /** `*** Update File:` section: one `@@` chunk, 3 context lines each side of a one-line change. */
  readonly section: ReadonlyArray<string>
}

/** One child's work: its task id, the files it edits and the one patch that edits them all. */
export interface ChildWork {
  readonly id: string
  readonly files: ReadonlyArray<FileEdit>
  readonly patch: string
}

/** The one-line update of file `i` (line 5-34, so 3 context lines each side always exist). */
export const editOf = (i: number): FileEdit => {
  const lines = linesOf(i)
  const l = 5 + ((i * 7) % 30)
  const old = lines[l]!
  const next = old.replace(/= (\d+) /, "= $1 + 1 ")
  if (next === old) throw new Error(`joinFixture: line ${l} of file ${i} has no number to edit`)
  const p = relPathOf(i)
  const after = [...lines]
  after[l] = next
  const original = textOf(lines)
  const expected = textOf(after)
  const section = [
    `*** Update File: ${p}`,
    "@@",
    ...lines.slice(l - 3, l).map((s) => ` ${s}`),
    `-${old}`,
    `+${next}`,
    ...lines.slice(l + 1, l + 4).map((s) => ` ${s}`)
  ]
  return { path: p, original, expected, originalHash: sha256(original), expectedHash: sha256(expected), section }
}

/**
 * The children of a `size`-file repository: child `k` edits files `k * filesPerChild + j`
 * of `children * filesPerChild` slots spread evenly over the tree, so no two children touch
 * the same file (every join is conflict-free and every git merge is clean).
 */
export const makeChildren = (size: number, children: number, filesPerChild: number): Array<ChildWork> => {
  const slots = children * filesPerChild
  if (slots > size) throw new Error(`joinFixture: ${slots} edited files do not fit in ${size} files`)
  const out: Array<ChildWork> = []
  for (let k = 0; k < children; k++) {
    const files: Array<FileEdit> = []
    for (let j = 0; j < filesPerChild; j++) files.push(editOf(Math.floor(((k * filesPerChild + j + 0.5) * size) / slots)))
    const patch = ["*** Begin Patch", ...files.flatMap((f) => f.section), "*** End Patch", ""].join("\n")
    out.push({ id: `child-${String(k).padStart(2, "0")}`, files, patch })
  }
  return out
}

/**
 * The `forkjoin run` plan (schemaVersion 1) of `children`: one `transactional_write` task per
 * child, scoped to exactly its files, applying its one patch and finishing.
 */
export const planOf = (children: ReadonlyArray<ChildWork>): unknown => ({
  schemaVersion: 1,
  tasks: children.map((c) => ({
    id: c.id,
    mode: "transactional_write",
    writeScope: c.files.map((f) => f.path),
    maxAttempts: 1,
    timeoutMs: 600_000,
    actions: [{ apply_patch: { patch: c.patch } }, { finish: {} }]
  }))
})
