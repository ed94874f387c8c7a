import path from "node:path";
import { isAtomicTempPath } from "../environment/tempFiles.js";

/** Entry names never tracked or listed unless the caller says otherwise. */
export const DEFAULT_IGNORED_NAMES: readonly string[] = Object.freeze([".git", "node_modules"]);

/**
 * A predicate telling whether an absolute path lies in an ignored entry (any path segment
 * below `root` equals one of `names`), or names an atomic write's temp file. Segment-based so
 * `.github` is not mistaken for `.git`.
 */
export function ignoredPathMatcher(root: string, names: readonly string[]): (absPath: string) => boolean {
  const set = new Set(names);
  return (absPath) => {
    // An atomic write's temp file is not a change; its rename over the target is.
    if (isAtomicTempPath(absPath)) return true;
    if (set.size === 0) return false;
    const rel = path.relative(root, absPath);
    if (rel === "" || rel.startsWith("..")) return false;
    for (const segment of rel.split(path.sep)) if (set.has(segment)) return true;
    return false;
  };
}
