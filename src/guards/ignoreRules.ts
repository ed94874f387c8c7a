/**
 * The one gate between a workspace ignore file (possibly planted by the agent) and a matcher
 * compiled on the host. Every compiler of workspace ignore rules (the tree, the JS search engine)
 * takes its rules from here, so the limits are applied once. The matcher itself
 * (src/search/gitignoreMatch.ts) runs in time linear in the path length per rule; the length and
 * globstar limits bound the work per rule on top of that (the `ignore` package it replaced
 * backtracked polynomially in the path depth: `**∕a∕**∕a∕…∕z` with 8 globstars against a 40-deep
 * `a/a/…` chain blocked the event loop ~11.6 s per tree render). ripgrep applies every rule itself.
 */
import { LIMITS } from "./limits.js";

/**
 * The rules of `text` a host-side matcher may compile: lines within the length and globstar
 * limits (a UTF-8 byte-order mark at the start is dropped, as git does).
 */
export function boundedIgnoreRules(text: string): string[] {
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text;
  return body.split(/\r?\n/).filter((line) => line.length <= LIMITS.globMaxChars && line.split("**").length - 1 <= LIMITS.gitignoreMaxGlobstars);
}
