/**
 * Parsers for the join's and the rollback's merges by syntax: which languages a set of changes
 * needs (files changed on both sides since), loaded through `Grammars` only for those, and the
 * per-file syntax context with its time budget on the effect `Clock`.
 */
import { type SyntaxContext, syntaxContext } from "@forkjoin/merge/FileMerge"
import { type GrammarError, Grammars } from "@forkjoin/merge/Grammars"
import { type Language, languageOfPath, type SyntaxParser } from "@forkjoin/merge/Syntax"
import type { RelativePath } from "@forkjoin/schema/Ids"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"

/**
 * The parsers of `wanted`, loaded through `Grammars` (none when no `Grammars` service is
 * provided), and the grammars that failed to load: their files are merged by lines.
 */
export const loadParsers = (wanted: ReadonlySet<Language>) =>
  Effect.gen(function*() {
    const loaded = new Map<Language, SyntaxParser>()
    const failed: Array<GrammarError> = []
    if (wanted.size === 0) return { loaded, failed }
    const grammars = yield* Effect.serviceOption(Grammars)
    if (Option.isNone(grammars)) return { loaded, failed }
    for (const language of wanted) {
      const parser = yield* grammars.value.parser(language).pipe(Effect.result)
      if (Result.isSuccess(parser)) loaded.set(language, parser.success)
      else failed.push(parser.failure)
    }
    return { loaded, failed }
  })

/**
 * The syntax context of a path for `planChild`/`planRollback`: the loaded parser of its
 * language, each file's budget starting when its merge asks (on the effect `Clock`, so tests
 * move time instead of waiting); `undefined` for a path without one.
 */
export const syntaxOf = (loaded: ReadonlyMap<Language, SyntaxParser>) =>
  Effect.gen(function*() {
    const clock = yield* Clock.Clock
    return (p: RelativePath): SyntaxContext | undefined => {
      const language = languageOfPath(p)
      const parser = language === undefined ? undefined : loaded.get(language)
      return parser === undefined ? undefined : syntaxContext(parser, () => clock.currentTimeMillisUnsafe())
    }
  })
