/**
 * `@forkjoin/gateway`: the resident HTTP server (`forkjoin serve`, SPEC §11). `Gateway` starts
 * it, `GatewayApi` is its contract, `Tokens`/`TokenStore` the bearer tokens bound to threads,
 * `ViewGrants` the short-lived file-view grants. The contract itself is in
 * `@forkjoin/schema/GatewayApi`; its client is `@forkjoin/engine/Remote`.
 *
 * @since 0.1.0
 */
export * as Gateway from "./Gateway.ts"
export * as GatewayApi from "./GatewayApi.ts"
export * as Tokens from "./Tokens.ts"
export * as TokenStore from "./TokenStore.ts"
export * as TokenStoreSqlite from "./TokenStoreSqlite.ts"
export * as ViewGrants from "./ViewGrants.ts"
