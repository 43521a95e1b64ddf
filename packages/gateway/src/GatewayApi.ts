/**
 * The gateway's HTTP contract, as the server code imports it: the contract itself (the
 * `HttpApi`, its middleware, the errors with their status codes) lives in
 * `@forkjoin/schema/GatewayApi`, below both the server and its client
 * (`@forkjoin/engine/Remote`), which decodes the answers with the same schemas.
 *
 * @since 0.1.0
 */
export * from "@forkjoin/schema/GatewayApi"
