/**
 * Loading grammars for syntax-aware merges: `web-tree-sitter` with the `.wasm` grammar files the
 * official grammar packages ship (`tree-sitter-typescript`, `-javascript`, `-python`, `-json`).
 * Nothing is downloaded and nothing loads at import: the runtime and each grammar load on the
 * first request for them, once per process. Does not own what a tree means (`Syntax`) nor
 * merging (`StructuredMerge`).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { createRequire } from "node:module"
import type * as TreeSitter from "web-tree-sitter"
import { editsBetween } from "./internal/edits.ts"
import { Language, type SyntaxParser, type SyntaxTree } from "./Syntax.ts"

/**
 * A grammar that could not be loaded: which one, why, and the cause. A merge that meets it
 * falls back to the line merge and warns once, naming the grammar.
 *
 * @category errors
 * @since 0.1.0
 */
export class GrammarError extends Schema.TaggedError<GrammarError>()("GrammarError", {
  language: Language,
  detail: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return `the ${this.language} grammar could not be loaded: ${this.detail}`
  }
}

/**
 * Parsers by language, loaded on demand.
 *
 * @category services
 * @since 0.1.0
 */
export class Grammars extends Context.Service<Grammars, {
  /** The parser of `language`, loading the runtime and its grammar the first time. */
  readonly parser: (language: Language) => Effect.Effect<SyntaxParser, GrammarError>
  /** The languages loaded so far in this process, in load order (what a merge cost). */
  readonly loaded: Effect.Effect<ReadonlyArray<Language>>
}>()("forkjoin/merge/Grammars") {
  /** The grammars of the installed grammar packages. */
  static readonly layer: Layer.Layer<Grammars> = Layer.sync(Grammars, () => make(packagedGrammar))
  /** Grammars read from other files (tests of a missing or damaged grammar). */
  static readonly layerFrom = (locate: (language: Language) => string): Layer.Layer<Grammars> =>
    Layer.sync(Grammars, () => make(locate))
  /** No grammar at all: every request fails, so every merge is a line merge. */
  static readonly none: Layer.Layer<Grammars> = Layer.succeed(Grammars, {
    parser: (language) => Effect.fail(new GrammarError({ language, detail: "no grammars are available in this build" })),
    loaded: Effect.succeed([])
  })
}

// Resolved from this module's location: `import.meta.url` in ES modules, the bundle's
// `__filename` in the CLI's CommonJS bundle (where `import.meta` is empty).
const requireHere = (): NodeJS.Require => createRequire(import.meta.url ?? __filename)

const wasmFile: Record<Language, string> = {
  typescript: "tree-sitter-typescript/tree-sitter-typescript.wasm",
  tsx: "tree-sitter-typescript/tree-sitter-tsx.wasm",
  javascript: "tree-sitter-javascript/tree-sitter-javascript.wasm",
  python: "tree-sitter-python/tree-sitter-python.wasm",
  json: "tree-sitter-json/tree-sitter-json.wasm"
}

/** Where the installed grammar package keeps `language`'s `.wasm` file. */
const packagedGrammar = (language: Language): string => requireHere().resolve(wasmFile[language])

type Runtime = typeof TreeSitter

// The WebAssembly runtime, initialised once per process (shared by every `Grammars` instance).
let runtime: Promise<Runtime> | undefined
const loadRuntime = (): Promise<Runtime> => {
  if (runtime !== undefined) return runtime
  const starting = (async () => {
    const module = requireHere()("web-tree-sitter") as Runtime
    await module.Parser.init()
    return module
  })()
  runtime = starting
  // A failed start is not cached: the next request tries again.
  starting.catch(() => {
    if (runtime === starting) runtime = undefined
  })
  return starting
}

// What a tree parsed here keeps for a later incremental parse: its tree-sitter tree and text.
const sources = new WeakMap<SyntaxTree, { readonly tree: TreeSitter.Tree; readonly text: string; readonly parser: TreeSitter.Parser }>()

const parserOf = (ts: Runtime, language: Language, grammar: TreeSitter.Language): SyntaxParser => {
  const parser = new ts.Parser()
  parser.setLanguage(grammar)
  return {
    language,
    parse: (text, expired, previous) => {
      // Cancelled parses leave state behind that the next parse would resume from.
      parser.reset()
      const source = previous === undefined ? undefined : sources.get(previous)
      // Reused from a copy edited to the new text's coordinates; `previous` stays as it was.
      const old = source === undefined || source.parser !== parser ? null : source.tree.copy()
      if (old !== null) for (const edit of editsBetween(source!.text, text)) old.edit(new ts.Edit(edit))
      const options = expired === undefined ? undefined : { progressCallback: () => expired() }
      let tree = parser.parse(text, old, options)
      old?.delete()
      // Error recovery depends on which old nodes were reused: a tree with errors is parsed again
      // in full, so a merge never depends on which tree a parse started from.
      if (tree !== null && old !== null && tree.rootNode.hasError) {
        tree.delete()
        parser.reset()
        tree = parser.parse(text, null, options)
      }
      if (tree === null) return undefined
      // A disposed tree is no longer a source: a later parse given it parses in full.
      const parsed: SyntaxTree = { root: tree.rootNode, dispose: () => {
        sources.delete(parsed)
        tree.delete()
      } }
      sources.set(parsed, { tree, text, parser })
      return parsed
    }
  }
}

const make = (locate: (language: Language) => string): Grammars["Service"] => {
  const parsers = new Map<Language, Promise<SyntaxParser>>()
  const order: Array<Language> = []
  const load = (language: Language): Promise<SyntaxParser> => {
    const known = parsers.get(language)
    if (known !== undefined) return known
    const loading = (async () => {
      const ts = await loadRuntime()
      const grammar = await ts.Language.load(locate(language))
      order.push(language)
      return parserOf(ts, language, grammar)
    })()
    parsers.set(language, loading)
    // A failed load is retried by the next request rather than cached as a failure.
    loading.catch(() => parsers.delete(language))
    return loading
  }
  return {
    parser: (language) =>
      Effect.tryPromise({
        try: () => load(language),
        catch: (cause) =>
          new GrammarError({ language, detail: cause instanceof Error ? cause.message : String(cause), cause })
      }),
    loaded: Effect.sync(() => [...order])
  }
}
