/**
 * FileOperations over the native Node fs (fs/promises and file handles): no process is spawned
 * per call, unlike a shell backend. Reads stream in fixed-size chunks and stop once the
 * requested window is filled, so the first lines of a 1 GB file cost a few chunks.
 */
import { readAt } from "./readAt.js";
import type { Stats } from "node:fs";
import { constants } from "node:fs";
import { atomicTempName, whileWriting } from "./tempFiles.js";
import { chmod, lstat, mkdir, open, readdir, readFile, readlink, realpath, rename, rmdir, stat, unlink, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { LineIndexBuilder, type LineIndex, type LineStart } from "./lineIndex.js";
import { LineCounter, LineWindowCollector } from "./lineWindow.js";
import { OpenRefusedError, type DirEntry, type EntryType, type FileOperations, type FileStat, type OpenGuard, type OpenedInfo } from "./fileOperations.js";

/** Chunk size for streaming reads: large enough for few syscalls, small enough to stay light. */
const CHUNK_BYTES = 256 * 1024;

function entryType(s: Stats): EntryType {
  if (s.isFile()) return "file";
  if (s.isDirectory()) return "directory";
  if (s.isSymbolicLink()) return "symlink";
  return "other";
}

function toFileStat(s: Stats): FileStat {
  return { type: entryType(s), size: s.size, mtimeMs: s.mtimeMs, mode: s.mode & 0o7777 };
}

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/**
 * Whether an indexed start still describes the open file: the same inode, and a newline just
 * before the offset (a file rewritten with the same size and mtime fails this almost always).
 */
async function startStillFits(fh: FileHandle, start: LineStart): Promise<boolean> {
  if (start.byte <= 0) return start.byte === 0 && start.line === 1;
  if (start.ino !== undefined && (await fh.stat()).ino !== start.ino) return false;
  const one = Buffer.alloc(1);
  const { bytesRead } = await fh.read(one, 0, 1, start.byte - 1);
  return bytesRead === 1 && one[0] === 0x0a;
}

/** Open flags for reads: never block on a FIFO that has no writer, never follow into a tty. */
const READ_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);

/** Linux: `/proc/self/fd/N` names the object an open descriptor refers to, whatever happens to its path later. */
const HAS_PROC_FD = process.platform === "linux";
const DIR_FLAGS = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0);
// Refusal reasons are predicates; the caller names the path in front of them.
const OUTSIDE = "leads outside the workspace (through a symlink or a moved directory). Use a path inside the workspace.";
const CHANGED = "was replaced while it was being opened. Try again.";

