/**
 * A directory held open by descriptor, for host-side code that walks or rewrites a workspace the
 * agent may have made hostile (snapshots, restores). Every name is looked up *in this very
 * directory*, never through a path the agent can re-point: on Linux through `/proc/self/fd/N/name`
 * (the kernel resolves `/proc/self/fd/N` to the open directory, so only the last component is
 * looked up, and `O_NOFOLLOW` / `unlink` / `rename` never follow it — openat semantics without a
 * native addon). Elsewhere the verified real path stands in, which narrows the race to the moment
 * between check and use. Listings of whole trees: `listTree` in listWorker.ts (same rules, in a worker).
 *
 * What it refuses, by construction: descending through a symlink (`openDir` opens with
 * `O_DIRECTORY | O_NOFOLLOW`) and reading anything but the regular file that was listed
 * (`openFile` opens `O_NOFOLLOW | O_NONBLOCK`, then checks the descriptor's type and identity
 * against the listing's `lstat`).
 */
import { constants, type Stats } from "node:fs";
import { lstat, open, realpath, type FileHandle } from "node:fs/promises";

const HAS_PROC_FD = process.platform === "linux";
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const DIR_FLAGS = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | O_NOFOLLOW;
const FILE_FLAGS = constants.O_RDONLY | O_NOFOLLOW | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);

/** Raised when what was opened is not what was listed (swapped, or not a regular file). */
export class EntryChangedError extends Error {
  override readonly name = "EntryChangedError";
  constructor(readonly entry: string) {
    super(`${entry} changed while it was being read`);
  }
}

function isNotThere(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR" || code === "ELOOP" || code === "EMLINK";
}

export class DirHandle {
  private constructor(
    private readonly fh: FileHandle,
    /** A path that reaches this directory itself (see the module comment). */
    readonly via: string,
  ) {}

  /** Opens `absDir` (which must itself be a directory, not a symlink to one). */
  static async open(absDir: string): Promise<DirHandle> {
    const fh = await open(absDir, DIR_FLAGS);
    return DirHandle.held(fh, absDir);
  }

  private static async held(fh: FileHandle, p: string): Promise<DirHandle> {
    if (HAS_PROC_FD) return new DirHandle(fh, `/proc/self/fd/${fh.fd}`);
    try {
      const real = await realpath(p);
      const [a, b] = await Promise.all([fh.stat(), lstat(real)]);
      if (a.ino !== b.ino || a.dev !== b.dev) throw new EntryChangedError(p);
      return new DirHandle(fh, real);
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
  }

  /** The path of `name` inside this directory (a name, never a relative path with `/`). */
  at(name: string | Buffer): string | Buffer {
    return typeof name === "string" ? `${this.via}/${name}` : Buffer.concat([Buffer.from(`${this.via}/`), name]);
  }

  /** The subdirectory `name`, or undefined when it is missing, a symlink or not a directory. */
  async openDir(name: string): Promise<DirHandle | undefined> {
    let fh: FileHandle;
    try {
      fh = await open(this.at(name), DIR_FLAGS);
    } catch (err) {
      if (isNotThere(err)) return undefined;
      throw err;
    }
    return DirHandle.held(fh, this.at(name) as string);
  }

  /** `lstat` of `name` in this directory (undefined when it is gone). */
  async lstat(name: string): Promise<Stats | undefined> {
    try {
      return await lstat(this.at(name));
    } catch (err) {
      if (isNotThere(err)) return undefined;
      throw err;
    }
  }

  /**
   * Opens the regular file `name` for reading, only if it is still the object `listed` describes
   * (same device and inode, still a regular file). Never follows a link, never blocks on a FIFO.
   * Throws {@link EntryChangedError} otherwise; undefined when it is gone.
   */
  async openFile(name: string, listed: { ino: number; dev: number }): Promise<{ fh: FileHandle; stats: Stats } | undefined> {
    let fh: FileHandle;
    try {
      fh = await open(this.at(name), FILE_FLAGS);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ELOOP") throw new EntryChangedError(name);
      if (isNotThere(err)) return undefined;
      throw err;
    }
    try {
      const stats = await fh.stat();
      if (!stats.isFile() || stats.ino !== listed.ino || stats.dev !== listed.dev) throw new EntryChangedError(name);
      return { fh, stats };
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.fh.close().catch(() => undefined);
  }
}

/** Runs `fn` with the directory held, closing it afterwards. */
export async function withDir<T>(dir: DirHandle | undefined, fn: (d: DirHandle) => Promise<T>): Promise<T | undefined> {
  if (!dir) return undefined;
  try {
    return await fn(dir);
  } finally {
    await dir.close();
  }
}
