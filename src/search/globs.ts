import path from "node:path";
import ignore from "ignore";

/** `/`-separated path of `file` relative to `cwd` (`../…` or absolute when outside it). */
export function relativePath(cwd: string, file: string): string {
  return path.relative(cwd, file).split(path.sep).join("/");
}

/**
 * A gitignore-style glob as ripgrep's `--glob` reads it: without a `/` it matches a name at any
 * depth, with one it is anchored at the workspace; a leading `!` turns it into an exclusion.
 * Paths are `/`-separated and relative to the workspace.
 */
export function globMatcher(glob: string): (relPath: string) => boolean {
  const negated = glob.startsWith("!");
  const body = negated ? glob.slice(1) : glob;
  const ig = ignore({ allowRelativePaths: true }).add(body);
  return (relPath) => {
    const hit = relPath !== "" && ig.ignores(relPath);
    return negated ? !hit : hit;
  };
}

/** One directory's .gitignore rules; `base` is that directory relative to the workspace ("" at the top). */
export interface IgnoreLayer {
  base: string;
  rules: ReturnType<typeof ignore>;
}

/** Parses .gitignore text into a layer. */
export function ignoreLayer(base: string, text: string): IgnoreLayer {
  return { base, rules: ignore({ allowRelativePaths: true }).add(text) };
}

/**
 * Whether `relPath` is ignored under `layers` (outermost first): the deepest layer with an
 * opinion wins, as in git, so a nested `!pattern` can re-include what a parent ignored.
 */
export function isIgnored(layers: readonly IgnoreLayer[], relPath: string, isDir: boolean): boolean {
  for (let i = layers.length - 1; i >= 0; i--) {
    const layer = layers[i]!;
    let rel = layer.base === "" ? relPath : relPath.startsWith(`${layer.base}/`) ? relPath.slice(layer.base.length + 1) : undefined;
    if (rel === undefined || rel === "") continue;
    if (isDir) rel += "/";
    const verdict = layer.rules.test(rel);
    if (verdict.ignored) return true;
    if (verdict.unignored) return false;
  }
  return false;
}
