import path from "node:path";
import { assertGlobWithinLimits, compileGlob } from "./globMatch.js";

/** `/`-separated path of `file` relative to `cwd` (`../…` or absolute when outside it). */
export function relativePath(cwd: string, file: string): string {
  return path.relative(cwd, file).split(path.sep).join("/");
}

/**
 * A gitignore-style glob as ripgrep's `--glob` reads it: without a `/` it matches a name at any
 * depth, with one it is anchored at the workspace; a trailing `/` matches directories only; a
 * path matches when it or one of its parent directories does; a leading `!` turns it into an
 * exclusion; `{a,b}` alternatives as in ripgrep; case-insensitive. Paths are `/`-separated and relative to the
 * workspace. Runs on the non-backtracking matcher (src/search/globMatch.ts); a glob over the
 * limits throws a `GlobLimitError` with a message for the model.
 */
export function globMatcher(glob: string): (relPath: string) => boolean {
  assertGlobWithinLimits(glob);
  const negated = glob.startsWith("!");
  let body = negated ? glob.slice(1) : glob;
  const dirOnly = body.endsWith("/");
  body = body.replace(/\/+$/, "");
  const anchored = body.includes("/");
  body = body.replace(/^\//, "");
  if (!anchored) body = `**/${body}`;
  const options = { globstar: "segment", escapes: true, ignoreCase: true } as const;
  const self = dirOnly ? undefined : compileGlob(body, options);
  // "P/**": the path lies inside a directory matching P.
  const inside = compileGlob(`${body}/**`, options);
  return (relPath) => {
    const hit = relPath !== "" && ((self?.test(relPath) ?? false) || inside.test(relPath));
    return negated ? !hit : hit;
  };
}
