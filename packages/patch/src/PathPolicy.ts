/**
 * The one definition of which workspace paths forkjoin never reads nor changes by default
 * (`.git` and `.forkjoin` at any depth) and the glob matcher its policies are written in.
 * It lives here, below history and the engine, so the engine's resolution, history
 * ingestion and gap detection all refuse exactly the same paths.
 *
 * @since 0.1.0
 */

/**
 * Paths no request may touch unless the policy says otherwise: `.git` and `.forkjoin` at any
 * depth, since a nested repository's config or hooks run code when git runs there, and
 * forkjoin's own state holds identities and transcripts.
 *
 * @category constants
 * @since 0.1.0
 */
export const DEFAULT_DENIED_GLOBS: ReadonlyArray<string> = ["**/.git/**", "**/.forkjoin/**"]

/**
 * Compiles a glob (`*` within a segment, `**` across segments, `?` one char) to a RegExp over
 * relative POSIX paths; `dir/**` also matches `dir` itself.
 *
 * @category constructors
 * @since 0.1.0
 */
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

// Letter case folded: on a case-insensitive filesystem `.GIT/config` is `.git/config`.
const DEFAULT_DENIED = DEFAULT_DENIED_GLOBS.map((glob) => ({ glob, re: compileGlob(glob, true) }))

/**
 * The default denied glob a workspace-relative POSIX path matches (letter case folded), or
 * `undefined` when the default policy allows it.
 *
 * @category guards
 * @since 0.1.0
 */
export const deniedByDefault = (rel: string): string | undefined => DEFAULT_DENIED.find(({ re }) => re.test(rel))?.glob
