/**
 * Paths as the screen judges them: lexically normalised, `/proc/<pid>/root` and `/proc/<pid>/cwd`
 * followed (they are the root and the working directory of that process), relative paths
 * resolved against a `cd` earlier in the line, and classified as system, home or device.
 */
import { BLOCK_DEVICE, MAYBE_EMPTY_VAR, ROOT_DIRS, SYSTEM_TREE, SYSTEM_WRITE, UNKNOWN } from "./vocabulary.js";

/**
 * `target` as the command sees it: relative paths joined to `cwd` (where a `cd` went; unset =
 * the workspace), `/proc/self/root/x` as `/x`, `/proc/self/cwd/x` as the relative `x`. The
 * aliases are followed segment by segment, as the kernel does (`/proc/1/root/..` is `/`).
 */
export function resolvePath(target: string, cwd?: string): string {
  let t = target;
  const t0 = target.replace(MAYBE_EMPTY_VAR, "");
  if (t0.startsWith("/") && t0.includes("/proc/")) {
    let out: string[] = [];
    let relative = false;
    for (const seg of t0.split("/")) {
      if (seg === "" || seg === ".") continue;
      if (seg === "..") {
        if (out.length && out[out.length - 1] !== "..") out.pop();
        else if (relative) out.push("..");
        continue;
      }
      out.push(seg);
      const alias = !relative && out[0] === "proc" && ((out.length === 3 && (out[2] === "root" || out[2] === "cwd")) || (out.length === 5 && out[2] === "task" && (out[4] === "root" || out[4] === "cwd")));
      if (alias) {
        relative = out[out.length - 1] === "cwd";
        out = [];
      }
    }
    t = relative ? out.join("/") || "." : "/" + out.join("/");
  }
  if (cwd !== undefined && !/^[/~]/.test(t) && !t.startsWith(UNKNOWN) && !t.startsWith("-")) return joinPath(cwd, t);
  return t;
}

/**
 * Lexically normalised absolute or home path (`~` kept as the first segment), or undefined for
 * relative paths and unknown prefixes. A possibly-empty variable counts as empty.
 */
export function normalisePath(target: string): string | undefined {
  if (target.startsWith(UNKNOWN)) return undefined;
  const t = target.replace(MAYBE_EMPTY_VAR, "");
  if (!t.startsWith("/") && !t.startsWith("~")) return undefined;
  const out: string[] = [];
  const segs = t.split("/");
  const home = segs[0]!.startsWith("~") ? segs.shift()! : undefined;
  for (const s of segs) {
    if (s === "" || s === ".") continue;
    if (s === "..") out.pop();
    else out.push(s);
  }
  return (home ?? "") + "/" + out.join("/");
}

/** Why writing `target` (already resolved) is out of bounds, as the end of a sentence, or undefined. */
export function writeTargetProblem(target: string): string | undefined {
  const p = normalisePath(target);
  if (!p) return undefined;
  if (BLOCK_DEVICE.test(p)) return "writes straight to a disk or memory device and can destroy the system: write to a file in the workspace instead";
  if (SYSTEM_WRITE.test(p)) return "writes system configuration outside the workspace: write to a file in the workspace instead";
  return undefined;
}

/** What deleting or re-owning `target` (already resolved) would hit, when that is the system or a home directory. */
export function criticalTarget(target: string): string | undefined {
  const rel = target.replace(MAYBE_EMPTY_VAR, "");
  if (!target.startsWith(UNKNOWN) && !rel.startsWith("/") && !rel.startsWith("~")) {
    const segs: string[] = [];
    for (const seg of rel.split("/")) {
      if (seg === "" || seg === ".") continue;
      if (seg === ".." && segs.length > 0 && segs[segs.length - 1] !== "..") segs.pop();
      else segs.push(seg);
    }
    if (segs.length > 0 && segs[0] === ".." && segs.every((s) => s === ".." || /^[*?]+$/.test(s))) return "directories above the workspace";
    return undefined;
  }
  const p = normalisePath(target);
  if (p === undefined) return undefined;
  const segs = p.split("/").filter(Boolean);
  const glob = (s: string) => /[*?[]/.test(s);
  if (p.startsWith("~")) {
    const [, ...rest] = segs;
    if (rest.length === 0 || (rest.length === 1 && glob(rest[0]!) && /^\.?[*?[]/.test(rest[0]!))) return "the home directory";
    return undefined;
  }
  if (segs.length === 0) return "the whole filesystem";
  if (glob(segs[0]!)) return "every top-level directory of the system";
  if (SYSTEM_TREE.test(p)) return segs.length === 1 ? "a system directory" : "system files";
  if (!ROOT_DIRS.has(segs[0]!)) return undefined;
  if (segs.length === 1 || (segs.length === 2 && glob(segs[1]!) && !/[A-Za-z0-9]{3}/.test(segs[1]!))) return "a system directory";
  if ((segs[0] === "home" || segs[0] === "Users") && segs.length === 2) return "a home directory";
  return undefined;
}

export function joinPath(dir: string, rel: string): string {
  const r = rel.replace(/^(?:\.\/)+/, "");
  return r === "." || r === "" ? dir : `${dir.replace(/\/+$/, "")}/${r}`;
}

/** Where `cd ARG` goes from `cwd` (undefined = back to the workspace, for `cd -`). */
export function changeDirectory(cwd: string | undefined, to: string): string | undefined {
  if (to === "-") return undefined;
  const resolved = resolvePath(to);
  return cwd !== undefined && !/^[/~]/.test(resolved) ? joinPath(cwd, resolved) : resolved;
}

export function commandName(word: string): string {
  const i = word.lastIndexOf("/");
  return i >= 0 ? word.slice(i + 1) : word;
}

/** A word for a message: variables shown as `$name`, unknown text as `…`. */
export function show(arg: string): string {
  return arg.replace(MAYBE_EMPTY_VAR, "$$$1").replaceAll(UNKNOWN, "…");
}

export function emptyHint(arg: string): string {
  const name = new RegExp(MAYBE_EMPTY_VAR.source).exec(arg)?.[1];
  return name === undefined ? "" : ` if $${name} is empty (guard it: \${${name}:?})`;
}

export function fileKey(path: string): string {
  return path.replace(/^(?:\.\/)+/, "");
}
