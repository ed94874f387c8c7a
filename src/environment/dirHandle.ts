/**
 * A directory held open by descriptor, for host-side code that walks, reads or rewrites a
 * workspace the agent may have made hostile (snapshots, restores, the tree and its ignore files,
 * search's ignore files, artifact archives): the one mechanism for host-side reads of workspace
 * files (`readRegular`, `readWorkspaceFile`). Every name is looked up *in this very
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
import { constants, type Dirent, type Stats } from "node:fs";
import { lstat, open, readdir, readlink, realpath, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { readAt } from "./readAt.js";
import { WorkbenchError } from "../workbenchError.js";

const HAS_PROC_FD = process.platform === "linux";
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const DIR_FLAGS = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | O_NOFOLLOW;
const FILE_FLAGS = constants.O_RDONLY | O_NOFOLLOW | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);

/** Raised when what was opened is not what was listed (swapped, or not a regular file). */
export class EntryChangedError extends WorkbenchError {
  readonly code = "ENTRY_CHANGED";
  override readonly name = "EntryChangedError";
  constructor(readonly entry: string) {
    super(`${entry} changed while it was being read`);
  }
}

/**
 * What {@link DirHandle.readRegular} found: the bytes of a regular file, or why nothing was read
 * (`special`: a FIFO, socket or device, never opened for reading; `too-large`: over the bound).
 */
export type RegularRead = { kind: "file"; data: Buffer; stats: Stats } | { kind: "special" } | { kind: "too-large"; size: number };

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

  /**
   * Opens `absDir` and checks that the descriptor is the directory `expectedReal` (its real path,
   * as the kernel reports it for the descriptor): a parent swapped for a symlink after it was
   * listed is caught here, not followed. Undefined when it is somewhere else; the open's error
   * (ENOENT, ENOTDIR, ELOOP for a symlink) otherwise.
   */
  static async openVerified(absDir: string, expectedReal: string): Promise<DirHandle | undefined> {
    const fh = await open(absDir, DIR_FLAGS);
    try {
      const real = HAS_PROC_FD ? await readlink(`/proc/self/fd/${fh.fd}`) : await realpath(absDir);
      if (real !== expectedReal) {
        await fh.close().catch(() => undefined);
        return undefined;
      }
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
    return DirHandle.held(fh, absDir).catch(() => undefined);
  }

  /** The entries of this directory (of the held directory itself, whatever its path now names). */
  list(): Promise<Dirent[]> {
    return readdir(this.via, { withFileTypes: true });
  }

  /**
   * Reads the regular file `name` in this directory, at most `maxBytes` of it: opened
   * `O_NOFOLLOW | O_NONBLOCK` (a symlink is refused, a FIFO never blocks the open), then judged on
   * the descriptor's own `fstat` — a FIFO, socket or device is closed unread (`special`), a file
   * over `maxBytes` is not read (`too-large`). With `listed`, the descriptor must also be that
   * object (else {@link EntryChangedError}). Undefined when it is gone; a symlink (ELOOP) throws
   * {@link EntryChangedError}.
   */
  async readRegular(name: string, maxBytes: number, listed?: { ino: number; dev: number }): Promise<RegularRead | undefined> {
    let fh: FileHandle;
    try {
      fh = await open(this.at(name), FILE_FLAGS);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ELOOP") throw new EntryChangedError(name);
      // A socket cannot be opened at all (ENXIO): it is listed, never read.
      if (code === "ENXIO" || code === "EOPNOTSUPP") return { kind: "special" };
      if (isNotThere(err)) return undefined;
      throw err;
    }
    try {
      const stats = await fh.stat();
      if (listed && (stats.ino !== listed.ino || stats.dev !== listed.dev)) throw new EntryChangedError(name);
      if (!stats.isFile()) return { kind: "special" };
      if (stats.size > maxBytes) return { kind: "too-large", size: stats.size };
      // Never more than the bound, even if the file grows while it is read.
      return { kind: "file", data: await readAt(fh, 0, Math.min(stats.size, maxBytes)), stats };
    } finally {
      await fh.close().catch(() => undefined);
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

/** A workspace root as the caller spells it (`dir`) and as it really is (`real`, symlinks resolved). */
export interface VerifiedRoot {
  dir: string;
  real: string;
}

/**
 * The one host-side read of a single workspace file by path (an ignore file, an artifact):
 * `relPath` (`/`-separated, below the root, no `.`/`..`) names it; its directory is opened
 * `O_NOFOLLOW` and must really be `root.real` plus that directory (a parent swapped for a
 * symlink is refused, not followed), then the file is read with {@link DirHandle.readRegular}.
 * Undefined when the file or its directory is missing or not where `relPath` says.
 */
export async function readWorkspaceFile(root: VerifiedRoot, relPath: string, maxBytes: number, listed?: { ino: number; dev: number }): Promise<RegularRead | undefined> {
  const parts = relPath.split("/");
  if (parts.some((p) => p === "" || p === "." || p === "..")) return undefined;
  const name = parts.pop()!;
  const dir = parts.length === 0 ? root.dir : path.join(root.dir, ...parts);
  const expected = parts.length === 0 ? root.real : path.join(root.real, ...parts);
  let held: DirHandle | undefined;
  try {
    held = await DirHandle.openVerified(dir, expected);
  } catch (err) {
    if (isNotThere(err)) return undefined;
    throw err;
  }
  return withDir(held, (d) => d.readRegular(name, maxBytes, listed));
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
