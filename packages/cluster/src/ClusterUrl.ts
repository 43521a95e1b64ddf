/**
 * What `--cluster URL` names, decided purely: `postgres://…` / `postgresql://…` is a PostgreSQL
 * server (runners on several machines), `sqlite:PATH` a SQLite file (runners on one machine,
 * several processes). Anything else is refused with a stable code and a message that says what
 * to pass. Every form a user may see carries the password redacted.
 *
 * It owns the syntax and the redaction. It does not own connecting (`ClusterStorage`) nor where
 * a relative SQLite path is resolved (the caller's working folder, by the shell).
 *
 * @since 0.1.0
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/**
 * A PostgreSQL cluster storage: `url` as given (secret: it may hold a password), `display` the
 * same with the password redacted.
 *
 * @category models
 * @since 0.1.0
 */
export const Postgres = Schema.TaggedStruct("Postgres", { url: Schema.String, display: Schema.String })

/**
 * A SQLite cluster storage: the database file `path`, as given.
 *
 * @category models
 * @since 0.1.0
 */
export const Sqlite = Schema.TaggedStruct("Sqlite", { path: Schema.String, display: Schema.String })

/**
 * Where a cluster keeps its messages and runners.
 *
 * @category models
 * @since 0.1.0
 */
export const ClusterUrl = Schema.Union([Postgres, Sqlite])

/**
 * @category models
 * @since 0.1.0
 */
export type ClusterUrl = typeof ClusterUrl.Type

/**
 * A `--cluster` value that names no storage forkjoin knows; `url` is redacted, `message` says
 * what to pass instead.
 *
 * @category errors
 * @since 0.1.0
 */
export class ClusterUrlError extends Schema.TaggedError<ClusterUrlError>()("ClusterUrlError", {
  code: Schema.Literal("cluster_url_invalid"),
  url: Schema.String,
  message: Schema.String
}) {}

const FORMS = "pass postgres://USER@HOST:PORT/DATABASE (runners on several machines) or sqlite:PATH (runners on one machine)"
const REDACTED = "***"

/**
 * `input` with any URL password (in the authority or a `password=` parameter) replaced by `***`;
 * input that is not a URL is returned as is.
 *
 * @category constructors
 * @since 0.1.0
 */
export const redact = (input: string): string => {
  // Textually first: a URL with credentials but no host does not parse, yet shows its password.
  const masked = input.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/@:]*:)[^/@]*@/i, `$1${REDACTED}@`)
  if (!URL.canParse(masked)) return masked
  const url = new URL(masked)
  if (!url.searchParams.has("password")) return masked
  url.searchParams.set("password", REDACTED)
  return url.toString()
}

const invalid = (input: string, why: string): ClusterUrlError =>
  new ClusterUrlError({ code: "cluster_url_invalid", url: redact(input), message: `--cluster ${JSON.stringify(redact(input))}: ${why}; ${FORMS}` })

/**
 * Reads a `--cluster` value. Total: every input is either a `ClusterUrl` or a `ClusterUrlError`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const parse = (input: string): Result.Result<ClusterUrl, ClusterUrlError> => {
  const text = input.trim()
  if (/^postgres(ql)?:\/\//i.test(text)) {
    if (!URL.canParse(text)) return Result.fail(invalid(input, "this is not a valid URL"))
    const url = new URL(text)
    if (url.hostname === "") return Result.fail(invalid(input, "the URL names no host"))
    return Result.succeed(Postgres.make({ url: text, display: redact(text) }))
  }
  if (/^sqlite:/i.test(text)) {
    const path = text.slice("sqlite:".length)
    if (path === "") return Result.fail(invalid(input, "sqlite: names no file"))
    if (path === ":memory:" || path.startsWith("//")) {
      return Result.fail(invalid(input, "the SQLite storage must be a file path that every runner process can open, such as sqlite:/var/lib/forkjoin/cluster.db"))
    }
    return Result.succeed(Sqlite.make({ path, display: `sqlite:${path}` }))
  }
  return Result.fail(invalid(input, text === "" ? "the value is empty" : "this is not a cluster storage URL"))
}
