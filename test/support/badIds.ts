/** Ids an attacker sends where an id is expected, each with what the one id rule says is wrong with it. */
export const BAD_IDS: ReadonlyArray<readonly [label: string, id: string, problem: string]> = [
  ["../x", "../x", "it has a \"..\" segment"],
  ["empty", "", "it is empty"],
  ["a//b", "a//b", "it has an empty segment"],
  ["300 characters", "x".repeat(300), "it has 300 characters"],
  ["a NUL", "a\u0000b", "it contains \"\\u0000\""]
]
