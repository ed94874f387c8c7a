/**
 * Build-time check of the workspace root, so an operator's mistake stops the program at start
 * instead of reaching the model as "could not be accessed" on every call: the root must be a
 * directory this process can write (or create), and never a kernel pseudo-filesystem (`mkdir -p`
 * under /proc loops forever; /sys and /dev answer with permission errors the model cannot fix).
 * Runs once per factory, before any agent step, so the few synchronous `stat` calls block nothing.
 */
import { accessSync, constants, realpathSync, statSync, type Stats } from "node:fs";
import path from "node:path";
import { isLocalEnvironment, isLocalFileOperations } from "./locality.js";

/** Kernel pseudo-filesystems that can never hold a workspace. */
const PSEUDO_FILESYSTEMS = ["/proc", "/sys", "/dev"];

function pseudoRoot(p: string): string | undefined {
  return PSEUDO_FILESYSTEMS.find((root) => p === root || p.startsWith(`${root}/`));
}

/** `stat`, or `undefined` when nothing is there (ENOENT, or ENOTDIR: a file in the way). */
function statIfPresent(p: string): Stats | undefined {
  try {
    return statSync(p);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw err;
  }
}

/**
 * Throws a TypeError naming what to change when `rootDir` (absolute) cannot hold workspaces.
 * `local: false` (files on another host, behind an Environment): only the path itself is
 * judged, since this machine's disk says nothing about the remote one.
 */
export function assertUsableRootDir(rootDir: string, { local }: { local: boolean }): void {
  const refuse = (why: string) => {
    throw new TypeError(`rootDir ${rootDir} ${why}. Choose a writable directory for the workspaces (option rootDir or env WORKBENCH_ROOT).`);
  };
  const pseudo = pseudoRoot(path.posix.normalize(rootDir));
  if (pseudo) refuse(`is under ${pseudo}, a kernel pseudo-filesystem`);
  if (!local) return;

  // The deepest existing ancestor decides: it must be a directory we can write into.
  let existing = rootDir;
  let info = statIfPresent(existing);
  while (!info) {
    const parent = path.dirname(existing);
    if (parent === existing) break;
    existing = parent;
    info = statIfPresent(existing);
  }
  if (!info) return;
  let real = existing;
  try {
    real = realpathSync(existing);
  } catch {
    // Unresolvable (a loop): the directory test below reports it.
  }
  const realPseudo = pseudoRoot(real);
  if (realPseudo) refuse(`resolves to ${real}, under ${realPseudo}, a kernel pseudo-filesystem`);
  if (!info.isDirectory()) {
    refuse(existing === rootDir ? "is not a directory (it is a file)" : `cannot be created: ${existing} is a file, not a directory`);
  }
  try {
    accessSync(existing, constants.W_OK | constants.X_OK);
  } catch {
    refuse(existing === rootDir ? "is not writable by this process" : `cannot be created: ${existing} is not writable by this process`);
  }
}

/**
 * True when the workspaces are on this machine's disk: no `fileOps` or a local one, and no
 * `environment` or one whose commands run here (a provider function may return anything: not local).
 */
export function rootDirIsLocal(options: { environment?: unknown; fileOps?: { readonly kind: string } }): boolean {
  const env = options.environment;
  const envLocal = env === undefined || (typeof env === "object" && env !== null && isLocalEnvironment(env as { kind: string }));
  return envLocal && isLocalFileOperations(options.fileOps);
}
