/**
 * The one gate between a workspace ignore file (possibly planted by the agent) and a matcher
 * compiled on the host. Every compiler of workspace ignore rules (the tree, the JS search engine)
 * takes its rules from here, so the complexity limit is applied once: a rule with many `**`
 * becomes a regex in the `ignore` package that backtracks polynomially in the path depth
 * (`**∕a∕**∕a∕…∕z` with 8 globstars against a 40-deep `a/a/…` chain blocked the event loop
 * ~11.6 s per tree render). ripgrep applies every rule itself (its globs do not backtrack).
 */
import { LIMITS } from "./limits.js";

/** The rules of `text` a host-side matcher may compile: lines within the length and globstar limits. */
export function boundedIgnoreRules(text: string): string[] {
  return text.split(/\r?\n/).filter((line) => line.length <= LIMITS.globMaxChars && line.split("**").length - 1 <= LIMITS.gitignoreMaxGlobstars);
}
