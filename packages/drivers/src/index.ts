/**
 * `@forkjoin/drivers`: sessions driven by language models (SPEC §10). `ModelDriver` turns a
 * model's tool calls into session actions; `OpenAiCompatible` and `Anthropic` are the providers
 * (`ProviderSettings`, `Models` choose and check one; `Redaction` keeps their keys out of
 * everything they send back); `Tools` is the tool surface;
 * `HostTools` the orchestration tools; `ParentSession` the parent of `forkjoin agent`;
 * `McpTools` what `forkjoin mcp` serves.
 *
 * @since 0.1.0
 */
export * as Anthropic from "./Anthropic.ts"
export * as HostTools from "./HostTools.ts"
export * as McpTools from "./McpTools.ts"
export * as ModelDriver from "./ModelDriver.ts"
export * as Models from "./Models.ts"
export * as OpenAiCompatible from "./OpenAiCompatible.ts"
export * as ParentSession from "./ParentSession.ts"
export * as ProviderSettings from "./ProviderSettings.ts"
export * as Redaction from "./Redaction.ts"
export * as Tools from "./Tools.ts"
