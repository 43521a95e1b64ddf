/**
 * The `forkjoin serve` command: flags and help, wired to `Serve.ts` (loaded, with the gateway,
 * only when the command runs).
 *
 * @since 0.1.0
 */
import { ThreadId } from "@forkjoin/schema/Ids"
import { Command, Flag } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { command } from "./internal/command.ts"
import { jsonFlag, optionalText, switchFlag, threadFlag, workspaceFlags, workspaceInput } from "./internal/flags.ts"

/**
 * `forkjoin serve --workspace DIR [--db FILE] [--host H] [--port N] [--allow-remote] [--host-name NAME]... [--open-url [--thread T]] [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const serve = command(
  "serve",
  {
    ...workspaceFlags(),
    host: Flag.String("host").pipe(
      Flag.withMetavar("H"),
      Flag.withDescription("Address to bind (default 127.0.0.1; a non-loopback address needs --allow-remote)"),
      Flag.withDefault("127.0.0.1")
    ),
    port: Flag.Int("port").pipe(
      Flag.withSchema(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 65535 }))),
      Flag.withMetavar("N"),
      Flag.withDescription("Port (default 7420; 0 picks a free one)"),
      Flag.withDefault(7420)
    ),
    allowRemote: switchFlag("allow-remote", "Allow binding a non-loopback address (anyone who can reach it still needs a token)"),
    hostName: Flag.String("host-name").pipe(
      Flag.withMetavar("NAME"),
      Flag.withDescription(
        "Also answer requests whose Host header names NAME, like a proxy's or DNS name for this server (repeatable; " +
          "without it only 127.0.0.1, localhost and [::1] are answered on loopback, the --host address otherwise)"
      ),
      Flag.atLeast(0)
    ),
    openUrl: switchFlag("open-url", "Also print a one-time login URL for the web page (its code is exchanged for a session token)"),
    thread: threadFlag("ID", "The thread the --open-url session sees, with its descendants (default 'cli', as 'forkjoin run')"),
    json: jsonFlag("Print the address as one JSON line: {\"url\":\"http://HOST:PORT\"} (plus \"loginUrl\" with --open-url)"),
    cluster: optionalText("cluster", "URL", "The cluster whose runners GET /v1/cluster lists (default: \"cluster\" in forkjoin.config.json)")
  },
  function*(input) {
    const Serve = yield* Effect.promise(() => import("./Serve.ts"))
    yield* Serve.serve({
      ...workspaceInput(input),
      host: input.host,
      port: input.port,
      allowRemote: input.allowRemote,
      hostNames: input.hostName,
      loginThread: input.openUrl ? Option.getOrElse(input.thread, () => ThreadId.make("cli")) : undefined,
      json: input.json,
      cluster: Option.getOrUndefined(input.cluster)
    })
  }
).pipe(
  Command.withDescription(
    "Serve the workspace over HTTP until interrupted: one resident process that keeps the engine and the history " +
      "open. API under /v1/ (apply, the four history views, merge runs (each child's outcome says which runner ran it) and conflicts, resolve, rollback, the cluster's runners, provider " +
      "events, view grants, a live event stream), its OpenAPI document at /openapi.json, and the history web page " +
      "at /. Every /v1/ request needs 'Authorization: Bearer <token>' from 'forkjoin token create'. Requests whose " +
      "Host header is not one of the server's names (see --host-name) are refused with 403. The first " +
      "stdout line is 'forkjoin serve: listening on http://HOST:PORT'. Exit 130 when stopped (Ctrl-C, SIGTERM), 1 on a failure, 2 " +
      "usage error (a refused bind included)."
  ),
  Command.withShortDescription("Serve the API, the event stream and the history page over HTTP")
)
