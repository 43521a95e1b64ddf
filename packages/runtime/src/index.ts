/**
 * `@forkjoin/runtime`: what a child session runs on — write scopes (SPEC §6.1), the overlay
 * workspace view that stages a `changeset_export` child's edits (§6.2), changeset export
 * (§6.3) and the content-addressed blob store that carries changeset content.
 *
 * @since 0.1.0
 */
export * from "./BlobStore.ts"
export * as Overlay from "./Overlay.ts"
export * as WriteScope from "./WriteScope.ts"
export * as Action from "./Action.ts"
export * as Artifacts from "./Artifacts.ts"
export * as CheckView from "./CheckView.ts"
export * as Children from "./Children.ts"
export * as ChildVerify from "./ChildVerify.ts"
export * as Command from "./Command.ts"
export * as Driver from "./Driver.ts"
export * as RunPlan from "./RunPlan.ts"
export * as Session from "./Session.ts"
export * as Interleave from "./Interleave.ts"
