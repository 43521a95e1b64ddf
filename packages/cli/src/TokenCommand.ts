/**
 * The `forkjoin token` commands (`create`, `revoke`): flags and help, wired to `Token.ts`.
 *
 * @since 0.1.0
 */
import { ThreadIdInput } from "@forkjoin/schema/Ids"
import { Argument, Command, Flag } from "effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { command } from "./internal/command.ts"
import { jsonLineFlag, optionalText, workspaceFlags, workspaceInput } from "./internal/flags.ts"
import { writeStdout } from "./internal/output.ts"

const create = command(
  "create",
  {
    thread: Flag.String("thread").pipe(
      Flag.withSchema(ThreadIdInput),
      Flag.withMetavar("T"),
      Flag.withDescription("The thread the token is bound to: it sees that thread and the threads registered below it (required)")
    ),
    ttl: optionalText("ttl", "D", "Lifetime, like 30m, 24h, 7d (default 24h)"),
    ...workspaceFlags(),
    json: jsonLineFlag("{\"tokenId\",\"token\",\"thread\",\"expiresAt\"}")
  },
  function*(input) {
    const Token = yield* Effect.promise(() => import("./Token.ts"))
    const issued = yield* Token.create({
      ...workspaceInput(input),
      thread: input.thread,
      ttl: Option.getOrUndefined(input.ttl)
    })
    yield* writeStdout(input.json ? JSON.stringify(issued) + "\n" : Token.renderCreated(issued))
  },
  { group: "token" }
).pipe(
  Command.withDescription(
    "Issue a bearer token for 'forkjoin serve', bound to one thread. The token is printed once, alone on the last " +
      "line of stdout; the database keeps only its hash. Exit 0, 1 on a failure, 2 usage error."
  ),
  Command.withShortDescription("Issue a bearer token bound to a thread")
)

const revoke = command(
  "revoke",
  {
    tokenId: Argument.String("TOKEN_ID").pipe(Argument.withDescription("The token's id (printed by 'token create')")),
    ...workspaceFlags(),
    json: jsonLineFlag("{\"ok\":true,\"tokenId\",\"thread\",\"revokedAt\"}")
  },
  function*(input) {
    const Token = yield* Effect.promise(() => import("./Token.ts"))
    const revoked = yield* Token.revoke({ ...workspaceInput(input), tokenId: input.tokenId })
    yield* writeStdout(
      input.json ? JSON.stringify({ ok: true, ...revoked }) + "\n" : `revoked token ${revoked.tokenId} (thread '${revoked.thread}')\n`
    )
  },
  { group: "token" }
).pipe(
  Command.withDescription("Revoke a token: a running gateway refuses it from its next request. Exit 0, 1 unknown token, 2 usage error."),
  Command.withShortDescription("Revoke a bearer token")
)

/**
 * `forkjoin token create --thread T [--ttl D] --workspace DIR | token revoke TOKEN_ID --workspace DIR`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const token = Command.make("token").pipe(
  Command.withDescription("Bearer tokens for 'forkjoin serve', each bound to one thread."),
  Command.withShortDescription("Issue or revoke gateway tokens"),
  Command.withSubcommands([create, revoke])
)
