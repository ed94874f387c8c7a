/**
 * What `/proc/self/mountinfo` inside the sandbox shows of a bind-mounted thread directory: the
 * kernel prints a mount's root as its path *within the filesystem that holds it* (field 4), so
 * a workspace bound at `/workspace` still names, say, `/srv/app/data/<thread>` there — unless
 * the workspace root is a filesystem (a mount) of its own, when only `/<thread>` shows. No mount
 * option hides it (bubblewrap 0.8 has no overlay), so the sandbox says so once, with the remedy.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";

/** mountinfo escapes space, tab, newline and backslash in paths as `\ooo`. */
function unescapeField(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/**
 * The path a bind mount of `dir` (a real, absolute path) shows as its root in a mountinfo listing
 * `text`: the mount holding `dir` (the longest mount point that contains it; the later of equal
 * ones, which covers the earlier), its root, then `dir` below its mount point. Undefined when no
 * line holds it.
 */
export function boundRootShown(text: string, dir: string): string | undefined {
  let best: { point: string; root: string } | undefined;
  for (const line of text.split("\n")) {
    const fields = line.split(" ");
    if (fields.length < 5) continue;
    const root = unescapeField(fields[3]!);
    const point = unescapeField(fields[4]!);
    const inside = point === "/" || dir === point || dir.startsWith(`${point}/`);
    if (inside && (!best || point.length >= best.point.length)) best = { point, root };
  }
  if (!best) return undefined;
  const below = best.point === "/" ? dir : dir.slice(best.point.length);
  return path.posix.join(best.root, below || "/");
}

/**
 * The host path a sandbox of a thread under `rootDir` (real path) would show in its mountinfo,
 * or undefined when it shows nothing of the host's layout (`rootDir` is the root of its mount, so
 * a thread shows as `/<thread_id>`) or when this host has no mountinfo to read.
 */
export async function mountinfoTrace(rootDir: string, mountinfoPath = "/proc/self/mountinfo"): Promise<string | undefined> {
  const text = await readFile(mountinfoPath, "utf8").catch(() => undefined);
  if (text === undefined) return undefined;
  const shown = boundRootShown(text, rootDir);
  return shown === undefined || shown === "/" ? undefined : shown;
}
