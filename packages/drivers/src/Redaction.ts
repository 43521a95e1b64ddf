/**
 * The one redaction of secrets in what model providers send back: every configured API key
 * (as written, JSON-escaped, with `\/`, and URL-encoded), `Bearer` tokens, and the values of
 * `Authorization` / `x-api-key` headers echoed in a body become `[redacted]`. The providers
 * apply it where answers and errors enter forkjoin, and the model driver again before a
 * transcript is written, so no sink (transcript, `--json`, the terminal, the history) sees a key.
 *
 * Owns what counts as a secret in text and how it is replaced. Does not own where keys come
 * from (`ProviderSettings`, `Models`) nor the sinks.
 *
 * @since 0.1.0
 */
import type * as LanguageModel from "effect/ai/LanguageModel"

// -------------------------------------------------------------------------------------
// models
// -------------------------------------------------------------------------------------

/**
 * Redacts text, or every string (keys included) inside a JSON-like value.
 *
 * @category models
 * @since 0.1.0
 */
export interface Redactor {
  readonly text: (text: string) => string
  /** A copy of `value` with every string redacted; `value` itself when nothing changed. */
  readonly value: <A>(value: A) => A
}

/**
 * What a secret is replaced with.
 *
 * @category models
 * @since 0.1.0
 */
export const PLACEHOLDER = "[redacted]"

/**
 * Keys shorter than this are not searched for: replacing every occurrence of a short string
 * would mangle ordinary text, and no provider issues keys that short.
 *
 * @category models
 * @since 0.1.0
 */
export const MIN_SECRET_LENGTH = 8

// -------------------------------------------------------------------------------------
// constructors
// -------------------------------------------------------------------------------------

// A credential: 16 or more token characters (RFC 6750's token68) with a letter and a digit,
// so prose ("Bearer tokens") and identifiers in code (`Authorization: token`) are left alone.
const CRED = "(?=[A-Za-z0-9._~+/-]*[0-9])(?=[A-Za-z0-9._~+/-]*[A-Za-z])[A-Za-z0-9._~+/-]{16,}=*"
const BEARER = new RegExp(`\\b(bearer[ \\t]+)${CRED}`, "gi")
// A header name, then `:` or `=` with the quotes (plain or JSON-escaped) around it, then the value.
const HEADER = new RegExp(
  `\\b((?:proxy-)?authorization|x-api-key|api-key)(\\\\?["']?[ \\t]*[:=][ \\t]*\\\\?["']?)((?:bearer|basic|token)[ \\t]+)?${CRED}`,
  "gi"
)

// The shortest text either pattern can match ("api-key:" or "bearer " and a credential).
const SHORTEST_PATTERN_MATCH = 23

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** The forms a key takes in a body: as is, inside a JSON string (also with `\/`), in a URL. */
const formsOf = (secret: string): Array<string> => {
  const json = JSON.stringify(secret).slice(1, -1)
  return [secret, json, json.replaceAll("/", "\\/"), encodeURIComponent(secret)]
}

const redactValue = (text: (s: string) => string) => {
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return text(v)
    if (typeof v !== "object" || v === null) return v
    if (Array.isArray(v)) {
      let out: Array<unknown> | undefined
      for (let i = 0; i < v.length; i++) {
        const r = walk(v[i])
        if (r !== v[i]) (out ??= v.slice())[i] = r
      }
      return out ?? v
    }
    let out: Record<string, unknown> | undefined
    const entries = Object.entries(v)
    for (let i = 0; i < entries.length; i++) {
      const [k, item] = entries[i]!
      const key = text(k)
      const r = walk(item)
      if (out === undefined && (key !== k || r !== item)) {
        // The first change: copy the entries before it as they are.
        out = {}
        for (let j = 0; j < i; j++) out[entries[j]![0]] = entries[j]![1]
      }
      if (out !== undefined) out[key] = r
    }
    return out ?? v
  }
  return walk
}

/**
 * A redactor of `secrets` (empty and short ones skipped) and of the credential patterns.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (secrets: Iterable<string>): Redactor => {
  const forms = [...new Set([...secrets].filter((s) => s.length >= MIN_SECRET_LENGTH).flatMap(formsOf))]
    // Longest first: a key that contains another is replaced whole.
    .sort((a, b) => b.length - a.length)
  const exact = forms.length === 0 ? undefined : new RegExp(forms.map(escapeRegExp).join("|"), "g")
  // Text shorter than any match is returned as is: most strings of a reply are names and ids.
  const shortest = Math.min(SHORTEST_PATTERN_MATCH, ...forms.map((f) => f.length))
  const text = (s: string): string => {
    if (s.length < shortest) return s
    const keyless = exact === undefined ? s : s.replace(exact, PLACEHOLDER)
    return keyless.replace(BEARER, `$1${PLACEHOLDER}`).replace(HEADER, (_m, name: string, sep: string, scheme: string | undefined) =>
      `${name}${sep}${scheme ?? ""}${PLACEHOLDER}`
    )
  }
  const walk = redactValue(text)
  return { text, value: <A>(v: A): A => walk(v) as A }
}

/**
 * The redactor of no configured key (the credential patterns only).
 *
 * @category constructors
 * @since 0.1.0
 */
export const patternsOnly: Redactor = make([])

// Which redactor a model's provider uses, so a driver given only the model redacts the same keys.
const byModel = new WeakMap<LanguageModel.LanguageModel, Redactor>()

/**
 * Remembers the redactor of `model` (the providers do, when they make one).
 *
 * @category constructors
 * @since 0.1.0
 */
export const register = (model: LanguageModel.LanguageModel, redactor: Redactor): LanguageModel.LanguageModel => {
  byModel.set(model, redactor)
  return model
}

/**
 * The redactor of `model`'s provider; `patternsOnly` for a model no provider registered.
 *
 * @category constructors
 * @since 0.1.0
 */
export const forModel = (model: LanguageModel.LanguageModel): Redactor => byModel.get(model) ?? patternsOnly
