/**
 * The `forkjoin runner` command: flags and help, wired to `Runner.ts` (loaded, with the
 * cluster, only when the command runs).
 *
 * @since 0.1.0
 */
import { Command, Flag } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { command } from "./internal/command.ts"
import { jsonFlag, optionalText } from "./internal/flags.ts"

/**
 * `forkjoin runner --cluster URL [--capacity N] [--host H] [--port N] [--secret-file F] [--json]`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const runner = command(
  "runner",
  {
    cluster: Flag.String("cluster").pipe(
      Flag.withMetavar("URL"),
      Flag.withDescription("The cluster's storage: postgres://USER:PASSWORD@HOST:PORT/DB (runners on several machines) or sqlite:PATH (one machine)")
    ),
    capacity: Flag.Int("capacity").pipe(
      Flag.withSchema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
      Flag.withMetavar("N"),
      Flag.withDescription("This runner's share of the children, relative to the other runners' (default 1)"),
      Flag.withDefault(1)
    ),
    host: Flag.String("host").pipe(
      Flag.withMetavar("H"),
      Flag.withDescription("Address to listen on and advertise to the cluster (default 127.0.0.1; another address needs a cluster secret, and runner traffic is then TLS keyed by it)"),
      Flag.withDefault("127.0.0.1")
    ),
    port: Flag.Int("port").pipe(
      Flag.withSchema(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 65535 }))),
      Flag.withMetavar("N"),
      Flag.withDescription("Port to listen on (default 34431; each runner on a machine needs its own)"),
      Flag.withDefault(34431)
    ),
    secretFile: optionalText("secret-file", "FILE", "The cluster secret, shared with the parent (a file only you can read; default: $FORKJOIN_CLUSTER_SECRET, else the one a parent on this machine sends)"),
    json: jsonFlag("Print one JSON line once joined: {\"runner\":\"HOST:PORT\",\"cluster\",\"capacity\",\"pid\",\"model\"} (model: whether it can run prompt tasks)")
  },
  function*(input) {
    const Runner = yield* Effect.promise(() => import("./Runner.ts"))
    yield* Runner.runner({
      cluster: input.cluster,
      capacity: input.capacity,
      host: input.host,
      port: input.port,
      secretFile: Option.getOrUndefined(input.secretFile),
      json: input.json
    })
  }
).pipe(
  Command.withDescription(
    "Join a cluster and run children until interrupted: 'forkjoin run PLAN --cluster URL' (same URL) sends each " +
      "child to a runner, which reads the run's files lazily from the parent, runs the child and sends its changeset " +
      "back; the parent alone writes the workspace. Runners on one machine can share a sqlite: file; runners on " +
      "several machines share a PostgreSQL database. A runner killed mid-child loses only that attempt: the child is " +
      "run again elsewhere, within its maxAttempts. With a cluster secret (--secret-file or FORKJOIN_CLUSTER_SECRET, the same on every runner and parent) " +
      "traffic between members is TLS keyed by it and a runner runs only attempts the parent signed; without one it listens on loopback only. " +
      "Model-driven (prompt) children use this runner's model: 'models' in the forkjoin.config.json of the folder it runs in, or " +
      "OPENAI_BASE_URL / ANTHROPIC_BASE_URL with their keys. The first stdout line is 'forkjoin runner: joined ...'. Exit 130 " +
      "when stopped (Ctrl-C, SIGTERM), 2 when it cannot start (storage unreachable, address refused, bad secret)."
  ),
  Command.withShortDescription("Join a cluster and run the children parents send to it")
)
