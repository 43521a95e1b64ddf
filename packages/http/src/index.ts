/**
 * `@forkjoin/http`: forkjoin's one HTTP client over `node:http(s)`, used by the gateway's client
 * (`@forkjoin/engine/Remote`) and the model providers (`@forkjoin/drivers`). `HttpTransport`
 * sends a request (keep-alive, timeouts, a size cap, retries honouring `retry-after`), `Sse`
 * cuts server-sent events out of a stream.
 *
 * @since 0.1.0
 */
export * as HttpTransport from "./HttpTransport.ts"
export * as Sse from "./Sse.ts"
