/**
 * The one rule for the temporary files of atomic writes (write to a temp file in the target's
 * directory, then rename over the target). A writer killed between the two leaves its temp file
 * behind: every listing (tree, search, ls/glob, read_file's suggestions, the change trackers)
 * hides these names, and {@link removeStaleTempFiles} deletes the ones nobody is writing.
 */
import { randomBytes } from "node:crypto";
import { lstat, unlink } from "node:fs/promises";
import path from "node:path";

/** Every atomic-write temp file starts with this (local, SFTP, and the shell's `mktemp`). */
export const ATOMIC_TEMP_PREFIX = ".wb-write.";

/** `mktemp` template for writers that run in a shell (POSIX `mktemp` needs trailing X's). */
export const SHELL_TEMP_TEMPLATE = `${ATOMIC_TEMP_PREFIX}XXXXXXXX`;

/**
 * A temp file this old (by mtime: a writer that is still writing keeps it fresh) and not being
 * written by this process is a leftover. 60 s.
 */
export const STALE_TEMP_MS = 60_000;

// Names written by earlier versions: `.<target>.<pid>.<12 hex>.tmp` (local), `.<target>.<12 hex>.tmp` (SFTP).
const LEGACY_TEMP = /^\..+\.(?:\d+\.)?[0-9a-f]{12}\.tmp$/;

/** Temp files this process is writing right now (absolute local paths). */
const inFlight = new Set<string>();

/** A fresh temp name for a write in one directory: `.wb-write.<pid>.<12 hex>`. */
export function atomicTempName(): string {
  return `${ATOMIC_TEMP_PREFIX}${process.pid}.${randomBytes(6).toString("hex")}`;
}

/** True when `name` (a single entry name) is the temp file of an atomic write. */
export function isAtomicTempName(name: string): boolean {
  return name.startsWith(ATOMIC_TEMP_PREFIX) || LEGACY_TEMP.test(name);
}

/** True when the last segment of `p` is an atomic-write temp name. */
export function isAtomicTempPath(p: string): boolean {
  return isAtomicTempName(path.basename(p));
}

/** Marks `temp` as being written by this process until `done` settles (cleanup leaves it alone). */
export async function whileWriting<T>(temp: string, done: () => Promise<T>): Promise<T> {
  const key = path.resolve(temp);
  inFlight.add(key);
  try {
    return await done();
  } finally {
    inFlight.delete(key);
  }
}

/** True when this process is writing `temp` right now. */
export function isBeingWritten(temp: string): boolean {
  return inFlight.has(path.resolve(temp));
}

/** What {@link removeStaleTempFiles} needs of a file system (any FileOperations has it). */
export interface TempCleanupOps {
  lstat(p: string): Promise<{ type: string; mtimeMs: number } | null | undefined>;
  remove(p: string): Promise<void>;
}

const LOCAL_OPS: TempCleanupOps = {
  async lstat(p) {
    const s = await lstat(p).catch(() => undefined);
    return s ? { type: s.isFile() ? "file" : "other", mtimeMs: s.mtimeMs } : undefined;
  },
  remove: (p) => unlink(p),
};

/**
 * Deletes the stale atomic-write temp files among `names` (entries of `dir`): regular files,
 * older than `olderThanMs` (default {@link STALE_TEMP_MS}) and not being written by this process.
 * Never throws; returns the names it removed.
 */
export async function removeStaleTempFiles(
  dir: string,
  names: Iterable<string>,
  options: { ops?: TempCleanupOps; olderThanMs?: number; now?: number } = {},
): Promise<string[]> {
  const ops = options.ops ?? LOCAL_OPS;
  const cutoff = (options.now ?? Date.now()) - (options.olderThanMs ?? STALE_TEMP_MS);
  const removed: string[] = [];
  for (const name of names) {
    if (!isAtomicTempName(name)) continue;
    const p = path.join(dir, name);
    if (isBeingWritten(p)) continue;
    try {
      const s = await ops.lstat(p);
      if (!s || s.type !== "file" || !(s.mtimeMs < cutoff)) continue;
      await ops.remove(p);
      removed.push(name);
    } catch {
      // Gone already, or not ours to remove: the listing hides it either way.
    }
  }
  return removed;
}
