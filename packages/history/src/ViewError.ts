/**
 * The history views' refusal (SPEC §4.4): a request the views cannot answer as asked. It is
 * only ever a request problem; a store failure stays a `StoreError` and a bug stays a defect.
 *
 * It owns the error's shape and message. It does not own the codes the CLI maps it to.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * Why a view refused a request: the record or thread is not visible from the caller
 * (`NotVisible`), nothing has that id (`NotFound`), the path is outside the workspace or not
 * a clean relative path (`PathRefused`), the cursor is not one of this query's
 * (`InvalidCursor`), or the request is malformed (`InvalidRequest`).
 *
 * @category errors
 * @since 0.1.0
 */
export class ViewError extends Schema.TaggedError<ViewError>()("ViewError", {
  operation: Schema.String,
  reason: Schema.Literals(["NotVisible", "NotFound", "PathRefused", "InvalidCursor", "InvalidRequest"]),
  detail: Schema.String
}) {
  override get message() {
    return `${this.operation}: ${this.detail}`
  }
}
