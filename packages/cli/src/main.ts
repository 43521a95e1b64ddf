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
import { processExitCode } from "./internal/errors.ts"
import { helpWidth, layerFormatter } from "./internal/helpWrap.ts"
import { layerPresenter, presentUsageErrors, unknownCommandInHelp, wantsJson } from "./internal/usage.ts"

// Inlined by scripts/build.mjs from the root package.json "version".
declare const __FORKJOIN_VERSION__: string
const VERSION = typeof __FORKJOIN_VERSION__ === "string" ? __FORKJOIN_VERSION__ : "0.0.0-dev"

// Every subcommand, in the order help lists them, with the module that defines it. A start
// loads only the definition of the subcommand it runs (evaluating all of them is a tenth of an
// apply); help, completions, a bare --version and anything unknown load them all.
const subcommands = {
  apply: () => import("./ApplyCommand.ts").then((m) => m.apply),
  run: () => import("./RunCommand.ts").then((m) => m.run),
  runs: () => import("./RunsCommand.ts").then((m) => m.runs),
  conflicts: () => import("./ConflictsCommand.ts").then((m) => m.conflicts),
  resolve: () => import("./ResolveCommand.ts").then((m) => m.resolve),
  rollback: () => import("./RollbackCommand.ts").then((m) => m.rollback),
  status: () => import("./StatusCommand.ts").then((m) => m.status),
  repair: () => import("./RepairCommand.ts").then((m) => m.repair),
  gc: () => import("./GcCommand.ts").then((m) => m.gc),
  history: () => import("./HistoryCommand.ts").then((m) => m.history),
  schema: () => import("./SchemaCommand.ts").then((m) => m.schema),
  probe: () => import("./ProbeCommand.ts").then((m) => m.probe),
  gate: () => import("./GateCommand.ts").then((m) => m.gate),
  keygen: () => import("./GateCommand.ts").then((m) => m.keygen),
  config: () => import("./GateCommand.ts").then((m) => m.config),
  serve: () => import("./ServeCommand.ts").then((m) => m.serve),
  runner: () => import("./RunnerCommand.ts").then((m) => m.runner),
  token: () => import("./TokenCommand.ts").then((m) => m.token),
  agent: () => import("./AgentCommand.ts").then((m) => m.agent),
  agents: () => import("./AgentsCommand.ts").then((m) => m.agents),
  mcp: () => import("./McpCommand.ts").then((m) => m.mcp),
  "merge-file": () => import("./MergeFileCommand.ts").then((m) => m.mergeFile),
  "merge-driver": () => import("./MergeDriverCommand.ts").then((m) => m.mergeDriver),
  demo: () => import("./DemoCommand.ts").then((m) => m.demo)
}

type Subcommand = Awaited<ReturnType<(typeof subcommands)[keyof typeof subcommands]>>

const isSubcommand = (name: string | undefined): name is keyof typeof subcommands =>
  name !== undefined && Object.hasOwn(subcommands, name)

/** The `forkjoin` command with the subcommands `argv` can reach: the one it names first, or all. */
const forkjoinFor = (argv: ReadonlyArray<string>) =>
  Effect.promise((): Promise<ReadonlyArray<Subcommand>> => {
    const first = argv[0]
    // The version needs no subcommand; anything else starting with a flag (help, completions) all.
    const names = isSubcommand(first)
      ? [first]
      : argv.length === 1 && (first === "--version" || first === "-v")
      ? []
      : Object.keys(subcommands).filter(isSubcommand)
    return Promise.all(names.map((name) => subcommands[name]()))
  }).pipe(
    Effect.map((commands) =>
      Command.make("forkjoin").pipe(
        Command.withDescription(
          "Parallel AI coding agents that edit one workspace safely: one native patch engine applies every change " +
            "all or nothing."
        ),
        Command.withSubcommands(commands)
      )
    )
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

const program = Effect.flatMap(forkjoinFor(argv), (forkjoin) => {
  // effect/cli answers `--help` before it reports an unknown command, with the help of the last
  // command it knew (exit 0): report the unknown command instead, as without --help (exit 2).
  const unknown = unknownCommandInHelp(forkjoin, argv)
  return unknown === undefined
    ? Command.run(forkjoin, { version: VERSION })
    : presentUsageErrors(unknown.commandPath, [unknown.error], wantsJson(argv)).pipe(
      Effect.andThen(Effect.fail(new CliError.ShowHelp({ commandPath: unknown.commandPath, errors: [unknown.error] })))
    )
})

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

// Crash tests and the merge probe start this CLI with a sealed fault (FaultChannel); a fault
// that is not sealed injects nothing. The channel's module loads only when a fault is set.
const withFaults = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  process.env["FORKJOIN_FAULT"] === undefined
    ? self
    : Effect.flatMap(Effect.promise(() => import("@forkjoin/engine/FaultChannel")), (channel) => channel.provide(process.env)(self))

program.pipe(
  withFaults,
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
