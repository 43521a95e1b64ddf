/**
 * Denied-path globs for directory listings, with the engine's glob semantics (`*` within a
 * segment, `**` across segments, `?` one character, `dir/**` also matches `dir`). A copy of the
 * engine's private matcher: the engine does not yet expose its policy, and listings must hide
 * exactly what the engine refuses to read.
 */

/** The engine's default denied globs. */
export const DEFAULT_DENIED_GLOBS: ReadonlyArray<string> = [".git/**", ".forkjoin/**"]

/** Compiles a glob to a RegExp over relative POSIX paths. */
export const compileGlob = (glob: string, caseInsensitive: boolean): RegExp => {
  let re = ""
  let i = 0
  while (i < glob.length) {
    if (glob.startsWith("/**", i) && i + 3 === glob.length) {
      re += "(?:/.*)?"
      i += 3
    } else if (glob.startsWith("**/", i)) {
      re += "(?:.*/)?"
      i += 3
    } else if (glob.startsWith("**", i)) {
      re += ".*"
      i += 2
    } else {
      const c = glob[i]!
      re += c === "*" ? "[^/]*" : c === "?" ? "[^/]" : c.replace(/[.+^${}()|[\]\\]/g, "\\$&")
      i++
    }
  }
  return new RegExp(`^${re}$`, caseInsensitive ? "i" : "")
}
