/** Seeded randomness for reproducible generated workspaces and patches. */

/** A small deterministic PRNG (mulberry32). */
export const prng = (seed: number) => {
  let a = seed >>> 0
  const uint32 = (): number => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return (t ^ (t >>> 14)) >>> 0
  }
  const next = (): number => uint32() / 4294967296
  return {
    /** The next value in [0, 1). */
    next,
    /** The next raw 32-bit value. */
    uint32,
    /** `n` bytes, each the top byte of the next value (incompressible). */
    bytes: (n: number): Uint8Array => new Uint8Array(n).map(() => uint32() >>> 24),
    int: (n: number): number => Math.floor(next() * n),
    pick: <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(next() * xs.length)]!
  }
}

/** A generated workspace (relative path → text) and a native-valid multi-operation patch over it. */
export const generateCase = (seed: number): { files: Record<string, string>; patch: string } => {
  const r = prng(seed)
  const files: Record<string, string> = {}
  const count = 4 + r.int(4)
  for (let f = 0; f < count; f++) {
    const lines = Array.from({ length: 5 + r.int(20) }, (_, i) => `s${seed} f${f} line ${i} ${r.int(1e9)}`)
    files[`${r.pick(["src", "lib", "src/deep"])}/file${f}.txt`] = lines.join(r.next() < 0.2 ? "\r\n" : "\n") + "\n"
  }
  const paths = Object.keys(files)
  const body: Array<string> = []
  const used = new Set<string>()
  const take = () => {
    const free = paths.filter((p) => !used.has(p))
    const p = r.pick(free)
    used.add(p)
    return p
  }
  const updates = 1 + r.int(2)
  for (let u = 0; u < updates; u++) {
    const p = take()
    const lines = files[p]!.split(/\r?\n/)
    const at = r.int(lines.length - 1)
    body.push(`*** Update File: ${p}`, "@@", `-${lines[at]}`, `+${lines[at]} edited by seed ${seed}`)
  }
  body.push(`*** Add File: new${seed}/n${r.int(100)}/added.txt`, "+added", `+seed ${seed}`)
  if (r.next() < 0.7) body.push(`*** Delete File: ${take()}`)
  if (r.next() < 0.7) {
    const p = take()
    const first = files[p]!.split(/\r?\n/)[0]!
    body.push(`*** Update File: ${p}`, `*** Move to: moved${seed}/${p}`, "@@", `-${first}`, `+${first} moved`)
  }
  return { files, patch: ["*** Begin Patch", ...body, "*** End Patch"].join("\n") }
}