function isInside(dir: string, candidate: string): boolean {
  const rel = path.relative(dir, candidate);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/**
 * The real path of what `fh` refers to: `readlink /proc/self/fd/N` on Linux; elsewhere the
 * real path of `p`, accepted only when it is the same inode as the descriptor (else refused).
 */
async function descriptorPath(fh: FileHandle, p: string, s: Stats): Promise<string> {
  if (HAS_PROC_FD) {
    const link = await readlink(`/proc/self/fd/${fh.fd}`).catch(() => undefined);
    if (link !== undefined && link.startsWith("/")) return link.endsWith(" (deleted)") ? link.slice(0, -10) : link;
  }
  const real = await realpath(p).catch(() => undefined);
  const again = real === undefined ? undefined : await stat(real).catch(() => undefined);
  if (real === undefined || !again || again.dev !== s.dev || again.ino !== s.ino) throw new OpenRefusedError(CHANGED);
  return real;
}

/** Verifies an open descriptor against `guard`; returns its real path. Throws {@link OpenRefusedError}. */
async function verifyOpened(fh: FileHandle, p: string, guard: OpenGuard): Promise<{ real: string; stats: Stats }> {
  const s = await fh.stat();
  const real = await descriptorPath(fh, p, s);
  if (guard.within !== undefined && !isInside(guard.within, real)) throw new OpenRefusedError(OUTSIDE);
  const opened: OpenedInfo = { type: entryType(s), nlink: s.nlink, size: s.size };
  const reason = guard.check?.(real, opened);
  if (reason) throw new OpenRefusedError(reason);
  return { real, stats: s };
}

/** Opens `p` and, with a guard, verifies the descriptor before anything is read from it. */
export async function openChecked(p: string, flags: number, guard: OpenGuard | undefined): Promise<FileHandle> {
  const fh = await open(p, flags);
  if (!guard) return fh;
  try {
    await verifyOpened(fh, p, guard);
    return fh;
  } catch (err) {
    await fh.close().catch(() => undefined);
    throw err;
  }
}

/**
 * A directory held open and verified: `via` is a path that reaches *that* directory even if its
 * name is swapped for a symlink afterwards (`/proc/self/fd/N` on Linux; elsewhere the verified
 * real path, which narrows the race to the moment between check and use).
 */
interface HeldDir {
  fh: FileHandle;
  real: string;
  via: string;
}

async function holdDir(dir: string, guard: OpenGuard): Promise<HeldDir> {
  const fh = await open(dir, DIR_FLAGS);
  try {
    const { real, stats } = await verifyOpened(fh, dir, { within: guard.within });
    if (!stats.isDirectory()) throw Object.assign(new Error(`${dir} is not a directory`), { code: "ENOTDIR" });
    const reason = guard.check?.(real, { type: "directory", nlink: stats.nlink, size: stats.size });
    if (reason) throw new OpenRefusedError(reason);
    return { fh, real, via: HAS_PROC_FD ? `/proc/self/fd/${fh.fd}` : real };
  } catch (err) {
    await fh.close().catch(() => undefined);
    throw err;
  }
}

/** Runs the guard's check on a name inside a held directory (the name itself, not where a link at it points). */
function checkName(held: HeldDir, name: string, guard: OpenGuard, type: OpenedInfo["type"]): void {
  const reason = guard.check?.(path.join(held.real, name), { type, nlink: 1, size: 0 });
  if (reason) throw new OpenRefusedError(reason);
}

export class LocalFileOperations implements FileOperations {
  readonly kind = "local";

  async stat(p: string): Promise<FileStat | null> {
    try {
      return toFileStat(await stat(p));
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async lstat(p: string): Promise<FileStat | null> {
    try {
      return toFileStat(await lstat(p));
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  realpath(p: string): Promise<string> {
    return realpath(p);
  }

  async readdir(p: string): Promise<DirEntry[]> {
    const entries = await readdir(p, { withFileTypes: true });
    return entries.map((e) => ({
      name: e.name,
      type: e.isFile() ? "file" : e.isDirectory() ? "directory" : e.isSymbolicLink() ? "symlink" : "other",
    }));
  }

  async readBytes(p: string, start: number, length: number, guard?: OpenGuard): Promise<Buffer> {
    const fh = await openChecked(p, READ_FLAGS, guard);
    try {
      return await readAt(fh, start, length);
    } finally {
      await fh.close();
    }
  }

  async readLines(
    p: string,
    window: { offset: number; limit: number; maxLineChars: number; start?: LineStart },
    guard?: OpenGuard,
  ): Promise<{ lines: string[]; cutLines: number[]; hasMore: boolean; totalLines?: number }> {
    const fh = await openChecked(p, READ_FLAGS, guard);
    try {
      const start = window.start && window.start.line <= window.offset && (await startStillFits(fh, window.start)) ? window.start : undefined;
      const collector = new LineWindowCollector(window, start?.line ?? 1);
      // Sequential reads (position null) unless starting at an offset: a pipe cannot seek.
      let position = start ? start.byte : null;
      const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
      for (;;) {
        const { bytesRead } = await fh.read(chunk, 0, CHUNK_BYTES, position);
        if (position !== null) position += bytesRead;
        if (bytesRead === 0) break;
        // A view of the bytes just read: stale bytes of an earlier, longer read are never seen.
        const done = collector.push(bytesRead === CHUNK_BYTES ? chunk : chunk.subarray(0, bytesRead));
        if (done) return done;
      }
      return collector.end();
    } finally {
      await fh.close();
    }
  }

  async indexLines(p: string, every: number, guard?: OpenGuard): Promise<LineIndex> {
    const fh = await openChecked(p, READ_FLAGS, guard);
    try {
      const { ino } = await fh.stat();
      const chunk = Buffer.allocUnsafe(1024 * 1024);
      const builder = new LineIndexBuilder(every);
      for (;;) {
        const { bytesRead } = await fh.read(chunk, 0, chunk.length, null);
        if (bytesRead === 0) break;
        builder.push(chunk.subarray(0, bytesRead));
      }
      return builder.finish(ino);
    } finally {
      await fh.close();
    }
  }

  async countLines(p: string, guard?: OpenGuard): Promise<number> {
    const fh = await openChecked(p, READ_FLAGS, guard);
    try {
      const chunk = Buffer.allocUnsafe(1024 * 1024);
      const counter = new LineCounter();
      for (;;) {
        const { bytesRead } = await fh.read(chunk, 0, chunk.length, null);
        if (bytesRead === 0) break;
        counter.push(chunk.subarray(0, bytesRead));
      }
      return counter.total;
    } finally {
      await fh.close();
    }
  }

  async readText(p: string, guard?: OpenGuard): Promise<string> {
    if (!guard) return readFile(p, "utf8");
    const fh = await openChecked(p, READ_FLAGS, guard);
    try {
      return await fh.readFile("utf8");
    } finally {
      await fh.close();
    }
  }

  async writeAtomic(p: string, data: string | Buffer, guard?: OpenGuard): Promise<{ bytesWritten: number; dirsCreated: string[] }> {
    if (guard) return this.writeAtomicGuarded(p, data, guard);
    const dir = path.dirname(p);
    const dirsCreated = await this.mkdirp(dir);
    const existing = await this.stat(p);
    const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
    const temp = path.join(dir, atomicTempName());
    const mode = existing?.type === "file" ? existing.mode : 0o644;
    await whileWriting(temp, async () => {
      const fh = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, mode);
      try {
        try {
          await fh.writeFile(bytes);
          await fh.sync();
        } finally {
          await fh.close();
        }
        // open() applies the umask; chmod makes the mode exactly the old file's.
        if (existing?.type === "file") await chmod(temp, existing.mode);
        await rename(temp, p);
      } catch (err) {
        await unlink(temp).catch(() => undefined);
        throw err;
      }
    });
    await this.syncDir(dir);
    return { bytesWritten: bytes.length, dirsCreated };
  }

  /**
   * The guarded write: parents created one verified directory at a time, then the temp file is
   * created with O_EXCL *through the held directory descriptor* and renamed there, so swapping
   * any directory on the path for a symlink cannot make the file land outside.
   */
  private async writeAtomicGuarded(p: string, data: string | Buffer, guard: OpenGuard): Promise<{ bytesWritten: number; dirsCreated: string[] }> {
    const dirsCreated = await this.mkdirp(path.dirname(p), guard);
    const held = await holdDir(path.dirname(p), guard);
    try {
      const name = path.basename(p);
      checkName(held, name, guard, "file");
      const target = path.join(held.via, name);
      const existing = await stat(target).catch(() => undefined);
      const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
      const tempName = atomicTempName();
      const temp = path.join(held.via, tempName);
      const mode = existing?.isFile() ? existing.mode & 0o7777 : 0o644;
      // Registered under its real path: cleanup lists directories by path, not through the held fd.
      await whileWriting(path.join(path.dirname(p), tempName), async () => {
        const fh = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), mode);
        try {
          try {
            await fh.writeFile(bytes);
            if (existing?.isFile()) await fh.chmod(existing.mode & 0o7777);
            await fh.sync();
          } finally {
            await fh.close();
          }
          await rename(temp, target);
        } catch (err) {
          await unlink(temp).catch(() => undefined);
          throw err;
        }
      });
      await held.fh.sync().catch(() => undefined);
      return { bytesWritten: bytes.length, dirsCreated };
    } finally {
      await held.fh.close();
    }
  }

  async remove(p: string, guard?: OpenGuard): Promise<void> {
    if (guard) {
      const held = await holdDir(path.dirname(p), guard);
      try {
        const name = path.basename(p);
        const target = path.join(held.via, name);
        const s = await lstat(target);
        if (s.isDirectory()) throw Object.assign(new Error(`${p} is a directory`), { code: "EISDIR" });
        checkName(held, name, guard, entryType(s));
        await unlink(target);
        return;
      } finally {
        await held.fh.close();
      }
    }
    const s = await lstat(p);
    if (s.isDirectory()) throw Object.assign(new Error(`${p} is a directory`), { code: "EISDIR" });
    await unlink(p);
  }

  async rename(from: string, to: string, guard?: OpenGuard): Promise<void> {
    await this.mkdirp(path.dirname(to), guard);
    if (!guard) {
      await rename(from, to);
      return;
    }
    const src = await holdDir(path.dirname(from), guard);
    try {
      const dest = await holdDir(path.dirname(to), guard);
      try {
        const s = await lstat(path.join(src.via, path.basename(from)));
        checkName(src, path.basename(from), guard, entryType(s));
        checkName(dest, path.basename(to), guard, entryType(s));
        await rename(path.join(src.via, path.basename(from)), path.join(dest.via, path.basename(to)));
      } finally {
        await dest.fh.close();
      }
    } finally {
      await src.fh.close();
    }
  }

  async removeEmptyDir(p: string): Promise<void> {
    // rmdir refuses a symlink (ENOTDIR) and a non-empty directory (ENOTEMPTY) by itself.
    await rmdir(p);
  }

  async mkdirp(p: string, guard?: OpenGuard): Promise<string[]> {
    if (guard) return this.mkdirpGuarded(p, guard);
    const first = await mkdir(p, { recursive: true });
    if (first === undefined) return [];
    // mkdir returns the first directory it created; the rest are its descendants down to `p`.
    const created: string[] = [];
    for (let d = p; ; d = path.dirname(d)) {
      created.unshift(d);
      if (d === first || path.dirname(d) === d) break;
    }
    return created;
  }

  /**
   * mkdir -p where each level is created through its verified parent's descriptor and then
   * opened and verified itself: a directory swapped for a symlink mid-way is refused, never followed out.
   */
  private async mkdirpGuarded(p: string, guard: OpenGuard): Promise<string[]> {
    const missing: string[] = [];
    let existing = p;
    while ((await stat(existing).catch(() => undefined)) === undefined) {
      const parent = path.dirname(existing);
      if (parent === existing) break;
      missing.unshift(path.basename(existing));
      existing = parent;
    }
    if (missing.length === 0) {
      const held = await holdDir(p, guard);
      await held.fh.close();
      return [];
    }
    const created: string[] = [];
    let held = await holdDir(existing, guard);
    let current = existing;
    try {
      for (const name of missing) {
        checkName(held, name, guard, "directory");
        const next = path.join(held.via, name);
        current = path.join(current, name);
        try {
          await mkdir(next);
          created.push(current);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
        }
        const child = await holdDir(next, guard);
        await held.fh.close();
        held = child;
      }
    } finally {
      await held.fh.close().catch(() => undefined);
    }
    return created;
  }

  /** Makes the rename durable; some filesystems refuse to fsync a directory, which is fine. */
  private async syncDir(dir: string): Promise<void> {
    try {
      const fh = await open(dir, constants.O_RDONLY);
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
    } catch {
      /* best effort */
    }
  }
}
