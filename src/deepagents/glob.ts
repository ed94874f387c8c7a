/**
 * Glob matching for the deepagents `glob`/`grep` tools: `*` and `?` within a segment, `**` across
 * segments, `{a,b}` alternatives, `[...]` classes. Runs on the non-backtracking matcher of
 * src/search/globMatch.ts; a pattern over the limits throws a `GlobLimitError` whose message
 * guides the model.
 */
import { assertGlobWithinLimits, compileGlob } from "../search/globMatch.js";

export { GlobLimitError } from "../search/globMatch.js";

/**
 * A matcher for `pattern` relative to a search base. With `anyDepth` (grep's file filter, like
 * ripgrep's `--glob`) a pattern without `/` matches the base name at any depth; otherwise (the
 * glob tool, like fast-glob) it matches the whole relative path, so `*.md` means top level only.
 */
export function globMatcher(pattern: string, anyDepth = false): (relPath: string) => boolean {
  assertGlobWithinLimits(pattern);
  const cleaned = pattern.replace(/\\/g, "/").replace(/^\.\//, "").replace(/^\/+/, "");
  const glob = compileGlob(cleaned, { globstar: "anywhere", escapes: false });
  if (anyDepth && !cleaned.includes("/")) return (rel) => glob.test(rel.slice(rel.lastIndexOf("/") + 1));
  return (rel) => glob.test(rel);
}
