/**
 * The `forkjoin` command line (SPEC §9): assembles the commands (each in its own
 * `XCommand.ts`, its program in `X.ts`), provides the Node services and runs them, setting
 * the process exit code. Exit 0 applied, 1 rejected (workspace untouched), 2 usage error.
 *
 * @since 0.1.0
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import { CliConfig, CliError, Command, GlobalFlag } from "effect/cli"
import * as Effect from "effect/Effect"
import type { FileSystem } from "effect/FileSystem"
import * as Layer from "effect/Layer"
import type { Path } from "effect/Path"
import { ChildProcessSpawner, make as makeSpawner } from "effect/process/ChildProcessSpawner"
import { agent } from "./AgentCommand.ts"
import { agents } from "./AgentsCommand.ts"
import { apply } from "./ApplyCommand.ts"
import { conflicts } from "./ConflictsCommand.ts"
import { demo } from "./DemoCommand.ts"
import { config, gate, keygen } from "./GateCommand.ts"
import { gc } from "./GcCommand.ts"
import { history } from "./HistoryCommand.ts"
import { mcp } from "./McpCommand.ts"
import { mergeDriver } from "./MergeDriverCommand.ts"
import { mergeFile } from "./MergeFileCommand.ts"
import { processExitCode } from "./internal/errors.ts"
import { helpWidth, layerFormatter } from "./internal/helpWrap.ts"
import { layerPresenter, presentUsageErrors, unknownCommandInHelp, wantsJson } from "./internal/usage.ts"
import { probe } from "./ProbeCommand.ts"
import { repair } from "./RepairCommand.ts"
import { resolve } from "./ResolveCommand.ts"
import { rollback } from "./RollbackCommand.ts"
import { run } from "./RunCommand.ts"
import { runs } from "./RunsCommand.ts"
import { schema } from "./SchemaCommand.ts"
import { serve } from "./ServeCommand.ts"
import { status } from "./StatusCommand.ts"
import { token } from "./TokenCommand.ts"

// Inlined by scripts/build.mjs from the root package.json "version".
declare const __FORKJOIN_VERSION__: string
const VERSION = typeof __FORKJOIN_VERSION__ === "string" ? __FORKJOIN_VERSION__ : "0.0.0-dev"

const forkjoin = Command.make("forkjoin").pipe(
  Command.withDescription(
    "Parallel AI coding agents that edit one workspace safely: one native patch engine applies every change " +
      "all or nothing."
  ),
  Command.withSubcommands([apply, run, runs, conflicts, resolve, rollback, status, repair, gc, history, schema, probe, gate, keygen, config, serve, token, agent, agents, mcp, mergeFile, mergeDriver, demo])
)

// Built-ins kept: --help, --version, --completions. Dropped: --log-level (forkjoin logs nothing
// yet) and --wizard (interactive prompts do not fit a tool driven by agents and scripts).
const cliConfig = CliConfig.layer({ builtIns: [GlobalFlag.Help, GlobalFlag.Version, GlobalFlag.Completions] })

// A reader that stops early (`forkjoin demo | head`) closes the pipe: stop quietly, as other
// command-line tools do, instead of printing a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0)
    throw error
  })
}

// What Command.run reads from Stdio on Node; usage errors choose text or JSON from it too.
const argv = process.argv.slice(2)

// effect/cli answers `--help` before it reports an unknown command, with the help of the last
// command it knew (exit 0): report the unknown command instead, as without --help (exit 2).
const unknown = unknownCommandInHelp(forkjoin, argv)
const program = unknown === undefined
  ? Command.run(forkjoin, { version: VERSION })
  : presentUsageErrors(unknown.commandPath, [unknown.error], wantsJson(argv)).pipe(
    Effect.andThen(Effect.fail(new CliError.ShowHelp({ commandPath: unknown.commandPath, errors: [unknown.error] })))
  )

// effect/cli's environment names a process spawner, but forkjoin starts its children with
// node:child_process itself: Node's spawner (node:child_process, node:net: tens of ms) is loaded
// only if something spawns through it, not on every start.
const spawnerOnDemand = Layer.effect(ChildProcessSpawner)(Effect.gen(function*() {
  const services = yield* Effect.context<FileSystem | Path>()
  return makeSpawner((command) =>
    Effect.gen(function*() {
      const { layer } = yield* Effect.promise(() => import("@effect/platform-node/NodeChildProcessSpawner"))
      const spawner = yield* ChildProcessSpawner.pipe(Effect.provide(layer), Effect.provideContext(services))
      return yield* spawner.spawn(command)
    })
  )
}))

// @effect/platform-node's NodeServices.layer, with the spawner above.
const nodeServices = Layer.provideMerge(
  spawnerOnDemand,
  Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, NodeStdio.layer, NodeTerminal.layer)
)

program.pipe(
  Effect.provide([layerPresenter(argv), layerFormatter(helpWidth(process.stdout, process.env)), cliConfig]),
  Effect.provide(nodeServices),
  NodeRuntime.runMain({
    // Set `process.exitCode` instead of letting runMain call `process.exit`, which can cut off
    // stdout still draining into a pipe.
    teardown: (exit, onExit) => {
      const code = processExitCode(exit)
      process.exitCode = code
      // After Ctrl-C the runtime exits with the code it is given: keep 130 then.
      onExit(code === 130 ? code : 0)
    }
  })
)
