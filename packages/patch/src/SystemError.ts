/**
 * Reading Node system errors (`ENOENT`, `EACCES`, `SQLITE_BUSY`, ...) without casts: the one
 * place that knows a thrown value may carry a string `code`.
 *
 * @since 0.1.0
 */

/**
 * The `code` of a thrown system error (`"ENOENT"`), or `undefined` when it has none.
 *
 * @category guards
 * @since 0.1.0
 */
export const errnoOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined

/**
 * A short description of a thrown value for messages: its code when it has one, else its
 * message, else its string form.
 *
 * @category constructors
 * @since 0.1.0
 */
export const describeError = (error: unknown): string =>
  errnoOf(error) ?? (error instanceof Error ? error.message : String(error))
