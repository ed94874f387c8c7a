/**
 * A sandbox shows the thread directory at a neutral path (e.g. `/workspace`), never at its host
 * path. Text coming out of the sandbox names files by that path; the tool boundary turns it back
 * into the host path, so the one workspace rewriter (src/rewrite/paths.ts) gives the model the
 * same relative form the file tools use (`/workspace/src/a.ts` → `src/a.ts`, `/workspace` → `.`).
 */
import { isPathWordChar } from "./spellingFinder.js";

const SLASH = 47;

/**
 * `text` with every whole occurrence of `mountPath` (not inside a longer path or word: nothing
 * path-like right before it, and a `/`, the end or a non-path character right after) replaced by
 * `hostDir`. One `indexOf` scan: linear in the text.
 */
export function mountPathToHost(text: string, mountPath: string, hostDir: string): string {
  if (typeof text !== "string" || mountPath === hostDir || mountPath.length < 2) return text;
  let at = text.indexOf(mountPath);
  if (at < 0) return text;
  let out = "";
  let from = 0;
  while (at >= 0) {
    const before = at > 0 ? text.charCodeAt(at - 1) : -1;
    const end = at + mountPath.length;
    const after = end < text.length ? text.charCodeAt(end) : -1;
    const whole = (before < 0 || (before !== SLASH && !isPathWordChar(before))) && (after < 0 || after === SLASH || !isPathWordChar(after));
    if (whole) {
      out += text.slice(from, at) + hostDir;
      from = end;
    }
    at = text.indexOf(mountPath, end);
  }
  return out + text.slice(from);
}
